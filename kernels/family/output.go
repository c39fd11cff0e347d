package family

import (
	"fmt"
	"strings"

	"github.com/convgen/convgen/problem"
)

// Output is the output's element type in every template's data
// (ShapeData.Out): the input's unless the problem stores another
// (problem.Problem.OutPrecision, -out-precision). When the types are the
// same (Differs false) every hook renders what the template rendered
// before output precisions existed, so kernel hashes stay as they are.
//
// A family that stores another type renders
//
//	{{.Out.Defs}}                  before the kernel (and before helpers
//	                               that store): out_t, to_out(float) rounding
//	                               to nearest even, out_to_float(out_t), and
//	                               for 2-byte outputs out_pack2(lo, hi)
//	{{.Out.Elem "elem_t"}}* out    the output pointer's element type: the
//	                               given input type, or out_t
//	{{.Out.Convert "from_float" V}}  the store's rounding of the FP32 value V:
//	                               the family's own function, or to_out
//
// and declares it with OutPrecisionSupport; package kernels offers a
// problem whose output type differs only to such families.
type Output struct {
	// Storage is the output's element type.
	Storage problem.Storage
	// Half and BF16 say what it is: float, or 2-byte FP16 or BF16 bits.
	Half, BF16 bool
	// Differs says that it is not the input's element type.
	Differs bool
}

// NewOutput is p's Output.
func NewOutput(p problem.Problem) Output {
	st := p.Out()
	return Output{Storage: st, Half: st.Half(), BF16: st == problem.StorageBF16, Differs: p.OutDiffers()}
}

// Type is the C type of an output element: "float" or "unsigned short".
func (o Output) Type() string {
	if o.Half {
		return "unsigned short"
	}
	return "float"
}

// Elem is the output pointer's element type: in (the input's element
// type's name in the template) when the output has the input's type, else
// out_t.
func (o Output) Elem(in string) string {
	if !o.Differs {
		return in
	}
	return "out_t"
}

// Convert is the expression that rounds the FP32 value v for the store:
// fn(v) (the family's own rounding to the input type) when the output has
// the input's type, else to_out(v).
func (o Output) Convert(fn, v string) string {
	if !o.Differs {
		return fmt.Sprintf("%s(%s)", fn, v)
	}
	return fmt.Sprintf("to_out(%s)", v)
}

// Defs is the output type's device code, "" when it is the input's: the
// macros OUT_HALF and OUT_BF16, out_t, to_out (round to nearest even; a
// NaN stays a NaN), out_to_float and, for a 2-byte type, out_pack2 (two
// values rounded, lo in the low half, for 4-byte stores of channel pairs).
// The FP16 conversions are the cvt instructions (which the CPU tests'
// shim rewrites), BF16 integer arithmetic, so they need nothing past
// sm_80.
func (o Output) Defs() string {
	if !o.Differs {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// The output is stored as %s (-out-precision), not as the input's type:\n", o.Storage)
	b.WriteString("// out_t, to_out rounds an FP32 value to it (nearest even), out_to_float reads it.\n")
	fmt.Fprintf(&b, "#define OUT_HALF %d\n#define OUT_BF16 %d\n", b2i(o.Half), b2i(o.BF16))
	fmt.Fprintf(&b, "typedef %s out_t;\n", o.Type())
	switch {
	case !o.Half:
		b.WriteString("__device__ __forceinline__ out_t to_out(float v) { return v; }\n")
		b.WriteString("__device__ __forceinline__ float out_to_float(out_t v) { return v; }\n")
	case o.BF16:
		b.WriteString(`__device__ __forceinline__ out_t to_out(float v) {
    const unsigned int bits = __float_as_uint(v);
    if (isnan(v)) return (out_t)0x7fc0u;
    return (out_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ float out_to_float(out_t v) { return __uint_as_float(((unsigned int)v) << 16); }
`)
	default:
		b.WriteString(`__device__ __forceinline__ out_t to_out(float v) {
    out_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
}
__device__ __forceinline__ float out_to_float(out_t v) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
    return f;
}
`)
	}
	if o.Half {
		b.WriteString(`__device__ __forceinline__ unsigned int out_pack2(float lo, float hi) {
    return (unsigned int)to_out(lo) | ((unsigned int)to_out(hi) << 16);
}
`)
	}
	return b.String()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// OutPrecisionSupport is implemented by the families whose kernels store
// an output type other than the input's (Output). package kernels offers
// a problem whose output type differs only to families that implement it
// and accept the type, so that a family that does not know of output
// precisions is never asked to store the wrong type.
type OutPrecisionSupport interface {
	// SupportsOutPrecision returns nil when the family's kernels for p
	// store p.Out() (p.OutDiffers() is true), or why not.
	SupportsOutPrecision(p problem.Problem) error
}
