package gen

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/problem"
)

// constant is one generated constant with its line comment.
type constant struct {
	name, doc string
	value     jen.Code
	typ       jen.Code // nil: untyped
}

// constGroup renders const ( ... ) with a doc comment on the group and a
// line comment on each constant that has one.
func constGroup(f *jen.File, groupDoc string, cs []constant) {
	defs := make([]jen.Code, 0, len(cs))
	for _, c := range cs {
		def := jen.Id(c.name)
		if c.typ != nil {
			def.Add(c.typ)
		}
		def.Op("=").Add(c.value)
		if c.doc != "" {
			def.Comment(c.doc)
		}
		defs = append(defs, def)
	}
	decl(f, groupDoc, jen.Const().Defs(defs...))
}

// floatLit writes v as an untyped floating-point constant.
func floatLit(v float64) jen.Code {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") { // n: NaN, Inf cannot occur
		s += ".0"
	}
	return jen.Op(s)
}

// genShape renders shape.go: the problem and the launch as constants.
func genShape(s *spec) *jen.File {
	f := s.newFile("")
	sizeConsts(f, s.shape)
	if op := s.Problem.Op; op != problem.OpFprop {
		genGradShape(f, s)
		return f
	}
	elemDoc, outConsts := "bytes of one element of every tensor", []constant(nil)
	if p := s.Problem; p.OutDiffers() {
		elemDoc = "bytes of one element of in, filter and bias (out has OutputElementBytes)"
		outConsts = []constant{
			{name: "OutputElementBytes", doc: fmt.Sprintf("bytes of one element of out (and of a residual): %s, the output precision", p.OutPrecision), value: lit(p.OutElementBytes())},
		}
	}
	cs := tensorConsts(s, tensorDocs{elem: elemDoc, input: "N*C*H*W", filter: "K*(C/Groups)*R*S", bias: "K, or 0 without bias",
		output: "N*K*P*Q", flops: "multiply-adds of one Forward, two operations each"})
	cs = append(append(append(cs, outConsts...), kernelConsts(s)...), launchConsts(s)...)
	constGroup(f, "The tensors and the work of one Forward, what the kernel was tuned for, and\n"+launchDoc, cs)
	return f
}

// lit is a literal constant value.
func lit(v any) jen.Code { return jen.Lit(v) }

// tensorDocs are the line comments of tensorConsts' constants that differ
// between packages: ElementBytes', the element counts' and FLOPs'.
type tensorDocs struct {
	elem, input, filter, bias, output, flops string
}

// tensorConsts are the constants of the tensors and the work of s's
// problem: element size and counts, FLOPs, the shape, the precision and
// the layout.
func tensorConsts(s *spec, d tensorDocs) []constant {
	sh := s.shape
	in, filter, bias, out := sh.Elements()
	return []constant{
		{name: "ElementBytes", doc: d.elem, value: lit(s.elem.bytes)},
		{name: "InputElems", doc: d.input, value: lit(in)},
		{name: "FilterElems", doc: d.filter, value: lit(filter)},
		{name: "BiasElems", doc: d.bias, value: lit(bias)},
		{name: "OutputElems", doc: d.output, value: lit(out)},
		{name: "FLOPs", doc: d.flops, value: floatLit(sh.FLOPs())},
		{name: "Shape", doc: "canonical shape", value: lit(sh.String())},
		{name: "Precision", doc: s.elem.arith, value: lit(string(s.Problem.Precision)), typ: jen.Qual(problemPath, "Precision")},
		{name: "Layout", doc: "filter " + s.Problem.Layout.FilterLayout(), value: lit(string(s.Problem.Layout)), typ: jen.Qual(problemPath, "Layout")},
	}
}

// kernelConsts are the constants of a one-op package's kernel.
func kernelConsts(s *spec) []constant {
	return []constant{
		{name: "TunedArch", doc: tunedArchDoc(s), value: lit(s.Arch)},
	}
}

// launchDoc ends the doc of the group that holds launchConsts.
const launchDoc = "its launch for launchers outside Go (convgen's docs/usage.md), one a line for scripts."

// launchConsts are the constants of a one-op package's launch, for
// launchers outside Go: the kernel's name in the embedded CUBIN (the PTX's
// in an untuned package), its grid, block and dynamic shared memory, and
// its prologue's name (kernels/launch.PrologueSuffix) where its module has
// one (PrologueName is absent otherwise). They have no line comment, so that a script reads each with a
// regular expression (NAME = VALUE, the line's end after the value), as
// ../shared/tools/check-against-pytorch.py does.
func launchConsts(s *spec) []constant {
	cs := []constant{
		{name: "KernelName", value: lit(s.Kernel)},
		{name: "GridX", value: lit(s.Grid[0])}, {name: "GridY", value: lit(s.Grid[1])}, {name: "GridZ", value: lit(s.Grid[2])},
		{name: "BlockX", value: lit(s.Block[0])}, {name: "BlockY", value: lit(s.Block[1])}, {name: "BlockZ", value: lit(s.Block[2])},
		{name: "SharedBytes", value: lit(s.SharedBytes)},
	}
	if hasPrologue(s) {
		cs = append(cs, constant{name: "PrologueName", value: lit(s.Kernel + launch.PrologueSuffix)})
	}
	return cs
}

// hasPrologue reports whether the kernel's module has a prologue
// (kernels/launch.PrologueSuffix): the CUBIN's symbol table, or the PTX of
// an untuned package, names it.
func hasPrologue(s *spec) bool {
	name := s.Kernel + launch.PrologueSuffix
	return bytes.Contains(s.CUBIN, []byte(name+"\x00")) || strings.Contains(s.PTX, ".entry "+name+"(")
}

// sizeConsts adds the constants of the convolution's sizes, which every
// package has.
func sizeConsts(f *jen.File, sh problem.Shape) {
	constGroup(f, "The convolution's sizes (the package documentation says what it computes).", []constant{
		{name: "N", doc: "batch size", value: lit(sh.N)},
		{name: "C", doc: "input channels", value: lit(sh.C)},
		{name: "H", doc: "input height", value: lit(sh.H)},
		{name: "W", doc: "input width", value: lit(sh.W)},
		{name: "K", doc: "output channels (filters)", value: lit(sh.K)},
		{name: "R", doc: "filter height", value: lit(sh.R)},
		{name: "S", doc: "filter width", value: lit(sh.S)},
		{name: "P", doc: "output height, (H+2*PadH-DilationH*(R-1)-1)/StrideH + 1", value: lit(sh.P())},
		{name: "Q", doc: "output width, (W+2*PadW-DilationW*(S-1)-1)/StrideW + 1", value: lit(sh.Q())},
		{name: "StrideH", doc: "vertical step between filter positions", value: lit(sh.StrideH)},
		{name: "StrideW", doc: "horizontal step between filter positions", value: lit(sh.StrideW)},
		{name: "PadH", doc: "zero rows added above and below the input", value: lit(sh.PadH)},
		{name: "PadW", doc: "zero columns added left and right of the input", value: lit(sh.PadW)},
		{name: "DilationH", doc: "vertical step between filter taps", value: lit(sh.DilationH)},
		{name: "DilationW", doc: "horizontal step between filter taps", value: lit(sh.DilationW)},
		{name: "Groups", doc: "channel groups; each filter sees C/Groups input channels", value: lit(sh.Groups)},
		{name: "HasBias", doc: "whether a bias of K elements is added to the output", value: lit(sh.Bias)},
	})
}

// genGradShape adds the constants of a gradient op's package: the
// tensors by their forward names (InputElems is X's and dX's count,
// OutputElems dY's), the op and its work.
func genGradShape(f *jen.File, s *spec) {
	method := gradMethod(s.Problem.Op)
	biasDoc := "K, or 0 without bias"
	if s.Problem.Op == problem.OpWgrad {
		biasDoc = "K float32 values of dBias, or 0 without bias"
	}
	cs := []constant{{name: "Op", doc: "the computation: " + s.Problem.Op.String(), value: problemQ(opConst(s.Problem.Op)), typ: jen.Qual(problemPath, "Op")}}
	cs = append(cs, tensorConsts(s, tensorDocs{elem: "bytes of one element of X, dX, W, dW and dY", input: "N*C*H*W, of X and dX",
		filter: "K*(C/Groups)*R*S, of W and dW", bias: biasDoc, output: "N*K*P*Q, of dY", flops: "multiply-adds of one " + method + ", two operations each"})...)
	cs = append(append(cs, kernelConsts(s)...), launchConsts(s)...)
	constGroup(f, fmt.Sprintf("The tensors and the work of one %s, what the kernel was tuned for, and\n%s", method, launchDoc), cs)
}

// genShapeTest renders shape_test.go: the spec handed to convrt is valid
// and agrees with the constants (no GPU needed).
func genShapeTest(s *spec) *jen.File {
	f := s.newFile("")
	sh := jen.Id("spec").Dot("Problem").Dot("Shape")
	decl(f, "TestSpec checks that the spec Load hands to convrt agrees with the constants.",
		jen.Func().Id("TestSpec").Params(tT()).Block(
			jen.If(jen.Err().Op(":=").Id("spec").Dot("Validate").Call(), jen.Err().Op("!=").Nil()).Block(
				id("t").Dot("Fatal").Call(jen.Err()),
			),
			jen.List(id("in"), id("filter"), id("bias"), id("out")).Op(":=").Add(sh.Clone()).Dot("Elements").Call(),
			jen.If(jen.Index(jen.Lit(6)).Int().Values(id("in"), id("filter"), id("bias"), id("out"), sh.Clone().Dot("P").Call(), sh.Clone().Dot("Q").Call()).Op("!=").
				Index(jen.Lit(6)).Int().Values(id("InputElems"), id("FilterElems"), id("BiasElems"), id("OutputElems"), id("P"), id("Q")).Op("||").
				Add(sh.Clone()).Dot("String").Call().Op("!=").Id("Shape").Op("||").
				Add(sh.Clone()).Dot("FLOPs").Call().Op("!=").Id("FLOPs").Op("||").
				Id("Precision").Dot("ElementBytes").Call().Op("!=").Id("ElementBytes").Add(outCheck(s))).Block(
				errorfT("the spec's problem %+v disagrees with the constants", jen.Id("spec").Dot("Problem")),
			),
		))
	return f
}

// outCheck is the rest of TestSpec's condition for a package whose
// output type differs from the input's: the spec's output element size
// against OutputElementBytes; nothing otherwise.
func outCheck(s *spec) jen.Code {
	if !s.Problem.OutDiffers() {
		return jen.Null()
	}
	p := jen.Id("spec").Dot("Problem")
	return jen.Op("||").Add(p.Clone()).Dot("OutElementBytes").Call().Op("!=").Id("OutputElementBytes")
}

// tunedArchDoc documents TunedArch.
func tunedArchDoc(s *spec) string {
	if s.Untuned {
		return "architecture of the embedded PTX: the package is untuned and has no CUBIN"
	}
	return "architecture of the embedded CUBIN; other GPUs load the PTX"
}
