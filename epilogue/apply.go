package epilogue

import (
	"fmt"
	"math"
)

// Apply is the float64 CPU reference of the chain: it applies c's elements
// in order to y, the convolution's output value (bias included) at output
// channel k, and returns the result. scale and shift are the per-channel
// vectors (read only when c.NeedsScaleShift(), then at least k+1 long) and
// z is the residual tensor's value at y's position (read only when
// c.NeedsResidual()).
//
// Each element computes PyTorch's definition, arranged to stay accurate in
// float64 where the textbook formula cancels or overflows, and propagates
// NaN and infinities as PyTorch's formula does (for example gelu, silu,
// hardswish and mish of −Inf are NaN: −Inf·0). Apply does not validate c
// (it runs once per output element): it panics on an element with an
// invalid Op, and its result for another chain Validate rejects is
// unspecified; Parse never returns one.
func Apply(c Chain, y float64, k int, scale, shift []float64, z float64) float64 {
	for _, e := range c {
		y = applyElement(e, y, k, scale, shift, z)
	}
	return y
}

// applyElement applies one element; see Apply.
func applyElement(e Element, y float64, k int, scale, shift []float64, z float64) float64 {
	switch e.Op {
	case ScaleShift:
		return scale[k]*y + shift[k]
	case Residual:
		return y + float64(e.Alpha)*z
	case ReLU:
		return clampTo(y, 0, math.Inf(1))
	case ReLU6:
		return clampTo(y, 0, 6)
	case LeakyReLU:
		if y > 0 {
			return y
		}
		return float64(e.Alpha) * y // NaN stays NaN
	case Clamp:
		return clampTo(y, float64(e.Lo), float64(e.Hi))
	case Sigmoid:
		return sigmoid(y)
	case Tanh:
		return math.Tanh(y)
	case GELU:
		// 0.5·y·(1+erf(y/√2)) = 0.5·y·erfc(−y/√2): erfc keeps the
		// relative accuracy for negative y, where 1+erf cancels.
		return 0.5 * y * math.Erfc(-y/math.Sqrt2)
	case GELUTanh:
		// 0.5·(1+tanh(u)) = sigmoid(2u): no cancellation for negative u.
		u := math.Sqrt(2/math.Pi) * (y + 0.044715*y*y*y)
		return y * sigmoid(2*u)
	case SiLU:
		return y * sigmoid(y)
	case Hardswish:
		return y * clampTo(y+3, 0, 6) / 6
	case Mish:
		return y * math.Tanh(softplus(y))
	}
	panic(fmt.Sprintf("epilogue: Apply of an invalid element (op %s)", e.Op))
}

// clampTo returns min(max(y, lo), hi), with NaN passing through as NaN
// (torch.clamp and torch.relu propagate NaN).
func clampTo(y, lo, hi float64) float64 {
	switch {
	case y < lo:
		return lo
	case y > hi:
		return hi
	}
	return y
}

// sigmoid is 1/(1+exp(−x)), computed without overflow: for x < 0 as
// exp(x)/(1+exp(x)), which keeps its relative accuracy down to exp's
// underflow. sigmoid(±Inf) = 1, 0; NaN stays NaN.
func sigmoid(x float64) float64 {
	if x < 0 {
		e := math.Exp(x)
		return e / (1 + e)
	}
	return 1 / (1 + math.Exp(-x))
}

// softplus is log(1+exp(x)) = max(x, 0) + log1p(exp(−|x|)), which neither
// overflows for large x nor loses accuracy for negative x. NaN stays NaN.
func softplus(x float64) float64 {
	if math.IsNaN(x) {
		return x
	}
	return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
}
