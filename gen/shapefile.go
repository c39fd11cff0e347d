package gen

import (
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
)

// constant is one generated constant with its doc comment.
type constant struct {
	name, doc string
	value     jen.Code
}

// constGroup renders const ( ... ) with a doc comment on the group and on
// each constant.
func constGroup(f *jen.File, groupDoc string, cs []constant) {
	defs := make([]jen.Code, 0, 2*len(cs))
	for _, c := range cs {
		defs = append(defs, doc(c.name+" "+c.doc), jen.Id(c.name).Op("=").Add(c.value))
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

// genShape renders shape.go: the problem as constants, and the tag-free
// handle types.
func genShape(s *spec) *jen.File {
	f := s.newFile("")
	sh := s.shape
	in, filter, bias, out := sh.Elements()
	lit := func(v any) jen.Code { return jen.Lit(v) }

	constGroup(f, "The convolution's sizes.", []constant{
		{"N", "is the batch size.", lit(sh.N)},
		{"C", "is the number of input channels.", lit(sh.C)},
		{"H", "is the input height.", lit(sh.H)},
		{"W", "is the input width.", lit(sh.W)},
		{"K", "is the number of output channels (filters).", lit(sh.K)},
		{"R", "is the filter height.", lit(sh.R)},
		{"S", "is the filter width.", lit(sh.S)},
		{"P", "is the output height, (H+2*PadH-DilationH*(R-1)-1)/StrideH + 1.", lit(sh.P())},
		{"Q", "is the output width, (W+2*PadW-DilationW*(S-1)-1)/StrideW + 1.", lit(sh.Q())},
		{"StrideH", "is the vertical step between filter positions.", lit(sh.StrideH)},
		{"StrideW", "is the horizontal step between filter positions.", lit(sh.StrideW)},
		{"PadH", "is the number of zero rows added above and below the input.", lit(sh.PadH)},
		{"PadW", "is the number of zero columns added left and right of the input.", lit(sh.PadW)},
		{"DilationH", "is the vertical step between filter taps.", lit(sh.DilationH)},
		{"DilationW", "is the horizontal step between filter taps.", lit(sh.DilationW)},
		{"Groups", "is the number of channel groups; each filter sees C/Groups input channels.", lit(sh.Groups)},
		{"HasBias", "says whether a bias of K elements is added to the output.", lit(sh.Bias)},
	})
	constGroup(f, "Element counts of the tensors, and the work of one Forward.", []constant{
		{"ElementBytes", "is the size in bytes of one element of every tensor.", lit(s.elem.bytes)},
		{"InputElems", "is the number of input elements, N*C*H*W.", lit(in)},
		{"FilterElems", "is the number of filter elements, K*(C/Groups)*R*S.", lit(filter)},
		{"BiasElems", "is the number of bias elements: K, or 0 without bias.", lit(bias)},
		{"OutputElems", "is the number of output elements, N*K*P*Q.", lit(out)},
		{"FLOPs", "counts the multiply-adds of one Forward as two operations each (bias adds not counted).", floatLit(sh.FLOPs())},
	})
	constGroup(f, "What the kernel was generated and tuned for.", []constant{
		{"Shape", "is the canonical shape string (problem.Shape.String in convgen).", lit(sh.String())},
		{"Precision", "is the arithmetic precision: " + s.elem.arith + ".", lit(string(s.Problem.Precision))},
		{"Layout", "is the tensor layout; the filter's is " + s.Problem.Layout.FilterLayout() + ".", lit(string(s.Problem.Layout))},
		{"TunedArch", "is the GPU architecture of the embedded CUBIN; other GPUs load the PTX.", lit(s.Arch)},
		{"KernelName", "is the name of the kernel's __global__ function.", lit(s.Kernel)},
	})
	constGroup(f, "The launch geometry Forward uses.", []constant{
		{"GridX", "is the number of blocks along x.", lit(s.Grid[0])},
		{"GridY", "is the number of blocks along y.", lit(s.Grid[1])},
		{"GridZ", "is the number of blocks along z.", lit(s.Grid[2])},
		{"BlockX", "is the number of threads per block along x.", lit(s.Block[0])},
		{"BlockY", "is the number of threads per block along y.", lit(s.Block[1])},
		{"BlockZ", "is the number of threads per block along z.", lit(s.Block[2])},
		{"SharedBytes", "is the dynamic shared memory per block, in bytes.", lit(s.SharedBytes)},
	})
	decl(f, "DevicePtr is a device memory address. A gorgonia.org/cu DevicePtr converts\nwith DevicePtr(p), or PtrOf(p) in cuda builds.",
		jen.Type().Id("DevicePtr").Uintptr())
	decl(f, "Alignment is the byte alignment Forward requires of every device address\n(the kernels load and store up to 16 bytes at a time; cuMemAlloc returns\n256-byte aligned memory).",
		jen.Const().Id("Alignment").Op("=").Lit(16))
	checkDoc := "checkPtrs returns an error naming the first of out, in, filter and bias\nthat is 0 or not Alignment-aligned, or nil."
	if !s.shape.Bias {
		checkDoc = "checkPtrs returns an error naming the first of out, in and filter that is\n0 or not Alignment-aligned, or nil (the problem has no bias: bias is not\nused)."
	}
	decl(f, checkDoc, jen.Func().Id("checkPtrs").Params(
		jen.List(jen.Id("out"), jen.Id("in"), jen.Id("filter"), jen.Id("bias")).Id("DevicePtr")).Error().Block(
		jen.For(jen.List(jen.Id("_"), jen.Id("a")).Op(":=").Range().Index(jen.Op("...")).Struct(
			jen.Id("name").String(), jen.Id("p").Id("DevicePtr"),
		).ValuesFunc(func(g *jen.Group) {
			for _, n := range s.checkedPtrs() {
				g.Values(jen.Lit(n), jen.Id(n))
			}
		})).Block(
			jen.If(jen.Id("a").Dot("p").Op("==").Lit(0)).Block(
				jen.Return(s.errorf("forward: %s is a null device address", jen.Id("a").Dot("name"))),
			),
			jen.If(jen.Id("a").Dot("p").Op("%").Id("Alignment").Op("!=").Lit(0)).Block(
				jen.Return(s.errorf("forward: %s (%#x) is not %d-byte aligned", jen.Id("a").Dot("name"), jen.Uintptr().Call(jen.Id("a").Dot("p")), jen.Id("Alignment"))),
			),
		),
		jen.Return(jen.Nil()),
	))
	decl(f, "Stream is a raw CUstream handle; 0 is the legacy default stream. In cuda\nbuilds StreamOf converts a gorgonia.org/cu Stream.",
		jen.Type().Id("Stream").Uintptr())
	return f
}

// checkedPtrs names the Forward parameters checkPtrs checks: bias only when
// the problem has one.
func (s *spec) checkedPtrs() []string {
	if s.shape.Bias {
		return []string{"out", "in", "filter", "bias"}
	}
	return []string{"out", "in", "filter"}
}

// genShapeTest renders shape_test.go: checkPtrs (no GPU needed) accepts
// aligned addresses and names the one that is 0 or misaligned.
func genShapeTest(s *spec) *jen.File {
	f := s.newFile("")
	var names []jen.Code
	for _, n := range s.checkedPtrs() {
		names = append(names, jen.Lit(n))
	}
	call := func(p jen.Code) *jen.Statement {
		return id("checkPtrs").Call(jen.Add(p).Index(jen.Lit(0)), jen.Add(p).Index(jen.Lit(1)), jen.Add(p).Index(jen.Lit(2)), jen.Add(p).Index(jen.Lit(3)))
	}
	wants := func(word string) *jen.Statement {
		return jen.Id("err").Op("==").Nil().Op("||").
			Op("!").Qual(stringsPath, "Contains").Call(jen.Id("err").Dot("Error").Call(), jen.Id("name")).Op("||").
			Op("!").Qual(stringsPath, "Contains").Call(jen.Id("err").Dot("Error").Call(), jen.Lit(word))
	}
	decl(f, "TestCheckPtrs checks what Forward refuses before launching: a null or\nmisaligned device address.",
		jen.Func().Id("TestCheckPtrs").Params(tT()).Block(
			jen.Const().Id("base").Id("DevicePtr").Op("=").Lit(1<<20),
			jen.Id("ok").Op(":=").Index(jen.Lit(4)).Id("DevicePtr").Values(id("base"), id("base").Op("+").Id("Alignment"), id("base").Op("+").Lit(2).Op("*").Id("Alignment"), id("base").Op("+").Lit(3).Op("*").Id("Alignment")),
			jen.If(jen.Err().Op(":=").Add(call(id("ok"))), jen.Err().Op("!=").Nil()).Block(
				errorfT("aligned addresses refused: %v", jen.Err()),
			),
			jen.For(jen.List(jen.Id("i"), jen.Id("name")).Op(":=").Range().Index().String().Values(names...)).Block(
				jen.Id("p").Op(":=").Id("ok"),
				jen.Id("p").Index(jen.Id("i")).Op("+=").Id("Alignment").Op("/").Lit(2),
				jen.If(jen.Err().Op(":=").Add(call(id("p"))), wants("aligned")).Block(
					errorfT("%s misaligned: got %v, want an error naming it", jen.Id("name"), jen.Err()),
				),
				jen.Id("p").Index(jen.Id("i")).Op("=").Lit(0),
				jen.If(jen.Err().Op(":=").Add(call(id("p"))), wants("null")).Block(
					errorfT("%s null: got %v, want an error naming it", jen.Id("name"), jen.Err()),
				),
			),
		))
	if !s.shape.Bias {
		decl(f, "TestCheckPtrsNoBias checks that bias, unused by a problem without one, may be 0.",
			jen.Func().Id("TestCheckPtrsNoBias").Params(tT()).Block(
				jen.If(jen.Err().Op(":=").Id("checkPtrs").Call(jen.Lit(1<<20), jen.Lit(1<<20), jen.Lit(1<<20), jen.Lit(0)), jen.Err().Op("!=").Nil()).Block(
					errorfT("bias 0 refused without a bias: %v", jen.Err()),
				),
			))
	}
	return f
}
