package epilogue

import (
	"fmt"
	"math"
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
func CUDA(c Chain) string {
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
	fmt.Fprintf(&b, "__device__ __forceinline__ float %s(float y, int k, const float* __restrict__ scale, const float* __restrict__ shift, float z)\n{\n", FuncName)
	b.WriteString("    (void)k; (void)scale; (void)shift; (void)z;\n")
	for _, e := range c {
		fmt.Fprintf(&b, "    { // %s\n", e)
		for _, line := range cudaElement(e) {
			b.WriteString("        " + line + "\n")
		}
		b.WriteString("    }\n")
	}
	b.WriteString("    return y;\n}\n")
	return b.String()
}

// cudaElement returns the statements that apply e to the float y.
func cudaElement(e Element) []string {
	switch e.Op {
	case ScaleShift:
		return []string{"y = fmaf(scale[k], y, shift[k]);"}
	case Residual:
		if e.Alpha == 1 {
			return []string{"y = y + z;"}
		}
		return []string{fmt.Sprintf("y = fmaf(%s, z, y);", floatLiteral(e.Alpha))}
	case ReLU:
		return []string{"y = (y < 0.0f) ? 0.0f : y;"}
	case ReLU6:
		return []string{"y = (y < 0.0f) ? 0.0f : ((y > 6.0f) ? 6.0f : y);"}
	case LeakyReLU:
		return []string{fmt.Sprintf("y = (y > 0.0f) ? y : %s * y;", floatLiteral(e.Alpha))}
	case Clamp:
		lo, hi := floatLiteral(e.Lo), floatLiteral(e.Hi)
		return []string{fmt.Sprintf("y = (y < %s) ? %s : ((y > %s) ? %s : y);", lo, lo, hi, hi)}
	case Sigmoid:
		return []string{"y = 1.0f / (1.0f + expf(-y));"}
	case Tanh:
		return []string{"y = tanhf(y);"}
	case GELU:
		return []string{fmt.Sprintf("y = 0.5f * y * erfcf(%s * y);", floatLiteral(float32(-1/math.Sqrt2)))}
	case GELUTanh:
		// 0.5·(1+tanh(u)) = 1/(1+exp(−2u)); u2 = 2u = 2·√(2/π)·(y+0.044715·y³).
		return []string{
			fmt.Sprintf("const float u2 = %s * (y + 0.044715f * y * y * y);", floatLiteral(float32(2*math.Sqrt(2/math.Pi)))),
			"y = y / (1.0f + expf(-u2));",
		}
	case SiLU:
		return []string{"y = y / (1.0f + expf(-y));"}
	case Hardswish:
		return []string{
			"const float r = y + 3.0f;",
			"y = y * ((r < 0.0f) ? 0.0f : ((r > 6.0f) ? 6.0f : r)) / 6.0f;",
		}
	case Mish:
		return []string{
			"const float sp = ((y > 0.0f) ? y : 0.0f) + log1pf(expf(-fabsf(y)));",
			"y = y * tanhf(sp);",
		}
	}
	panic(fmt.Sprintf("epilogue: CUDA of an invalid element (op %s)", e.Op))
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
