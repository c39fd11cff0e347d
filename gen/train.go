package gen

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/convgen/convgen/problem"
)

// Train is the binding of a training package (convgen -train): one
// problem's three ops, each its own tuned kernel, behind one Kernel type
// whose Forward, BackwardData and BackwardFilter launch them.
type Train struct {
	Package    string // Go package name
	Command    string // exact command that regenerates the package
	FilePrefix string // as Binding.FilePrefix
	// Ops are the bindings of op fprop, dgrad and wgrad, in this order
	// (TrainOps), of one problem: the same shape, precision and layout,
	// no epilogue chain, no output precision, tuned (not Untuned). Their
	// Package, Command and FilePrefix are the Train's.
	Ops [3]Binding
	// Devices are the GPU models the ops were tuned on, in the order of
	// Ops ("" where not known); when they differ (MixedDevices), the
	// package's doc says so.
	Devices [3]string
}

// MixedDevices describes devices, the GPU models the ops of a training
// package were tuned on (in TrainOps' order), when they are not all the
// same: the ops of each model, e.g. "fprop and wgrad on NVIDIA H200,
// dgrad on NVIDIA H100 80GB HBM3"; "" when they are (or none is known).
func MixedDevices(devices [3]string) string {
	var models []string
	opsOf := map[string][]string{}
	for i, d := range devices {
		if d == "" {
			continue
		}
		if _, ok := opsOf[d]; !ok {
			models = append(models, d)
		}
		opsOf[d] = append(opsOf[d], TrainOps()[i].String())
	}
	if len(models) < 2 {
		return ""
	}
	var parts []string
	for _, d := range models {
		ops := opsOf[d]
		list := strings.Join(ops, ", ")
		if n := len(ops); n > 1 {
			list = strings.Join(ops[:n-1], ", ") + " and " + ops[n-1]
		}
		parts = append(parts, list+" on "+d)
	}
	return strings.Join(parts, ", ")
}

// TrainOps are the ops of a training package, in the order of Train.Ops.
func TrainOps() [3]problem.Op {
	return [3]problem.Op{problem.OpFprop, problem.OpDgrad, problem.OpWgrad}
}

// trainSpec is a validated Train: one spec per op, whose cubinName and
// ptxName are the op's own files.
type trainSpec struct {
	Train
	ops [3]*spec
	// ptxNames are the file names of the ops' embedded PTX.
	ptxNames [3]string
}

// fprop is the forward op's spec, for what the three share (package,
// command, shape, precision, layout).
func (t *trainSpec) fprop() *spec { return t.ops[0] }

// TrainFiles renders every file of a training package: name → content.
// Each op's kernel is embedded as its own CUBIN (kernel_OP_ARCH.cubin) and
// PTX (kernel_OP.ptx), with the loading rules of a one-op package (Files).
func TrainFiles(t Train) (map[string][]byte, error) {
	ts, err := newTrainSpec(t)
	if err != nil {
		return nil, err
	}
	files, err := renderFiles(ts, t.FilePrefix, []fileGen[*trainSpec]{
		{docFile, genTrainDoc},
		{shapeFile, genTrainShape},
		{kernelFile, genTrainKernel},
		{kernelTestFile, genTrainTest},
		{shapeTestFile, genTrainShapeTest},
	}, 6)
	if err != nil {
		return nil, err
	}
	for i, s := range ts.ops {
		files[s.cubinName] = bytes.Clone(s.CUBIN)
		files[ts.ptxNames[i]] = []byte(s.ptx)
	}
	return files, nil
}

// newTrainSpec checks t: each op's binding as Files does, and that they
// are the three ops of one problem that a training package can carry.
func newTrainSpec(t Train) (*trainSpec, error) {
	if err := checkFilePrefix(t.FilePrefix); err != nil {
		return nil, err
	}
	ts := &trainSpec{Train: t}
	ops := TrainOps()
	first := t.Ops[0].Problem
	for i, b := range t.Ops {
		op := ops[i]
		p := b.Problem.Canonical()
		switch {
		case p.Op != op:
			return nil, fmt.Errorf("gen: training package: binding %d is of op %s, want %s", i, p.Op, op)
		case len(p.Epilogue) > 0:
			return nil, fmt.Errorf("gen: training package: op %s: epilogue %q: %w", op, p.Epilogue, problem.ErrEpilogueOp)
		case p.OutDiffers():
			return nil, fmt.Errorf("gen: training package: op %s: output precision %s: %w", op, p.OutPrecision, problem.ErrOutPrecisionOp)
		case b.Untuned:
			return nil, fmt.Errorf("gen: training package: op %s: an untuned binding (a training package carries tuned kernels)", op)
		case p.Shape != first.Shape || p.Precision != first.Precision || p.Layout != first.Layout:
			return nil, fmt.Errorf("gen: training package: op %s is of %s %s %s, op fprop of %s %s %s", op,
				p.Shape, p.Precision, p.Layout, first.Shape, first.Precision, first.Layout)
		}
		b.Package, b.Command, b.FilePrefix = t.Package, t.Command, t.FilePrefix
		s, err := newSpec(b)
		if err != nil {
			return nil, fmt.Errorf("op %s: %w", op, err)
		}
		s.cubinName = t.FilePrefix + "kernel_" + op.String() + "_" + s.Arch + ".cubin"
		ts.ops[i], ts.ptxNames[i] = s, t.FilePrefix+"kernel_"+op.String()+".ptx"
	}
	return ts, nil
}

// opName is op's name as the start of a Go identifier: Fprop, Dgrad, Wgrad.
func opName(op problem.Op) string {
	n := op.String()
	return strings.ToUpper(n[:1]) + n[1:]
}

// The identifiers of an op's declarations in a training package.
func archConst(op problem.Op) string   { return opName(op) + "TunedArch" }
func kernelConst(op problem.Op) string { return opName(op) + "KernelName" }
func specVar(op problem.Op) string     { return op.String() + "Spec" }

// methodOf is the Kernel method that runs op.
func methodOf(op problem.Op) string {
	if op == problem.OpFprop {
		return "Forward"
	}
	return gradMethod(op)
}

// genTrainDoc renders a training package's doc.go: the package comment is
// its manual, the three ops' formulas, tensors and calls.
func genTrainDoc(t *trainSpec) *jen.File {
	fp := t.fprop()
	f := fp.newFile("")
	sh := fp.shape
	in, filter, out := layoutDoc(fp.Problem.Layout)
	input, filt, bias, output := sh.Elements()
	var b strings.Builder
	para, code := docWriters(&b)
	para("Package %s runs the three CUDA kernels of training one convolution layer, which convgen generated and tuned, each on its own, for a single problem fixed when the package was generated: the forward convolution (Forward), the input gradient (BackwardData) and the filter and bias gradients (BackwardFilter).", t.Package)
	header := []string{
		"shape      " + sh.String(),
		fmt.Sprintf("precision  %s: %s, %s data", fp.Problem.Precision, fp.elem.arith, fp.elem.data),
		fmt.Sprintf("layout     %s: input %s, filter %s, output %s", fp.Problem.Layout, in, filter, out),
	}
	for i, s := range t.ops {
		op := TrainOps()[i]
		header = append(header, fmt.Sprintf("%-10s %s: %s, grid %dx%dx%d, block %dx%dx%d, %d bytes of dynamic shared memory",
			op, methodOf(op), s.Kernel, s.Grid[0], s.Grid[1], s.Grid[2], s.Block[0], s.Block[1], s.Block[2], s.SharedBytes))
		header = append(header, "           "+strings.TrimSuffix(s.Summary, "."))
	}
	code(header...)
	if mixed := MixedDevices(t.Devices); mixed != "" {
		para("The ops were tuned on different GPU models: %s. Each kernel is the winner of its own op's search on its own GPU: on the others it runs as Load loads it (see Usage), but was not chosen there, and the ops' timings are of different GPUs. Tuning the three on one GPU (convgen -train there), or replaying one GPU's records (-device), makes a package of one GPU.", mixed)
	}

	b.WriteString("# What it computes\n\n")
	para("Forward computes the forward 2-D convolution (cross-correlation, as in cuDNN and PyTorch) of an N×C×H×W = %d×%d×%d×%d input X (in) with a K×(C/Groups)×R×S = %d×%d×%d×%d filter W into an N×K×P×Q = %d×%d×%d×%d output Y (out), with the constants of this package:",
		sh.N, sh.C, sh.H, sh.W, sh.K, sh.C/sh.Groups, sh.R, sh.S, sh.N, sh.K, sh.P(), sh.Q())
	code(forwardFormula(sh, nil)...)
	para("%s", forwardSum(sh))
	para("Given dY, the gradient of a loss with respect to Y, BackwardData computes the input gradient dX = conv^T(dY, W):")
	code(dgradFormula()...)
	para("and BackwardFilter the filter gradient dW, and with a bias the bias gradient dBias in FP32, deterministically (the same inputs give the same bits):")
	code(wgradFormula()...)
	para("Every gradient is written whole, not accumulated into its array. Arithmetic: %s.", fp.elem.arith)
	if !sh.Bias {
		para("The problem has no bias: Forward ignores its bias argument and BackwardFilter its dBias argument (pass 0).")
	}

	b.WriteString("# Memory\n\n")
	para("Every tensor is one dense array in device memory, in the layout's order, outermost index first, of %s except dBias:", fp.elem.memDoc)
	mem := []string{
		fmt.Sprintf("X, dX   %s  InputElems  = %d", in, input),
		fmt.Sprintf("W, dW   %s  FilterElems = %d", filter, filt),
	}
	if sh.Bias {
		mem = append(mem, fmt.Sprintf("bias    K     BiasElems   = %d", bias),
			fmt.Sprintf("dBias   K     BiasElems   = %d  float32", bias))
	}
	code(append(mem, fmt.Sprintf("Y, dY   %s  OutputElems = %d", out, output))...)

	b.WriteString("# Usage\n\n")
	para("The kernels run in builds with the cuda build tag (cgo, cuda.h, libcuda); without it Load returns an error wrapping convrt.ErrNoCUDA. With gorgonia.org/cu, on a locked OS thread with a CUDA context current:")
	argBias, argDBias := "convrt.PtrOf(bias)", "convrt.PtrOf(dBias)"
	if !sh.Bias {
		argBias, argDBias = "0", "0"
	}
	code(
		"k, err := "+t.Package+".Load() // the three kernels; check err, defer k.Close()",
		"err = k.Forward(convrt.StreamOf(stream), convrt.PtrOf(y), convrt.PtrOf(x), convrt.PtrOf(w), "+argBias+")",
		"err = k.BackwardData(convrt.StreamOf(stream), convrt.PtrOf(dY), convrt.PtrOf(w), convrt.PtrOf(dX))",
		"err = k.BackwardFilter(convrt.StreamOf(stream), convrt.PtrOf(x), convrt.PtrOf(dY), convrt.PtrOf(dW), "+argDBias+")",
		"// every address 16-byte aligned; ... stream.Synchronize(): the results are ready",
	)
	para("Each method only enqueues its op's kernel; a Kernel is safe for concurrent use (package convrt states the contract). Load loads each op's kernel as a one-op package does: the op's embedded CUBIN on a GPU of its TunedArch, otherwise the op's embedded PTX where there is one (LoadPTX); if any op cannot be loaded, Load fails and loads none. go test -tags cuda checks each op's kernel on GPU 0 against its float64 reference (relative L2 error at most %g), the PTX's kernels too, and that each method reaches its own op's kernel.", fp.Problem.ErrorBound())
	f.PackageComment(docText(b.String()))
	return f
}

// genTrainShape renders a training package's shape.go: the problem, the
// tensors and each op's kernel as constants.
func genTrainShape(t *trainSpec) *jen.File {
	fp := t.fprop()
	f := fp.newFile("")
	sizeConsts(f, fp.shape)
	constGroup(f, "The tensors and the work of each op.", tensorConsts(fp, tensorDocs{
		elem: "bytes of one element of X, dX, W, dW, bias, Y and dY (dBias is float32)", input: "N*C*H*W, of X and dX",
		filter: "K*(C/Groups)*R*S, of W and dW", bias: "K, of bias and dBias, or 0 without bias", output: "N*K*P*Q, of Y and dY",
		flops: "multiply-adds of one op (each the same), two operations each"}))
	var kc []constant
	for i, s := range t.ops {
		op := TrainOps()[i]
		kc = append(kc,
			constant{name: archConst(op), doc: "architecture of " + op.String() + "'s embedded CUBIN; other GPUs load its PTX", value: lit(s.Arch)},
			constant{name: kernelConst(op), doc: op.String() + "'s __global__ function in its CUBIN (" + methodOf(op) + ")", value: lit(s.Kernel)})
	}
	constGroup(f, "What each op's kernel was tuned for.", kc)
	return f
}

// genTrainKernel renders a training package's kernel.go: the version
// guard, each op's embedded images and spec, the Kernel type with its
// methods, Load and LoadPTX.
func genTrainKernel(t *trainSpec) *jen.File {
	fp := t.fprop()
	f := fp.newFile("")
	f.Anon(embedPath)
	decl(f, "A convrt without SupportVersion1 cannot run this package: compiling fails.",
		jen.Const().Id("_").Op("=").Add(convrt("SupportVersion1")))
	decl(f, "Kernel is the package's three loaded kernels, one per op: Forward launches the\n"+
		"forward convolution's, BackwardData the input gradient's and BackwardFilter\n"+
		"the filter and bias gradients'. It is a convrt.Conv and a convrt.Grad, safe for\n"+
		"concurrent use as a convrt.Kernel is.",
		jen.Type().Id("Kernel").Struct(jen.List(jen.Id("fprop"), jen.Id("dgrad"), jen.Id("wgrad")).Op("*").Add(convrt("Kernel"))))
	f.Var().Defs(
		jen.Id("_").Add(convrt("Conv")).Op("=").Parens(jen.Op("*").Id("Kernel")).Parens(jen.Nil()),
		jen.Id("_").Add(convrt("Grad")).Op("=").Parens(jen.Op("*").Id("Kernel")).Parens(jen.Nil()),
	)
	f.Line()
	for i, s := range t.ops {
		op := TrainOps()[i]
		f.Comment("//go:embed " + s.cubinName)
		f.Var().Id(op.String() + "CUBIN").String()
		f.Line()
		f.Comment("//go:embed " + t.ptxNames[i])
		f.Var().Id(op.String() + "PTX").String()
		f.Line()
		decl(f, fmt.Sprintf("%s is the %s op's problem and embedded kernels, for convrt.", specVar(op), op),
			jen.Var().Id(specVar(op)).Op("=").Add(specLit(s, op.String()+"CUBIN", op.String()+"PTX", archConst(op))))
	}
	var loadRules []string
	for i, s := range t.ops {
		loadRules = append(loadRules, TrainOps()[i].String()+": "+strings.TrimSuffix(opLoadRule(s), "."))
	}
	decl(f, "Load loads the three ops' kernels into the CUDA context current on the calling\n"+
		"OS thread (lock it and make a context current first), each as a one-op\n"+
		"package does; if one fails, it closes those it loaded and returns the error.\n"+
		wrap(strings.Join(loadRules, "; ")+"."),
		jen.Func().Id("Load").Params().Params(jen.Op("*").Id("Kernel"), jen.Error()).Block(
			jen.Return(jen.Id("load").Call(convrt("Load")))))
	decl(f, "LoadPTX loads the kernels of the three ops' embedded PTX, which the driver\n"+
		"compiles for the current GPU, whatever the GPU (the tests run them on the\n"+
		"TunedArch GPUs too); it fails if an op embeds no PTX.",
		jen.Func().Id("LoadPTX").Params().Params(jen.Op("*").Id("Kernel"), jen.Error()).Block(
			jen.Return(jen.Id("load").Call(convrt("LoadPTX")))))
	loadFn := jen.Func().Params(jen.Op("*").Add(convrt("Spec"))).Params(jen.Op("*").Add(convrt("Kernel")), jen.Error())
	decl(f, "load loads each op's spec with loadOp, in the order fprop, dgrad, wgrad, and\ncloses what it loaded when one fails.",
		jen.Func().Id("load").Params(jen.Id("loadOp").Add(loadFn)).Params(jen.Op("*").Id("Kernel"), jen.Error()).Block(
			jen.Var().Id("ks").Index(jen.Lit(3)).Op("*").Add(convrt("Kernel")),
			jen.For(jen.List(jen.Id("i"), jen.Id("s")).Op(":=").Range().Index(jen.Lit(3)).Op("*").Add(convrt("Spec")).Values(
				jen.Op("&").Id(specVar(problem.OpFprop)), jen.Op("&").Id(specVar(problem.OpDgrad)), jen.Op("&").Id(specVar(problem.OpWgrad)))).Block(
				jen.List(jen.Id("k"), jen.Err()).Op(":=").Id("loadOp").Call(jen.Id("s")),
				jen.If(jen.Err().Op("!=").Nil()).Block(
					jen.For(jen.List(jen.Id("_"), jen.Id("l")).Op(":=").Range().Id("ks").Index(jen.Empty(), jen.Id("i"))).Block(
						jen.Err().Op("=").Qual("errors", "Join").Call(jen.Err(), jen.Id("l").Dot("Close").Call()),
					),
					jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit("op %s: %w"), jen.Id("s").Dot("Problem").Dot("Op"), jen.Err())),
				),
				jen.Id("ks").Index(jen.Id("i")).Op("=").Id("k"),
			),
			jen.Return(jen.Op("&").Id("Kernel").Values(jen.Dict{
				jen.Id("fprop"): jen.Id("ks").Index(jen.Lit(0)),
				jen.Id("dgrad"): jen.Id("ks").Index(jen.Lit(1)),
				jen.Id("wgrad"): jen.Id("ks").Index(jen.Lit(2)),
			}), jen.Nil()),
		))
	nilKernel := func(what string) jen.Code {
		return jen.If(jen.Id("k").Op("==").Nil()).Block(
			jen.Return(jen.Qual("errors", "New").Call(jen.Lit(t.Package + ": " + what + ": nil Kernel (call Load)"))))
	}
	stream := jen.Id("stream").Add(convrt("Stream"))
	decl(f, "Forward enqueues Y = conv(X, W) + bias on stream with the fprop op's kernel:\n"+
		"out is Y, in X, filter W (see convrt.Kernel.Forward).",
		jen.Func().Params(jen.Id("k").Op("*").Id("Kernel")).Id("Forward").Params(stream,
			jen.List(jen.Id("out"), jen.Id("in"), jen.Id("filter"), jen.Id("bias")).Add(convrt("DevicePtr"))).Error().Block(
			nilKernel("forward"),
			jen.Return(jen.Id("k").Dot("fprop").Dot("Forward").Call(jen.Id("stream"), jen.Id("out"), jen.Id("in"), jen.Id("filter"), jen.Id("bias")))))
	decl(f, "BackwardData enqueues dX = conv^T(dY, W) on stream with the dgrad op's kernel\n(see convrt.Kernel.BackwardData).",
		jen.Func().Params(jen.Id("k").Op("*").Id("Kernel")).Id("BackwardData").Params(stream,
			jen.List(jen.Id("dY"), jen.Id("w"), jen.Id("dX")).Add(convrt("DevicePtr"))).Error().Block(
			nilKernel("backward data"),
			jen.Return(jen.Id("k").Dot("dgrad").Dot("BackwardData").Call(jen.Id("stream"), jen.Id("dY"), jen.Id("w"), jen.Id("dX")))))
	decl(f, "BackwardFilter enqueues dW = Σ dY ⊗ X and, with a bias, dBias = Σ dY on stream\nwith the wgrad op's kernel (see convrt.Kernel.BackwardFilter).",
		jen.Func().Params(jen.Id("k").Op("*").Id("Kernel")).Id("BackwardFilter").Params(stream,
			jen.List(jen.Id("x"), jen.Id("dY"), jen.Id("dW"), jen.Id("dBias")).Add(convrt("DevicePtr"))).Error().Block(
			nilKernel("backward filter"),
			jen.Return(jen.Id("k").Dot("wgrad").Dot("BackwardFilter").Call(jen.Id("stream"), jen.Id("x"), jen.Id("dY"), jen.Id("dW"), jen.Id("dBias")))))
	decl(f, "Info describes the forward op's kernel (OpInfo the others').",
		jen.Func().Params(jen.Id("k").Op("*").Id("Kernel")).Id("Info").Params().Add(convrt("Info")).Block(
			jen.Return(jen.Id("k").Dot("OpInfo").Call(problemQ("OpFprop")))))
	decl(f, "OpInfo describes op's kernel; the zero Info for another op or a nil Kernel.",
		jen.Func().Params(jen.Id("k").Op("*").Id("Kernel")).Id("OpInfo").Params(jen.Id("op").Add(problemQ("Op"))).Add(convrt("Info")).Block(
			jen.If(jen.Id("k").Op("==").Nil()).Block(jen.Return(convrt("Info").Values())),
			jen.Switch(jen.Id("op")).Block(
				jen.Case(problemQ("OpFprop")).Block(jen.Return(jen.Id("k").Dot("fprop").Dot("Info").Call())),
				jen.Case(problemQ("OpDgrad")).Block(jen.Return(jen.Id("k").Dot("dgrad").Dot("Info").Call())),
				jen.Case(problemQ("OpWgrad")).Block(jen.Return(jen.Id("k").Dot("wgrad").Dot("Info").Call())),
			),
			jen.Return(convrt("Info").Values())))
	decl(f, "Close unloads the three kernels (see convrt.Kernel.Close) and returns their\n"+
		"errors joined; a kernel that fails to unload stays open, and Close may be\ncalled again.",
		jen.Func().Params(jen.Id("k").Op("*").Id("Kernel")).Id("Close").Params().Error().Block(
			jen.If(jen.Id("k").Op("==").Nil()).Block(jen.Return(jen.Nil())),
			jen.Return(jen.Qual("errors", "Join").Call(jen.Id("k").Dot("fprop").Dot("Close").Call(), jen.Id("k").Dot("dgrad").Dot("Close").Call(), jen.Id("k").Dot("wgrad").Dot("Close").Call()))))
	return f
}

// opLoadRule says how Load loads one op's kernel s.
func opLoadRule(s *spec) string {
	switch {
	case s.ptx == "":
		return fmt.Sprintf("the CUBIN, on a %s GPU only (no PTX is embedded)", s.Arch)
	case s.Fallback != nil:
		return fmt.Sprintf("the %s CUBIN, on other GPUs from compute capability %d.%d on the fallback %s (%s)", s.Arch, s.ptxCC/10, s.ptxCC%10,
			s.Fallback.Kernel, strings.TrimSuffix(s.Fallback.Summary, "."))
	}
	return fmt.Sprintf("the %s CUBIN, on other GPUs from compute capability %d.%d on its PTX", s.Arch, s.ptxCC/10, s.ptxCC%10)
}

// genTrainTest renders a training package's kernel_cuda_test.go: each op's
// kernel on a real GPU against its float64 reference (convrttest, whose
// harnesses take one op's kernel), the forward's concurrency test, and
// TestKernel, which checks that each method reaches its own op's kernel.
func genTrainTest(t *trainSpec) *jen.File {
	fp := t.fprop()
	f := fp.newFile("cuda")
	f.ImportName("gorgonia.org/cu", "cu")
	decl(f, fmt.Sprintf("errorBound is the relative L2 error that precision %s allows.", fp.Problem.Precision),
		jen.Const().Id("errorBound").Op("=").Add(floatLit(fp.Problem.ErrorBound())))
	harness := func(name, load string, op problem.Op) *jen.Statement {
		return jen.Qual(convrttestPath, name).Call(id("t"), id("opLoader").Call(id(load), problemQ(opConst(op))), id("errorBound"))
	}
	for i, s := range t.ops {
		op := TrainOps()[i]
		method := methodOf(op)
		decl(f, fmt.Sprintf("Test%s checks the %s op's kernel that Load picks on GPU 0 against the\nfloat64 reference (convrttest.%s).", method, op, method),
			jen.Func().Id("Test"+method).Params(tT()).Block(harness(method, "Load", op)))
		ptxDoc := fmt.Sprintf("Test%sPTX checks the %s op's kernel of the embedded PTX, as Load runs it\non GPUs other than %s.", method, op, archConst(op))
		ptxBody := harness(method, "LoadPTX", op)
		if s.ptx == "" {
			ptxDoc += "\nThis op embeds no PTX: the test says so and is skipped."
			ptxBody = id("t").Dot("Skip").Call(jen.Lit("no PTX embedded for " + op.String() + ": its kernel runs on " + s.Arch + " only"))
		}
		decl(f, ptxDoc, jen.Func().Id("Test"+method+"PTX").Params(tT()).Block(ptxBody))
	}
	decl(f, "TestConcurrent checks Forward from several goroutines and streams at once,\nand Close (convrttest.Concurrent). Run it with -race.",
		jen.Func().Id("TestConcurrent").Params(tT()).Block(harness("Concurrent", "Load", problem.OpFprop)))
	kern := convrt("Kernel")
	decl(f, "opLoader is a loader of op's kernel for convrttest, whose harnesses take one\n"+
		"op's: it loads the three with load, closes the other two and returns op's.",
		jen.Func().Id("opLoader").Params(jen.Id("load").Func().Params().Params(jen.Op("*").Id("Kernel"), jen.Error()), jen.Id("op").Add(problemQ("Op"))).
			Func().Params().Params(jen.Op("*").Add(kern), jen.Error()).Block(
			jen.Return(jen.Func().Params().Params(jen.Op("*").Add(kern.Clone()), jen.Error()).Block(
				jen.List(jen.Id("k"), jen.Err()).Op(":=").Id("load").Call(),
				jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
				jen.Id("ops").Op(":=").Map(problemQ("Op")).Op("*").Add(convrt("Kernel")).Values(jen.Dict{
					problemQ("OpFprop"): jen.Id("k").Dot("fprop"),
					problemQ("OpDgrad"): jen.Id("k").Dot("dgrad"),
					problemQ("OpWgrad"): jen.Id("k").Dot("wgrad"),
				}),
				jen.For(jen.List(jen.Id("o"), jen.Id("other")).Op(":=").Range().Id("ops")).Block(
					jen.If(jen.Id("o").Op("!=").Id("op")).Block(
						jen.If(jen.Err().Op(":=").Id("other").Dot("Close").Call(), jen.Err().Op("!=").Nil()).Block(
							jen.Return(jen.Nil(), jen.Qual("errors", "Join").Call(jen.Err(), jen.Id("k").Dot("Close").Call())),
						),
					),
				),
				jen.Return(jen.Id("ops").Index(jen.Id("op")), jen.Nil()),
			)),
		))
	call := func(method string, args int) *jen.Statement {
		zeros := []jen.Code{jen.Lit(0)}
		for range args {
			zeros = append(zeros, jen.Lit(0))
		}
		return jen.Func().Params().Error().Block(jen.Return(jen.Id("k").Dot(method).Call(zeros...)))
	}
	type check struct {
		method, operand string
		args            int
	}
	var rows []jen.Code
	for _, c := range []check{{"Forward", "out", 4}, {"BackwardData", "dX", 3}, {"BackwardFilter", "dW", 4}} {
		rows = append(rows, jen.Values(jen.Lit(c.method), jen.Lit(c.operand+" is a null device address"), call(c.method, c.args)))
	}
	decl(f, "TestKernel checks that Load loads the three ops' kernels and that each method\n"+
		"reaches its own op's: given null addresses, each returns that kernel's refusal\n"+
		"naming its op's output (not another op's \"call ...\"); after Close each returns\n"+
		"an error wrapping convrt.ErrClosed, and a second Close does nothing.",
		jen.Func().Id("TestKernel").Params(tT()).Block(
			jen.Qual("runtime", "LockOSThread").Call(),
			jen.Defer().Qual("runtime", "UnlockOSThread").Call(),
			jen.List(jen.Id("dev"), jen.Err()).Op(":=").Qual("gorgonia.org/cu", "GetDevice").Call(jen.Lit(0)),
			jen.If(jen.Err().Op("!=").Nil()).Block(id("t").Dot("Fatalf").Call(jen.Lit("device 0: %v"), jen.Err())),
			jen.List(jen.Id("ctx"), jen.Err()).Op(":=").Id("dev").Dot("MakeContext").Call(jen.Qual("gorgonia.org/cu", "SchedAuto")),
			jen.If(jen.Err().Op("!=").Nil()).Block(id("t").Dot("Fatalf").Call(jen.Lit("make a context on device 0: %v"), jen.Err())),
			jen.Defer().Func().Params().Block(
				jen.If(jen.Err().Op(":=").Id("ctx").Dot("Destroy").Call(), jen.Err().Op("!=").Nil()).Block(
					errorfT("destroy context: %v", jen.Err()))).Call(),
			jen.List(jen.Id("k"), jen.Err()).Op(":=").Id("Load").Call(),
			jen.If(jen.Err().Op("!=").Nil()).Block(id("t").Dot("Fatalf").Call(jen.Lit("load: %v"), jen.Err())),
			jen.For(jen.List(jen.Id("_"), jen.Id("op")).Op(":=").Range().Index().Add(problemQ("Op")).Values(problemQ("OpFprop"), problemQ("OpDgrad"), problemQ("OpWgrad"))).Block(
				jen.If(jen.Id("info").Op(":=").Id("k").Dot("OpInfo").Call(jen.Id("op")), jen.Id("info").Dot("Problem").Dot("Op").Op("!=").Id("op").Op("||").Id("info").Dot("Launch").Dot("Kernel").Op("==").Lit("")).Block(
					errorfT("OpInfo(%s) = %+v", jen.Id("op"), jen.Id("info")))),
			jen.Id("calls").Op(":=").Index().Struct(jen.List(jen.Id("method"), jen.Id("want")).String(), jen.Id("call").Func().Params().Error()).Values(rows...),
			jen.For(jen.List(jen.Id("_"), jen.Id("c")).Op(":=").Range().Id("calls")).Block(
				jen.If(jen.Err().Op(":=").Id("c").Dot("call").Call(), jen.Err().Op("==").Nil().Op("||").Op("!").Qual("strings", "Contains").Call(jen.Err().Dot("Error").Call(), jen.Id("c").Dot("want"))).Block(
					errorfT("%s with null addresses: %v, want an error with %q", jen.Id("c").Dot("method"), jen.Err(), jen.Id("c").Dot("want")))),
			jen.If(jen.Err().Op(":=").Id("k").Dot("Close").Call(), jen.Err().Op("!=").Nil()).Block(id("t").Dot("Fatalf").Call(jen.Lit("Close: %v"), jen.Err())),
			jen.For(jen.List(jen.Id("_"), jen.Id("c")).Op(":=").Range().Id("calls")).Block(
				jen.If(jen.Err().Op(":=").Id("c").Dot("call").Call(), jen.Op("!").Qual("errors", "Is").Call(jen.Err(), convrt("ErrClosed"))).Block(
					errorfT("%s after Close: %v, want an error wrapping convrt.ErrClosed", jen.Id("c").Dot("method"), jen.Err()))),
			jen.If(jen.Err().Op(":=").Id("k").Dot("Close").Call(), jen.Err().Op("!=").Nil()).Block(
				errorfT("second Close: %v, want nil", jen.Err())),
		))
	return f
}

// genTrainShapeTest renders a training package's shape_test.go: each op's
// spec is valid and agrees with the constants (no GPU needed).
func genTrainShapeTest(t *trainSpec) *jen.File {
	f := t.fprop().newFile("")
	p := jen.Id("s").Dot("Problem")
	var rows []jen.Code
	for _, op := range TrainOps() {
		rows = append(rows, jen.Values(jen.Op("&").Id(specVar(op)), problemQ(opConst(op)), jen.Id(archConst(op)), jen.Id(kernelConst(op))))
	}
	decl(f, "TestSpec checks that the spec of each op that Load hands to convrt agrees with\nthe constants.",
		jen.Func().Id("TestSpec").Params(tT()).Block(
			jen.For(jen.List(jen.Id("_"), jen.Id("c")).Op(":=").Range().Index().Struct(
				jen.Id("spec").Op("*").Add(convrt("Spec")),
				jen.Id("op").Add(problemQ("Op")),
				jen.List(jen.Id("arch"), jen.Id("kernel")).String(),
			).Values(rows...)).Block(
				jen.Id("s").Op(":=").Id("c").Dot("spec"),
				jen.If(jen.Err().Op(":=").Id("s").Dot("Validate").Call(), jen.Err().Op("!=").Nil()).Block(
					id("t").Dot("Fatalf").Call(jen.Lit("%s: %v"), jen.Id("c").Dot("op"), jen.Err()),
				),
				jen.List(id("in"), id("filter"), id("bias"), id("out")).Op(":=").Add(p.Clone()).Dot("Shape").Dot("Elements").Call(),
				jen.If(jen.Index(jen.Lit(6)).Int().Values(id("in"), id("filter"), id("bias"), id("out"), p.Clone().Dot("Shape").Dot("P").Call(), p.Clone().Dot("Shape").Dot("Q").Call()).Op("!=").
					Index(jen.Lit(6)).Int().Values(id("InputElems"), id("FilterElems"), id("BiasElems"), id("OutputElems"), id("P"), id("Q")).Op("||").
					Add(p.Clone()).Dot("Shape").Dot("String").Call().Op("!=").Id("Shape").Op("||").
					Add(p.Clone()).Dot("Shape").Dot("FLOPs").Call().Op("!=").Id("FLOPs").Op("||").
					Add(p.Clone()).Dot("Precision").Op("!=").Id("Precision").Op("||").
					Add(p.Clone()).Dot("Layout").Op("!=").Id("Layout").Op("||").
					Add(p.Clone()).Dot("Op").Op("!=").Id("c").Dot("op").Op("||").
					Id("s").Dot("TunedArch").Op("!=").Id("c").Dot("arch").Op("||").
					Id("s").Dot("CUBIN").Dot("Kernel").Op("!=").Id("c").Dot("kernel").Op("||").
					Id("Precision").Dot("ElementBytes").Call().Op("!=").Id("ElementBytes")).Block(
					errorfT("%s: the spec's problem %+v disagrees with the constants", jen.Id("c").Dot("op"), p.Clone()),
				),
			),
		))
	return f
}
