package gen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

// loadDoc documents Load.
func loadDoc(s *spec) string {
	d := "Load loads the kernel into the CUDA context current on the calling OS thread (lock it and make a context current first). "
	switch {
	case s.Untuned:
		return wrap(d + fmt.Sprintf("This package is untuned and embeds no CUBIN: on every GPU from compute capability %d.%d on it loads the PTX (LoadPTX).", s.ptxCC/10, s.ptxCC%10))
	case s.ptx == "":
		return wrap(d + "It needs a GPU of TunedArch: no PTX is embedded for other GPUs.")
	case s.Fallback != nil:
		return wrap(d + fmt.Sprintf("On TunedArch it loads the CUBIN, on other GPUs from compute capability %d.%d on the fallback (LoadPTX).", s.ptxCC/10, s.ptxCC%10))
	}
	return wrap(d + fmt.Sprintf("On TunedArch it loads the CUBIN, on other GPUs from compute capability %d.%d on the PTX (LoadPTX).", s.ptxCC/10, s.ptxCC%10))
}

// loadPTXDoc documents LoadPTX.
func loadPTXDoc(s *spec) string {
	d := "LoadPTX loads the embedded PTX's kernel, which the driver compiles for any GPU (its test runs it on TunedArch too). "
	switch {
	case s.ptx == "":
		return wrap(d + "This package embeds no PTX: LoadPTX returns an error.")
	case s.Untuned:
		return wrap(d + "The PTX is the package's only kernel, an untuned default configuration.")
	case s.Fallback != nil:
		fb := s.Fallback
		return wrap(d + fmt.Sprintf("It is a fallback kernel for %s, not the tuned one: %s.", fb.Arch, strings.TrimSuffix(fb.Summary, ".")))
	}
	return wrap(d + "The PTX is the tuned kernel's own.")
}

// convrt and problem name the runtime and the problem package in the
// generated code.
func convrt(name string) *jen.Statement   { return jen.Qual(convrtPath, name) }
func problemQ(name string) *jen.Statement { return jen.Qual(problemPath, name) }

// chainLit is the epilogue.Chain literal of c, element by element, with
// the parameters each element takes: no parsing at run time.
func chainLit(c epilogue.Chain) *jen.Statement {
	elems := make([]jen.Code, len(c))
	for i, e := range c {
		kv := []any{"Op", jen.Qual(epiloguePath, e.Op.GoName())}
		switch e.Op {
		case epilogue.Residual, epilogue.LeakyReLU:
			kv = append(kv, "Alpha", jen.Lit(e.Alpha))
		case epilogue.Clamp:
			kv = append(kv, "Lo", jen.Lit(e.Lo), "Hi", jen.Lit(e.Hi))
		}
		elems[i] = inline(jen.Null(), kv...)
	}
	return jen.Qual(epiloguePath, "Chain").Values(elems...)
}

// gradMethod is the convrt.Kernel method that runs gradient op op.
func gradMethod(op problem.Op) string {
	if op == problem.OpWgrad {
		return "BackwardFilter"
	}
	return "BackwardData"
}

// opConst is the name of op's constant in package problem.
func opConst(op problem.Op) string {
	switch op {
	case problem.OpDgrad:
		return "OpDgrad"
	case problem.OpWgrad:
		return "OpWgrad"
	}
	return "OpFprop"
}

// lits turns a geometry into literals.
func lits(v [3]int) []jen.Code { return []jen.Code{jen.Lit(v[0]), jen.Lit(v[1]), jen.Lit(v[2])} }

// inline is a composite literal on one line: {Key: value, ...}.
func inline(typ *jen.Statement, kv ...any) *jen.Statement {
	items := make([]jen.Code, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		items = append(items, jen.Id(kv[i].(string)).Op(":").Add(kv[i+1].(jen.Code)))
	}
	return typ.Values(items...)
}

// launchLine is a convrt.Launch literal on one line.
func launchLine(kernel string, grid, block [3]int, shared int) *jen.Statement {
	return inline(convrt("Launch"), "Kernel", jen.Lit(kernel),
		"Grid", jen.Index(jen.Lit(3)).Int().Values(lits(grid)...),
		"Block", jen.Index(jen.Lit(3)).Int().Values(lits(block)...),
		"SharedBytes", jen.Lit(shared))
}

// genKernel renders kernel.go: the version guard, the embedded images, the
// spec that hands them and the problem to convrt, and Load.
func genKernel(s *spec) *jen.File {
	f := s.newFile("")
	f.Anon(embedPath)
	decl(f, "A convrt without SupportVersion1 cannot run this package: compiling fails.",
		jen.Const().Id("_").Op("=").Add(convrt("SupportVersion1")))
	if op := s.Problem.Op; op != problem.OpFprop {
		decl(f, fmt.Sprintf("Kernel is the loaded %s kernel, a convrt.Grad (convrt.Kernel documents %s).", op, gradMethod(op)),
			jen.Type().Id("Kernel").Op("=").Add(convrt("Kernel")))
		f.Var().Id("_").Add(convrt("Grad")).Op("=").Parens(jen.Op("*").Id("Kernel")).Parens(jen.Nil())
	} else {
		decl(f, "Kernel is the loaded kernel, a convrt.Conv (convrt.Kernel documents Forward).",
			jen.Type().Id("Kernel").Op("=").Add(convrt("Kernel")))
		f.Var().Id("_").Add(convrt("Conv")).Op("=").Parens(jen.Op("*").Id("Kernel")).Parens(jen.Nil())
	}
	f.Line()
	if s.cubinName != "" {
		f.Comment("//go:embed " + s.cubinName)
		f.Var().Id("cubin").String()
		f.Line()
	}
	f.Comment("//go:embed " + s.FilePrefix + ptxFile)
	f.Var().Id("ptx").String()
	f.Line()

	decl(f, "spec is the problem and the embedded kernels, for convrt.", jen.Var().Id("spec").Op("=").Add(specLit(s, "cubin", "ptx", "TunedArch")))
	decl(f, loadDoc(s), jen.Func().Id("Load").Params().Params(jen.Op("*").Id("Kernel"), jen.Error()).Block(
		jen.Return(convrt("Load").Call(jen.Op("&").Id("spec")))))
	decl(f, loadPTXDoc(s), jen.Func().Id("LoadPTX").Params().Params(jen.Op("*").Id("Kernel"), jen.Error()).Block(
		jen.Return(convrt("LoadPTX").Call(jen.Op("&").Id("spec")))))
	return f
}

// specLit is the convrt.Spec literal of s: its problem, its images from
// the variables named cubinVar and ptxVar, into which they are embedded,
// and its CUBIN's architecture from the constant archConst.
func specLit(s *spec, cubinVar, ptxVar, archConst string) *jen.Statement {
	var sh []any
	for _, n := range []string{"N", "C", "H", "W", "K", "R", "S", "StrideH", "StrideW", "PadH", "PadW", "DilationH", "DilationW", "Groups"} {
		sh = append(sh, n, jen.Id(n))
	}
	sh = append(sh, "Bias", jen.Id("HasBias"))
	prob := []any{"Shape", inline(problemQ("Shape"), sh...), "Precision", jen.Id("Precision"), "Layout", jen.Id("Layout")}
	if len(s.Problem.Epilogue) > 0 {
		prob = append(prob, "Epilogue", chainLit(s.Problem.Epilogue))
	}
	if op := s.Problem.Op; op != problem.OpFprop {
		prob = append(prob, "Op", problemQ(opConst(op)))
	}
	if s.Problem.OutDiffers() {
		prob = append(prob, "OutPrecision", problemQ(storageConst(s.Problem.OutPrecision)))
	}
	tuned := launchLine(s.Kernel, s.Grid, s.Block, s.SharedBytes)
	if s.cubinName != "" {
		tuned = inline(convrt("Image"), "Code", jen.Id(cubinVar), "CC", jen.Lit(s.cubinCC), "Launch", tuned)
	} else { // untuned: no CUBIN, Load runs the PTX
		tuned = inline(convrt("Image"), "CC", jen.Lit(s.cubinCC), "Launch", tuned)
	}
	ptxImage := convrt("Image").Values()
	switch fb := s.Fallback; {
	case s.ptx == "":
	case fb != nil:
		ptxImage = inline(convrt("Image"), "Code", jen.Id(ptxVar), "CC", jen.Lit(s.ptxCC), "Launch", launchLine(fb.Kernel, fb.Grid, fb.Block, fb.SharedBytes))
	default:
		ptxImage = inline(convrt("Image"), "Code", jen.Id(ptxVar), "CC", jen.Lit(s.ptxCC), "Launch", launchLine(s.Kernel, s.Grid, s.Block, s.SharedBytes))
	}
	return convrt("Spec").Values(jen.Dict{
		jen.Id("Package"):   jen.Lit(s.Package),
		jen.Id("Problem"):   inline(problemQ("Problem"), prob...),
		jen.Id("TunedArch"): jen.Id(archConst),
		jen.Id("CUBIN"):     tuned,
		jen.Id("PTX"):       ptxImage,
	})
}
