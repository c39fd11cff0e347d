package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/convgen/convgen/problem"
)

// element describes how the generated code holds one tensor element on the
// host: its Go type, how it converts to and from float64, and how the test
// fills device memory with NaN. Every 4-byte precision shares float32; the
// 2-byte ones (fp16, bf16) hold the element's bits in a uint16 and convert
// with helpers generated into the test file (see declElem).
type element struct {
	goType   string                    // Go type of one element, e.g. "float32"
	bytes    int                       // size of one element, equals Precision.ElementBytes
	data     string                    // how the doc names the data type, e.g. "float32"
	memDoc   string                    // how the doc's Memory section names one element and its size
	arith    string                    // how the doc names the arithmetic
	memset   string                    // gorgonia.org/cu function that fills elements of this size
	nanBits  uint64                    // a quiet NaN of the type, as the memset value
	nanLit   string                    // nanBits written in the generated code
	toDoc    string                    // doc comment of the generated toElem
	fromDoc  string                    // doc comment of the generated fromElem
	toElem   func(v jen.Code) jen.Code // float64 v → element
	fromElem func(e jen.Code) jen.Code // element e → float64
	helpers  []helper                  // functions toElem and fromElem call, generated after them
	// showVerb and show print an element in the test's failure messages:
	// a 2-byte element as its value and its bits, not as a bare integer.
	showVerb string
	show     func(e jen.Code) []jen.Code
}

// helper is one generated function with its doc comment.
type helper struct {
	doc  string
	code jen.Code
}

// elementOf returns the host element type of a precision.
func elementOf(p problem.Precision) (element, error) {
	var e element
	switch p {
	case problem.FP32, problem.TF32, problem.TF32x3:
		e = element{
			goType:   "float32",
			bytes:    4,
			data:     "float32",
			memDoc:   "float32 (ElementBytes = 4 bytes each)",
			memset:   "MemsetD32",
			nanBits:  0x7fc00000,
			nanLit:   "0x7fc00000",
			toDoc:    "toElem rounds v to an element.",
			fromDoc:  "fromElem widens e to float64.",
			toElem:   func(v jen.Code) jen.Code { return jen.Float32().Call(v) },
			fromElem: func(x jen.Code) jen.Code { return jen.Float64().Call(x) },
			showVerb: "%v",
			show:     func(x jen.Code) []jen.Code { return []jen.Code{x} },
		}
		switch p {
		case problem.FP32:
			e.arith = "strict FP32 arithmetic (FFMA)"
		case problem.TF32:
			e.arith = "TF32 tensor cores (operands rounded to TF32) with FP32 accumulation"
		default:
			e.arith = "split-TF32 tensor cores (3xTF32), FP32-accurate"
		}
	case problem.FP16:
		e = half(p, "fp16 (IEEE binary16)", "FP16", 0x7e00, "fp16FromFloat32", "fp16ToFloat64", fp16Helpers())
	case problem.BF16:
		e = half(p, "bf16 (bfloat16)", "BF16", 0x7fc0, "bf16FromFloat32", "bf16ToFloat64", bf16Helpers())
	default:
		return element{}, fmt.Errorf("gen: precision %q: unknown (known: fp32, tf32, 3xtf32, fp16, bf16)", p)
	}
	if e.bytes != p.ElementBytes() {
		return element{}, fmt.Errorf("gen: precision %s: host type %s has %d bytes, the precision %d", p, e.goType, e.bytes, p.ElementBytes())
	}
	return e, nil
}

// half returns the element of a 2-byte precision: its bits in a uint16,
// converted by the helpers encode (float32 → bits, round to nearest even)
// and decode (bits → float64, exact).
func half(p problem.Precision, data, upper string, nan uint64, encode, decode string, helpers []helper) element {
	name := string(p)
	return element{
		goType:  "uint16",
		bytes:   2,
		data:    data,
		memDoc:  fmt.Sprintf("%s (ElementBytes = 2 bytes each; Go code holds one as the uint16 of its bits)", name),
		arith:   upper + " operands with FP32 accumulation",
		memset:  "MemsetD16",
		nanBits: nan,
		nanLit:  fmt.Sprintf("%#04x", nan),
		toDoc: fmt.Sprintf("toElem rounds v to float32, the precision the test draws its data in, and\n"+
			"then to the nearest %s, ties to even.", name),
		fromDoc:  fmt.Sprintf("fromElem decodes the %s e to float64, exactly.", name),
		toElem:   func(v jen.Code) jen.Code { return jen.Id(encode).Call(jen.Float32().Call(v)) },
		fromElem: func(x jen.Code) jen.Code { return jen.Id(decode).Call(x) },
		helpers:  helpers,
		showVerb: "%v (bits %#04x)",
		show:     func(x jen.Code) []jen.Code { return []jen.Code{jen.Id("fromElem").Call(x), x} },
	}
}

// declElem declares the element type of the generated test and its
// conversions: elem, nanBits, toElem, fromElem and their helpers.
func declElem(f *jen.File, e element) {
	decl(f, "elem is the host type of one tensor element.",
		jen.Type().Id("elem").Op("=").Id(e.goType))
	decl(f, "nanBits is a quiet NaN of elem. The output is filled with it before each\nlaunch, so that an element the kernel does not write stays NaN.",
		jen.Const().Id("nanBits").Op("=").Op(e.nanLit))
	decl(f, e.toDoc,
		jen.Func().Id("toElem").Params(id("v").Float64()).Id("elem").Block(jen.Return(e.toElem(id("v")))))
	decl(f, e.fromDoc,
		jen.Func().Id("fromElem").Params(id("e").Id("elem")).Float64().Block(jen.Return(e.fromElem(id("e")))))
	for _, h := range e.helpers {
		decl(f, h.doc, h.code)
	}
}

// hex writes v as a hexadecimal literal.
func hex(v uint64) *jen.Statement { return jen.Op(fmt.Sprintf("%#x", v)) }

// fp16Helpers are the conversions between float32, float64 and the bits of
// an IEEE binary16: 1 sign bit, 5 exponent bits biased by 15, 10 mantissa
// bits; subnormals below 2^-14, largest finite value 65504.
func fp16Helpers() []helper {
	bits, sign, exp, mant, e := id("bits"), id("sign"), id("exp"), id("mant"), id("e")
	signOr := func(x jen.Code) *jen.Statement { return jen.Return(id("sign").Op("|").Add(x)) }
	return []helper{
		{"fp16FromFloat32 rounds f to the nearest fp16, ties to even, and returns its\n" +
			"bits. Results below the smallest normal fp16 (2^-14) are subnormal or\n" +
			"zero, results beyond the largest finite one (65504) are infinite, and a\n" +
			"NaN becomes nanBits with f's sign.",
			jen.Func().Id("fp16FromFloat32").Params(id("f").Float32()).Uint16().Block(
				jen.Id("bits").Op(":=").Qual(mathPath, "Float32bits").Call(id("f")),
				jen.Id("sign").Op(":=").Uint16().Call(bits.Clone().Op(">>").Lit(16)).Op("&").Add(hex(0x8000)),
				jen.Id("exp").Op(":=").Int().Call(bits.Clone().Op(">>").Lit(23)).Op("&").Add(hex(0xff)).Comment("biased by 127"),
				jen.Id("mant").Op(":=").Add(bits).Op("&").Add(hex(0x7fffff)),
				jen.If(exp.Clone().Op("==").Add(hex(0xff))).Block(
					jen.Comment("infinite or NaN"),
					jen.If(mant.Clone().Op("!=").Lit(0)).Block(signOr(id("nanBits"))),
					signOr(hex(0x7c00)),
				),
				jen.Id("e").Op(":=").Add(exp).Op("-").Lit(127).Op("+").Lit(15).Comment("biased by 15, as in fp16"),
				jen.If(e.Clone().Op(">=").Add(hex(0x1f))).Block(
					signOr(hex(0x7c00)).Comment("too large: infinite"),
				),
				jen.If(e.Clone().Op("<=").Lit(0)).Block(
					jen.Comment("A subnormal fp16 or zero: the float's 24-bit significand, leading"),
					jen.Comment("1 included, shifted right so that its unit becomes 2^-24."),
					jen.If(e.Clone().Op("<").Lit(-10)).Block(
						jen.Return(sign).Comment("below half the smallest subnormal (2^-25): zero"),
					),
					signOr(jen.Uint16().Call(jen.Id("roundShift").Call(mant.Clone().Op("|").Add(hex(0x800000)), jen.Uint().Call(jen.Lit(14).Op("-").Add(e))))),
				),
				jen.Comment("A normal fp16: exponent and mantissa shifted together, so that"),
				jen.Comment("rounding up carries into the exponent, and past 65504 to infinity."),
				signOr(jen.Uint16().Call(jen.Id("roundShift").Call(jen.Uint32().Call(e).Op("<<").Lit(23).Op("|").Add(mant), jen.Lit(13)))),
			)},
		{"roundShift returns x/2^n rounded to the nearest integer, ties to even,\nfor 0 < n < 32.",
			jen.Func().Id("roundShift").Params(id("x").Uint32(), id("n").Uint()).Uint32().Block(
				jen.Id("q").Op(":=").Id("x").Op(">>").Id("n"),
				jen.Id("rest").Op(":=").Id("x").Op("&").Parens(jen.Uint32().Call(jen.Lit(1)).Op("<<").Id("n").Op("-").Lit(1)),
				jen.Id("half").Op(":=").Uint32().Call(jen.Lit(1)).Op("<<").Parens(id("n").Op("-").Lit(1)),
				jen.If(id("rest").Op(">").Id("half").Op("||").Id("rest").Op("==").Id("half").Op("&&").Id("q").Op("&").Lit(1).Op("==").Lit(1)).Block(
					id("q").Op("++"),
				),
				jen.Return(id("q")),
			)},
		{"fp16ToFloat64 decodes the fp16 bits h, exactly.",
			jen.Func().Id("fp16ToFloat64").Params(id("h").Uint16()).Float64().Block(
				jen.Id("sign").Op(":=").Lit(1.0),
				jen.If(id("h").Op("&").Add(hex(0x8000)).Op("!=").Lit(0)).Block(
					id("sign").Op("=").Lit(-1),
				),
				jen.List(id("exp"), id("mant")).Op(":=").List(
					jen.Int().Call(id("h").Op(">>").Lit(10)).Op("&").Add(hex(0x1f)),
					jen.Float64().Call(id("h").Op("&").Add(hex(0x3ff)))),
				jen.Switch(exp).Block(
					jen.Case(jen.Lit(0)).Block(
						jen.Comment("zero or subnormal: mant × 2^-24"),
						jen.Return(sign.Clone().Op("*").Qual(mathPath, "Ldexp").Call(mant, jen.Lit(-24))),
					),
					jen.Case(hex(0x1f)).Block(
						jen.Comment("infinite or NaN"),
						jen.If(mant.Clone().Op("!=").Lit(0)).Block(jen.Return(jen.Qual(mathPath, "NaN").Call())),
						jen.Return(jen.Qual(mathPath, "Inf").Call(jen.Int().Call(sign))),
					),
				),
				jen.Return(sign.Clone().Op("*").Qual(mathPath, "Ldexp").Call(jen.Lit(1024).Op("+").Add(mant), exp.Clone().Op("-").Lit(25))).
					Comment("(1 + mant/1024) × 2^(exp-15)"),
			)},
	}
}

// bf16Helpers are the conversions between float32, float64 and the bits of
// a bfloat16: the upper half of a float32's bits.
func bf16Helpers() []helper {
	bits := id("bits")
	return []helper{
		{"bf16FromFloat32 rounds f to the nearest bf16, ties to even, and returns its\n" +
			"bits: the upper half of f's bits, rounded by the lower half. A NaN becomes\n" +
			"nanBits with f's sign, since rounding could turn it into an infinity.",
			jen.Func().Id("bf16FromFloat32").Params(id("f").Float32()).Uint16().Block(
				jen.Id("bits").Op(":=").Qual(mathPath, "Float32bits").Call(id("f")),
				jen.If(jen.Qual(mathPath, "IsNaN").Call(jen.Float64().Call(id("f")))).Block(
					jen.Return(jen.Uint16().Call(bits.Clone().Op(">>").Lit(16)).Op("&").Add(hex(0x8000)).Op("|").Id("nanBits")),
				),
				jen.Comment("Adding 0x7fff carries into the upper half when the lower half is"),
				jen.Comment("above 0x8000; adding the upper half's lowest bit as well makes a tie"),
				jen.Comment("(exactly 0x8000) carry only into an odd upper half."),
				jen.Id("lsb").Op(":=").Parens(bits.Clone().Op(">>").Lit(16)).Op("&").Lit(1),
				jen.Return(jen.Uint16().Call(jen.Parens(bits.Clone().Op("+").Add(hex(0x7fff)).Op("+").Id("lsb")).Op(">>").Lit(16))),
			)},
		{"bf16ToFloat64 decodes the bf16 bits b, exactly.",
			jen.Func().Id("bf16ToFloat64").Params(id("b").Uint16()).Float64().Block(
				jen.Return(jen.Float64().Call(jen.Qual(mathPath, "Float32frombits").Call(jen.Uint32().Call(id("b")).Op("<<").Lit(16)))),
			)},
	}
}
