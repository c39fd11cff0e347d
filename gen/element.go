package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/convgen/convgen/problem"
)

// element describes how the generated code holds one tensor element on the
// host: its Go type, how it converts to and from float64, and how the test
// fills device memory with NaN. Every 4-byte precision shares float32.
//
// To serve a 2-byte precision (fp16, bf16), add a case to elementOf with
// goType "uint16", bit-level conversions in toElem and fromElem (round to
// nearest even), memset "MemsetD16" and the type's quiet NaN (0x7e00 for
// fp16, 0x7fc0 for bf16); nothing else in the generator depends on the type.
type element struct {
	goType   string                    // Go type of one element, e.g. "float32"
	bytes    int                       // size of one element, equals Precision.ElementBytes
	data     string                    // how the doc names the data type, e.g. "float32"
	arith    string                    // how the doc names the arithmetic
	memset   string                    // gorgonia.org/cu function that fills elements of this size
	nanBits  uint64                    // a quiet NaN of the type, as the memset value
	nanLit   string                    // nanBits written in the generated code
	toElem   func(v jen.Code) jen.Code // float64 v → element
	fromElem func(e jen.Code) jen.Code // element e → float64
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
			memset:   "MemsetD32",
			nanBits:  0x7fc00000,
			nanLit:   "0x7fc00000",
			toElem:   func(v jen.Code) jen.Code { return jen.Float32().Call(v) },
			fromElem: func(x jen.Code) jen.Code { return jen.Float64().Call(x) },
		}
		switch p {
		case problem.FP32:
			e.arith = "strict FP32 arithmetic (FFMA)"
		case problem.TF32:
			e.arith = "TF32 tensor cores (operands rounded to TF32) with FP32 accumulation"
		default:
			e.arith = "split-TF32 tensor cores (3xTF32), FP32-accurate"
		}
	case problem.FP16, problem.BF16:
		return element{}, fmt.Errorf("gen: precision %s bindings are not supported yet", p)
	default:
		return element{}, fmt.Errorf("gen: precision %q: unknown (known: fp32, tf32, 3xtf32, fp16, bf16)", p)
	}
	if e.bytes != p.ElementBytes() {
		return element{}, fmt.Errorf("gen: precision %s: host type %s has %d bytes, the precision %d", p, e.goType, e.bytes, p.ElementBytes())
	}
	return e, nil
}
