package gen

import (
	"fmt"

	"github.com/convgen/convgen/problem"
)

// element describes one tensor element of a precision as the generated
// package's documentation and constants state it. Every 4-byte precision
// holds float32 data; the 2-byte ones (fp16, bf16) are held in Go as the
// uint16 of their bits, converted by convrt.
type element struct {
	bytes  int    // size of one element, equals Precision.ElementBytes
	data   string // how the doc names the data type, e.g. "float32"
	memDoc string // how the doc's Memory section names one element and its size
	arith  string // how the doc names the arithmetic
}

// elementOf returns the element of a precision.
func elementOf(p problem.Precision) (element, error) {
	var e element
	switch p {
	case problem.FP32, problem.TF32, problem.TF32x3:
		e = element{bytes: 4, data: "float32", memDoc: "float32 (ElementBytes = 4 bytes each)"}
		switch p {
		case problem.FP32:
			e.arith = "strict FP32 arithmetic (FFMA)"
		case problem.TF32:
			e.arith = "TF32 tensor cores (operands rounded to TF32) with FP32 accumulation"
		default:
			e.arith = "split-TF32 tensor cores (3xTF32), FP32-accurate"
		}
	case problem.FP16:
		e = half(p, "fp16 (IEEE binary16)", "FP16", "convrt.FP16FromFloat32 and convrt.FP16ToFloat64")
	case problem.BF16:
		e = half(p, "bf16 (bfloat16)", "BF16", "convrt.BF16FromFloat32 and convrt.BF16ToFloat64")
	default:
		return element{}, fmt.Errorf("gen: precision %q: unknown (known: fp32, tf32, 3xtf32, fp16, bf16)", p)
	}
	if e.bytes != p.ElementBytes() {
		return element{}, fmt.Errorf("gen: precision %s: %d-byte elements, the precision %d", p, e.bytes, p.ElementBytes())
	}
	return e, nil
}

// half returns the element of a 2-byte precision.
func half(p problem.Precision, data, upper, convert string) element {
	return element{
		bytes:  2,
		data:   data,
		memDoc: fmt.Sprintf("%s (ElementBytes = 2 bytes each; in Go the uint16 of its bits: %s)", p, convert),
		arith:  upper + " operands with FP32 accumulation",
	}
}

// outMemDoc is how the doc's Memory section names one output element and
// its size (the input's element type names the conversions) when the output's type differs from the input's
// (problem.Problem.OutPrecision).
func outMemDoc(st problem.Storage) string {
	switch st {
	case problem.StorageFP16:
		return "fp16, OutputElementBytes = 2 bytes each"
	case problem.StorageBF16:
		return "bf16, OutputElementBytes = 2 bytes each"
	}
	return "float32, OutputElementBytes = 4 bytes each"
}

// storageConst is the name of st's constant in package problem.
func storageConst(st problem.Storage) string {
	switch st {
	case problem.StorageFP16:
		return "StorageFP16"
	case problem.StorageBF16:
		return "StorageBF16"
	}
	return "StorageFP32"
}
