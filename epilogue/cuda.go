package epilogue

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FuncName is the name of the __device__ function CUDA emits.
const FuncName = "convgen_epilogue"

// CUDA returns CUDA C++ source defining
//
//	__device__ __forceinline__ float convgen_epilogue(float y, int k,
//	    const float* __restrict__ scale, const float* __restrict__ shift, float z)
//
// which applies c to y, the output value at output channel k (bias
// included), reading scale[k] and shift[k] only if c.NeedsScaleShift() and
// z, the residual tensor's value at y's position, only if c.NeedsResidual().
// The chain's parameters are compiled in as float literals. For the empty
// chain the function returns y.
//
// The code uses CUDA's accurate single-precision functions (expf, erfcf,
// tanhf, log1pf; no intrinsics, no fast-math) in forms that neither cancel
// nor overflow in float: gelu as 0.5·y·erfcf(−y/√2), gelu_tanh as
// y/(1+expf(−2u)) (0.5·(1+tanh u) = sigmoid(2u)), sigmoid as
// 1/(1+expf(−y)), silu as y/(1+expf(−y)), mish with softplus as
// max(y,0)+log1pf(expf(−|y|)), scale_shift and a scaled residual as one
// fmaf; and comparisons rather than fmaxf/fminf, so that NaN propagates as
// in PyTorch. It needs no header. CUDA panics on a chain Validate rejects;
// Parse never returns one.
func CUDA(c Chain) string { return emit(c, f32, FuncName) }

// emit writes the __device__ function name that applies c in dialect d.
func emit(c Chain, d dialect, name string) string {
	// A non-finite parameter would be emitted as a literal that is not C++
	// ("NaN.0f"), and lo > hi as a clamp that is not the documented one.
	if err := c.Validate(); err != nil {
		panic(fmt.Sprintf("epilogue: CUDA of an invalid chain: %v", err))
	}
	var b strings.Builder
	desc := c.String()
	if desc == "" {
		desc = "(empty)"
	}
	fmt.Fprintf(&b, "// convgen epilogue: %s\n", desc)
	fmt.Fprintf(&b, "__device__ __forceinline__ %s %s(%s y, int k, const float* __restrict__ scale, const float* __restrict__ shift, %s z)\n{\n", d.typ, name, d.typ, d.typ)
	b.WriteString("    (void)k; (void)scale; (void)shift; (void)z;\n")
	for _, e := range c {
		fmt.Fprintf(&b, "    { // %s\n", e)
		for _, line := range cudaElement(e, d) {
			b.WriteString("        " + line + "\n")
		}
		b.WriteString("    }\n")
	}
	b.WriteString("    return y;\n}\n")
	return b.String()
}

// dialect is the arithmetic an emitted function computes in: its type,
// how it writes a constant and the name of a math function ("exp" is expf
// in float).
type dialect struct {
	typ string
	lit func(float64) string
	fn  func(string) string
}

// f32 is float arithmetic with CUDA's single-precision functions; f64 is
// double arithmetic, for the checking kernels' reference.
var (
	f32 = dialect{typ: "float", lit: func(v float64) string { return floatLiteral(float32(v)) }, fn: func(n string) string { return n + "f" }}
	f64 = dialect{typ: "double", lit: doubleLiteral, fn: func(n string) string { return n }}
)

// FuncName64 is the name of the __device__ function CUDA64 emits.
const FuncName64 = "convgen_epilogue64"

// CUDA64 returns CUDA C++ source defining
//
//	__device__ __forceinline__ double convgen_epilogue64(double y, int k,
//	    const float* __restrict__ scale, const float* __restrict__ shift, double z)
//
// the chain in double precision, for the checking kernels' reference: the
// same forms as CUDA, with double math functions and the chain's float32
// parameters written exactly as doubles, so that it agrees with Apply to
// rounding. CUDA64 panics on a chain Validate rejects.
func CUDA64(c Chain) string { return emit(c, f64, FuncName64) }

// cudaElement returns the statements that apply e to y in dialect d.
func cudaElement(e Element, d dialect) []string {
	l := d.lit
	switch e.Op {
	case ScaleShift:
		if d.typ == "float" {
			return []string{"y = fmaf(scale[k], y, shift[k]);"}
		}
		return []string{"y = fma((double)scale[k], y, (double)shift[k]);"}
	case Residual:
		if e.Alpha == 1 {
			return []string{"y = y + z;"}
		}
		return []string{fmt.Sprintf("y = %s(%s, z, y);", d.fn("fma"), l(float64(e.Alpha)))}
	case ReLU:
		return []string{fmt.Sprintf("y = (y < %s) ? %s : y;", l(0), l(0))}
	case ReLU6:
		return []string{fmt.Sprintf("y = (y < %s) ? %s : ((y > %s) ? %s : y);", l(0), l(0), l(6), l(6))}
	case LeakyReLU:
		return []string{fmt.Sprintf("y = (y > %s) ? y : %s * y;", l(0), l(float64(e.Alpha)))}
	case Clamp:
		lo, hi := l(float64(e.Lo)), l(float64(e.Hi))
		return []string{fmt.Sprintf("y = (y < %s) ? %s : ((y > %s) ? %s : y);", lo, lo, hi, hi)}
	case Sigmoid:
		return []string{fmt.Sprintf("y = %s / (%s + %s(-y));", l(1), l(1), d.fn("exp"))}
	case Tanh:
		return []string{fmt.Sprintf("y = %s(y);", d.fn("tanh"))}
	case GELU:
		return []string{fmt.Sprintf("y = %s * y * %s(%s * y);", l(0.5), d.fn("erfc"), l(-1/math.Sqrt2))}
	case GELUTanh:
		// 0.5·(1+tanh(u)) = 1/(1+exp(−2u)); u2 = 2u = 2·√(2/π)·(y+0.044715·y³).
		return []string{
			fmt.Sprintf("const %s u2 = %s * (y + %s * y * y * y);", d.typ, l(2*math.Sqrt(2/math.Pi)), l(0.044715)),
			fmt.Sprintf("y = y / (%s + %s(-u2));", l(1), d.fn("exp")),
		}
	case SiLU:
		return []string{fmt.Sprintf("y = y / (%s + %s(-y));", l(1), d.fn("exp"))}
	case Hardswish:
		return []string{
			fmt.Sprintf("const %s r = y + %s;", d.typ, l(3)),
			fmt.Sprintf("y = y * ((r < %s) ? %s : ((r > %s) ? %s : r)) / %s;", l(0), l(0), l(6), l(6), l(6)),
		}
	case Mish:
		return []string{
			fmt.Sprintf("const %s sp = ((y > %s) ? y : %s) + %s(%s(-%s(y)));", d.typ, l(0), l(0), d.fn("log1p"), d.fn("exp"), d.fn("fabs")),
			fmt.Sprintf("y = y * %s(sp);", d.fn("tanh")),
		}
	}
	panic(fmt.Sprintf("epilogue: CUDA of an invalid element (op %s)", e.Op))
}

// doubleLiteral writes v as a C++ double literal that reads back as v: the
// shortest decimal, with ".0" added when it has neither a point nor an
// exponent, and parentheses around a negative value.
func doubleLiteral(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	if strings.HasPrefix(s, "-") {
		s = "(" + s + ")"
	}
	return s
}

// floatLiteral writes v as a C++ float literal that reads back as v: the
// shortest decimal, with ".0" added when it has neither a point nor an
// exponent, an "f" suffix, and parentheses around a negative value.
func floatLiteral(v float32) string {
	s := formatNumber(v)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	s += "f"
	if strings.HasPrefix(s, "-") {
		s = "(" + s + ")"
	}
	return s
}
