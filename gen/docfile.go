package gen

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dave/jennifer/jen"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

// layoutDoc names the memory order of the three tensors, outermost first.
func layoutDoc(l problem.Layout) (in, filter, out string) {
	filter = strings.ToUpper(l.FilterLayout())
	if l == problem.NHWC {
		return "NHWC", filter, "NPQK"
	}
	return "NCHW", filter, "NKPQ"
}

// docWidth is where prose in the generated doc comments wraps.
const docWidth = 76

// wrap breaks text into lines of at most docWidth characters at spaces.
func wrap(text string) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(text) {
		switch {
		case n == 0:
		case n+1+utf8.RuneCountInString(word) > docWidth:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += utf8.RuneCountInString(word)
	}
	return b.String()
}

// epilogueLine is the doc header's line on the epilogue chain c: the chain
// and the arrays it reads besides the convolution's.
func epilogueLine(c epilogue.Chain) string {
	var arrays []string
	if c.NeedsScaleShift() {
		arrays = append(arrays, "scale, shift: K float32 each")
	}
	if c.NeedsResidual() {
		arrays = append(arrays, "residual: as out")
	}
	line := "epilogue   " + c.String() + ": in FP32 after the bias, before the store"
	if len(arrays) > 0 {
		line += " (" + strings.Join(arrays, "; ") + ")"
	}
	return line
}

// docWriters are what writes a doc comment's text into b: para adds a
// wrapped paragraph, code adds lines of a code block, and both end with a
// blank line.
func docWriters(b *strings.Builder) (para func(format string, args ...any), code func(lines ...string)) {
	para = func(format string, args ...any) { b.WriteString(wrap(fmt.Sprintf(format, args...)) + "\n\n") }
	code = func(lines ...string) {
		for _, l := range lines {
			b.WriteString("\t" + l + "\n")
		}
		b.WriteString("\n")
	}
	return para, code
}

// genDoc renders doc.go: the package comment is the package's manual.
func genDoc(s *spec) *jen.File {
	f := s.newFile("")
	sh := s.shape
	in, filter, out := layoutDoc(s.Problem.Layout)
	input, filt, bias, output := sh.Elements()
	var b strings.Builder
	para, code := docWriters(&b)

	if s.Untuned {
		para("Package %s runs one CUDA convolution kernel that convgen generated for a single problem, fixed when the package was generated. UNTUNED: nothing was measured; the kernel is a heuristic default configuration, embedded as PTX only, correct but not tuned for speed. Tune it on a GPU (convgen without -untuned, in a build with the cuda tag) and commit the cache to replace it:", s.Package)
	} else {
		para("Package %s runs one CUDA convolution kernel that convgen generated and tuned for a single problem, fixed when the package was generated:", s.Package)
	}
	ep := s.Problem.Epilogue
	outData := ""
	if p := s.Problem; p.OutDiffers() {
		outData = fmt.Sprintf(", %s output (rounded once from FP32)", p.OutPrecision)
	}
	header := []string{
		"shape      " + sh.String(),
		fmt.Sprintf("precision  %s: %s, %s data%s", s.Problem.Precision, s.elem.arith, s.elem.data, outData),
		fmt.Sprintf("layout     %s: input %s, filter %s, output %s", s.Problem.Layout, in, filter, out),
		fmt.Sprintf("kernel     %s, grid %dx%dx%d, block %dx%dx%d, %d bytes of dynamic shared memory",
			s.Kernel, s.Grid[0], s.Grid[1], s.Grid[2], s.Block[0], s.Block[1], s.Block[2], s.SharedBytes),
	}
	if len(ep) > 0 {
		header = append(header, epilogueLine(ep))
	}
	if op := s.Problem.Op; op != problem.OpFprop {
		header = append(header[:1], append([]string{"op         " + op.String() + ": " + gradMethod(op)}, header[1:]...)...)
	}
	header = append(header, "tuning     "+strings.TrimSuffix(s.Summary, "."))
	code(header...)
	if s.Problem.Op != problem.OpFprop {
		gradDoc(s, para, code, &b)
		f.PackageComment(docText(b.String()))
		return f
	}

	b.WriteString("# What it computes\n\n")
	para("The forward 2-D convolution (cross-correlation, as in cuDNN and PyTorch) of an N×C×H×W = %d×%d×%d×%d input with a K×(C/Groups)×R×S = %d×%d×%d×%d filter into an N×K×P×Q = %d×%d×%d×%d output, with the constants of this package:",
		sh.N, sh.C, sh.H, sh.W, sh.K, sh.C/sh.Groups, sh.R, sh.S, sh.N, sh.K, sh.P(), sh.Q())
	code(forwardFormula(sh, ep)...)
	sum := forwardSum(sh)
	if !sh.Bias {
		sum += " The problem has no bias: Forward ignores its bias argument."
	}
	para("%s", sum)

	b.WriteString("# Memory\n\n")
	if p := s.Problem; p.OutDiffers() {
		what := "out"
		if ep.NeedsResidual() {
			what = "out and the residual"
		}
		para("Every tensor is one dense array of %s in device memory (%s: %s), in the layout's order, outermost index first:", s.elem.memDoc, what, outMemDoc(p.OutPrecision))
	} else {
		para("Every tensor is one dense array of %s in device memory, in the layout's order, outermost index first:", s.elem.memDoc)
	}
	mem := []string{
		fmt.Sprintf("in      %s  InputElems  = %d", in, input),
		fmt.Sprintf("filter  %s  FilterElems = %d", filter, filt),
	}
	if sh.Bias {
		mem = append(mem, fmt.Sprintf("bias    K     BiasElems   = %d", bias))
	}
	code(append(mem, fmt.Sprintf("out     %s  OutputElems = %d", out, output))...)

	b.WriteString("# Usage\n\n")
	para("The kernel runs in builds with the cuda build tag (cgo, cuda.h, libcuda); without it Load returns an error wrapping convrt.ErrNoCUDA. With gorgonia.org/cu, on a locked OS thread with a CUDA context current:")
	argBias := "convrt.PtrOf(bias)"
	if !sh.Bias {
		argBias = "0"
	}
	call := "err = k.Forward(convrt.StreamOf(stream), convrt.PtrOf(out), convrt.PtrOf(in), convrt.PtrOf(filter), " + argBias + ")"
	if ep.NeedsScaleShift() || ep.NeedsResidual() {
		var extra []string
		if ep.NeedsScaleShift() {
			extra = append(extra, "Scale: convrt.PtrOf(scale), Shift: convrt.PtrOf(shift)")
		}
		if ep.NeedsResidual() {
			extra = append(extra, "Residual: convrt.PtrOf(residual)")
		}
		call = "err = k.ForwardEpilogue(convrt.StreamOf(stream), convrt.PtrOf(out), convrt.PtrOf(in), convrt.PtrOf(filter), " + argBias +
			", convrt.Epilogue{" + strings.Join(extra, ", ") + "}) // 16-byte aligned"
	}
	code(
		"k, err := "+s.Package+".Load() // a convrt.Conv; check err, defer k.Close()",
		call,
		"// ... stream.Synchronize(): out is ready",
	)

	load := fmt.Sprintf("Load picks the embedded %s CUBIN on a %s device and otherwise has the driver compile the embedded PTX (for compute capability %d.%d or more).", s.Arch, s.Arch, s.ptxCC/10, s.ptxCC%10)
	switch fb := s.Fallback; {
	case s.Untuned:
		load = fmt.Sprintf("Load has the driver compile the embedded PTX (%s) on any GPU of compute capability %d.%d or more: the package has no CUBIN.", s.Arch, s.ptxCC/10, s.ptxCC%10)
	case s.ptx == "":
		load = fmt.Sprintf("Load needs a %s device: the package embeds no PTX for other GPUs.", s.Arch)
	case fb != nil:
		load = fmt.Sprintf("Load runs the %s CUBIN on a %s device, else (compute capability %d.%d on) a fallback, %s as PTX (LoadPTX).",
			s.Arch, s.Arch, s.ptxCC/10, s.ptxCC%10, fb.Kernel)
	}
	para("%s Forward only enqueues the kernel; a Kernel is safe for concurrent use (see convrt).", load)
	check := "go test -tags cuda checks the kernel on GPU 0 against a float64 reference (relative L2 error at most %g)"
	if s.ptx != "" {
		check += ", the PTX's kernel too,"
	}
	para(check+" and Forward from several goroutines at once (run it with -race).", s.Problem.ErrorBound())
	f.PackageComment(docText(b.String()))
	return f
}

// gradDoc writes the sections of a gradient op's package comment after
// its header: what the op computes, the tensors' memory and the usage.
func gradDoc(s *spec, para func(string, ...any), code func(...string), b *strings.Builder) {
	sh := s.shape
	in, filter, out := layoutDoc(s.Problem.Layout)
	input, filt, bias, output := sh.Elements()
	channel := "c"
	if sh.Groups > 1 {
		channel = "g*(C/Groups)+c"
	}
	b.WriteString("# What it computes\n\n")
	para("A gradient of the 2-D convolution (cross-correlation, as in cuDNN and PyTorch) out[n][k][p][q] = Σ in[n][%s][h][w] * filter[k][c][r][s] (+ bias[k]) of an N×C×H×W = %d×%d×%d×%d input X, a K×(C/Groups)×R×S = %d×%d×%d×%d filter W and an N×K×P×Q = %d×%d×%d×%d output Y, where h = p*StrideH - PadH + r*DilationH, w = q*StrideW - PadW + s*DilationW, summed over c < C/Groups, r < R, s < S, input positions outside the image reading as zero. Given dY, the gradient of a loss with respect to Y, the kernel computes:",
		channel, sh.N, sh.C, sh.H, sh.W, sh.K, sh.C/sh.Groups, sh.R, sh.S, sh.N, sh.K, sh.P(), sh.Q())
	var usage string
	switch s.Problem.Op {
	case problem.OpDgrad:
		code(dgradFormula()...)
		weight := "W"
		if s.Problem.Layout == problem.NHWC {
			weight = "W permuted to C_in×R×S×C_out/groups"
		}
		para("the input gradient dX = conv^T(dY, W), written whole (not accumulated into dX): PyTorch's %s of dY, weight %s (convgen -op transposed). Arithmetic: %s.",
			convTranspose2d(problem.TransposedOf(sh)), weight, s.elem.arith)
		b.WriteString("# Memory\n\n")
		para("Every tensor is one dense array of %s in device memory, in the layout's order, outermost index first:", s.elem.memDoc)
		code(fmt.Sprintf("dY  %s  OutputElems = %d  (read)", out, output),
			fmt.Sprintf("W   %s  FilterElems = %d  (read: the forward filter)", filter, filt),
			fmt.Sprintf("dX  %s  InputElems  = %d  (written)", in, input))
		usage = "err = k.BackwardData(convrt.StreamOf(stream), convrt.PtrOf(dY), convrt.PtrOf(w), convrt.PtrOf(dX))"
	default:
		code(wgradFormula()...)
		para("the filter gradient dW, and with a bias the bias gradient dBias in FP32, written whole (not accumulated) and deterministically: the same inputs give the same bits. Arithmetic: %s.", s.elem.arith)
		b.WriteString("# Memory\n\n")
		para("Every tensor is one dense array in device memory, in the layout's order, outermost index first, of %s except dBias:", s.elem.memDoc)
		mem := []string{fmt.Sprintf("X      %s  InputElems  = %d  (read)", in, input),
			fmt.Sprintf("dY     %s  OutputElems = %d  (read)", out, output),
			fmt.Sprintf("dW     %s  FilterElems = %d  (written)", filter, filt)}
		dBias := "0"
		if sh.Bias {
			mem = append(mem, fmt.Sprintf("dBias  K     BiasElems   = %d  float32 (written)", bias))
			dBias = "convrt.PtrOf(dBias)"
		}
		code(mem...)
		usage = "err = k.BackwardFilter(convrt.StreamOf(stream), convrt.PtrOf(x), convrt.PtrOf(dY), convrt.PtrOf(dW), " + dBias + ")"
	}
	b.WriteString("# Usage\n\n")
	para("The kernel runs in builds with the cuda build tag (cgo, cuda.h, libcuda); without it Load returns an error wrapping convrt.ErrNoCUDA. With gorgonia.org/cu, on a locked OS thread with a CUDA context current:")
	code("k, err := "+s.Package+".Load() // a convrt.Grad; check err, defer k.Close()",
		usage+" // 16-byte aligned",
		"// ... stream.Synchronize(): the gradient is ready")
	method := gradMethod(s.Problem.Op)
	para("%s only enqueues the kernel; a Kernel is safe for concurrent use (see convrt). Load picks the embedded CUBIN on a %s device and otherwise, where a PTX is embedded, has the driver compile it (LoadPTX). go test -tags cuda checks %s on GPU 0 against a float64 reference (relative L2 error at most %g), the PTX's kernel too where there is one.",
		method, s.Arch, method, s.Problem.Precision.ErrorBound())
}

// convTranspose2d is t as PyTorch's constructor call, with only the
// arguments that differ from its defaults, and a pair only where the two
// axes differ: "ConvTranspose2d(96, 3, 11, stride=4, padding=2,
// output_padding=1, bias=False)".
func convTranspose2d(t problem.Transposed) string {
	pair := func(h, w int) string {
		if h == w {
			return fmt.Sprint(h)
		}
		return fmt.Sprintf("(%d, %d)", h, w)
	}
	args := []string{fmt.Sprint(t.C), fmt.Sprint(t.K), pair(t.R, t.S)}
	for _, a := range []struct {
		name       string
		h, w, zero int
	}{{"stride", t.StrideH, t.StrideW, 1}, {"padding", t.PadH, t.PadW, 0}, {"output_padding", t.OutputPadH, t.OutputPadW, 0},
		{"groups", t.Groups, t.Groups, 1}, {"dilation", t.DilationH, t.DilationW, 1}} {
		if a.h != a.zero || a.w != a.zero {
			args = append(args, a.name+"="+pair(a.h, a.w))
		}
	}
	args = append(args, "bias=False")
	return "ConvTranspose2d(" + strings.Join(args, ", ") + ")"
}

// forwardFormula is the forward convolution of sh with the chain ep, as
// the lines of a code block.
func forwardFormula(sh problem.Shape, ep epilogue.Chain) []string {
	biasTerm, channel, open, closing := "", "c", "", ""
	if len(ep) > 0 {
		open, closing = "epilogue(", ")"
	}
	if sh.Bias {
		biasTerm = "bias[k] + "
	}
	if sh.Groups > 1 {
		channel = "g*(C/Groups)+c"
	}
	return []string{
		fmt.Sprintf("out[n][k][p][q] = %s%sΣ in[n][%s][h][w] * filter[k][c][r][s]%s", open, biasTerm, channel, closing),
		"h = p*StrideH - PadH + r*DilationH",
		"w = q*StrideW - PadW + s*DilationW",
	}
}

// forwardSum is the sentence after forwardFormula: what the sum runs over
// and what the padding reads.
func forwardSum(sh problem.Shape) string {
	sum := "summed over c < C/Groups, r < R and s < S"
	if sh.Groups > 1 {
		sum += ", where g = k/(K/Groups) is k's channel group"
	}
	return sum + ". Input positions outside the H×W image read as zero (padding)."
}

// dgradFormula is the input gradient, as the lines of a code block.
func dgradFormula() []string {
	return []string{"dX[n][c][h][w] = Σ dY[n][k][p][q] * W[k][c'][r][s]",
		"over the k of c's group and the taps (r, s) with",
		"p*StrideH = h + PadH - r*DilationH and q*StrideW = w + PadW - s*DilationW,",
		"p < P and q < Q (c' = c mod C/Groups)"}
}

// wgradFormula is the filter and bias gradients, as the lines of a code
// block.
func wgradFormula() []string {
	return []string{"dW[k][c][r][s] = Σ dY[n][k][p][q] * X[n][g*(C/Groups)+c][h][w] over n, p, q",
		"dBias[k]       = Σ dY[n][k][p][q] over n, p, q   (with a bias)"}
}
