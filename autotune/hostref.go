package autotune

import (
	"math"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

// The checking kernels fill device buffers with a counter-based hash of
// (index, seed); hostValue reproduces those values bit for bit, so the CPU
// can compute float64 references without copying inputs back.

func mix(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}

// hostValue is element i of a buffer filled by convgen_fill with seed:
// uniform in [0,1), or in [-1,1) when symmetric.
func hostValue(i int64, seed uint32, symmetric bool) float64 {
	u := int32(mix(uint32(i)*0x9e3779b9^seed) >> 8)
	if symmetric {
		return float64(2*u-(1<<24)) / (1 << 24)
	}
	return float64(u) / (1 << 24)
}

// roundTo rounds v (a float32 value) to the precision's element type, to
// nearest with ties to even, as the checking kernels' fill does: FP16 has 11
// significant bits down to 2^-14 and a fixed 2^-24 step below (subnormals),
// BF16 has 8 significant bits. Other precisions keep FP32 elements.
func roundTo(v float64, p problem.Precision) float64 {
	return roundToStorage(v, p.Storage())
}

// roundToStorage is roundTo for a storage type: what convgen_fill_out
// writes for a residual of the output's type (-out-precision).
func roundToStorage(v float64, st problem.Storage) float64 {
	if v == 0 || !st.Half() {
		return v
	}
	_, exp := math.Frexp(v) // |v| = f × 2^exp, f in [0.5, 1)
	e := exp - 1            // |v| in [2^e, 2^(e+1))
	bits := 7
	if st == problem.StorageFP16 {
		bits = 10
		e = max(e, -14)
	}
	quantum := math.Ldexp(1, e-bits)
	return math.RoundToEven(v/quantum) * quantum
}

// seeds derives the input, filter and bias seeds of one check.
func seeds(seed uint32) (in, filter, bias uint32) {
	return seed, seed ^ 0x5bd1e995, seed ^ 0x27d4eb2f
}

// hostOutput computes output element idx (in the layout's order) in float64
// from hash-filled input, filter and bias. Output channel k of a grouped
// convolution reads the C/Groups input channels of its group; the filter
// holds C/Groups channels per output channel.
func hostOutput(p problem.Problem, seed uint32, idx int64) float64 {
	s := p.Shape
	P, Q := int64(s.P()), int64(s.Q())
	K, C, H, W := int64(s.K), int64(s.C), int64(s.H), int64(s.W)
	R, S := int64(s.R), int64(s.S)
	CG, KG := C/int64(s.Groups), K/int64(s.Groups) // channels per group
	var n, k, pp, q int64
	if p.Layout == problem.NHWC {
		k, q, pp, n = idx%K, idx/K%Q, idx/(K*Q)%P, idx/(K*Q*P)
	} else {
		q, pp, k, n = idx%Q, idx/Q%P, idx/(P*Q)%K, idx/(P*Q*K)
	}
	inSeed, fSeed, bSeed := seeds(seed)
	value := func(i int64, seed uint32, symmetric bool) float64 {
		return roundTo(hostValue(i, seed, symmetric), p.Precision)
	}
	acc := 0.0
	if s.Bias {
		acc = value(k, bSeed, true)
	}
	c0 := k / KG * CG // first input channel of k's group
	for c := int64(0); c < CG; c++ {
		for r := int64(0); r < R; r++ {
			h := pp*int64(s.StrideH) - int64(s.PadH) + r*int64(s.DilationH)
			if h < 0 || h >= H {
				continue
			}
			for t := int64(0); t < S; t++ {
				w := q*int64(s.StrideW) - int64(s.PadW) + t*int64(s.DilationW)
				if w < 0 || w >= W {
					continue
				}
				var xi, fi int64
				if p.Layout == problem.NHWC {
					xi = ((n*H+h)*W+w)*C + c0 + c
					fi = ((k*R+r)*S+t)*CG + c
				} else {
					xi = ((n*C+c0+c)*H+h)*W + w
					fi = ((k*CG+c)*R+r)*S + t
				}
				acc += value(xi, inSeed, false) * value(fi, fSeed, true)
			}
		}
	}
	return acc
}

// epilogueSeeds derives the seeds of the epilogue's arrays of one check:
// scale, shift and residual.
func epilogueSeeds(seed uint32) (scale, shift, residual uint32) {
	return seed ^ 0x1b873593, seed ^ 0xcc9e2d51, seed ^ 0x85ebca6b
}

// hostScaleShift is output channel k's scale and shift of a check with
// seed: float32 values, scale in [0.5, 1.5) and shift in [-1, 1), which the
// worker copies to the device as they are.
func hostScaleShift(seed uint32, k int64) (scale, shift float32) {
	sSeed, tSeed, _ := epilogueSeeds(seed)
	return float32(0.5 + hostValue(k, sSeed, false)), float32(hostValue(k, tSeed, true))
}

// hostResidual is residual element idx of a check with seed, as
// convgen_fill (convgen_fill_out for an output type other than the
// input's) writes it: in [-1, 1), rounded to p's output type.
func hostResidual(p problem.Problem, seed uint32, idx int64) float64 {
	_, _, rSeed := epilogueSeeds(seed)
	return roundToStorage(hostValue(idx, rSeed, true), p.Out())
}

// hostExpected is the value the kernel must store at output element idx:
// hostOutput with p's epilogue chain applied in float64 (epilogue.Apply),
// reading the arrays hostScaleShift and hostResidual give. For a gradient
// op, idx counts in the reference's output (kernels.ReferenceOutputs): dX
// (dgrad), or dW and then dBias (wgrad); hostGradient computes it.
func hostExpected(p problem.Problem, seed uint32, idx int64) float64 {
	if p.Op != problem.OpFprop {
		return hostGradient(p, seed, idx)
	}
	y := hostOutput(p, seed, idx)
	if len(p.Epilogue) == 0 {
		return y
	}
	k := outputChannel(p, idx)
	var scale, shift []float64
	if p.Epilogue.NeedsScaleShift() {
		scale, shift = make([]float64, k+1), make([]float64, k+1)
		a, b := hostScaleShift(seed, int64(k))
		scale[k], shift[k] = float64(a), float64(b)
	}
	z := 0.0
	if p.Epilogue.NeedsResidual() {
		z = hostResidual(p, seed, idx)
	}
	return epilogue.Apply(p.Epilogue, y, k, scale, shift, z)
}

// outputChannel is the output channel of output element idx in p's layout.
func outputChannel(p problem.Problem, idx int64) int {
	s := p.Shape
	K, PQ := int64(s.K), int64(s.P())*int64(s.Q())
	if p.Layout == problem.NHWC {
		return int(idx % K)
	}
	return int(idx / PQ % K)
}

// fillSymmetric says whether convgen_fill fills an input of the role name
// (problem.Operand.Name) in [-1, 1): every input but X, which is in [0, 1).
func fillSymmetric(name string) bool { return name != "X" }

// hostCost is the number of products one hostExpected value of p sums (at
// most): what a sampled check costs on the CPU per value.
func hostCost(p problem.Problem) int64 {
	s := p.Shape
	switch p.Op {
	case problem.OpDgrad:
		return int64(s.K/s.Groups) * int64(s.R) * int64(s.S)
	case problem.OpWgrad:
		return int64(s.N) * int64(s.P()) * int64(s.Q())
	}
	return int64(s.C/s.Groups) * int64(s.R) * int64(s.S)
}

// hostBudget bounds the products a gradient's sampled check computes on
// the CPU (about a quarter of a second): a filter gradient's value sums
// N·P·Q of them.
const hostBudget = 1 << 25

// sampleCount is how many of want sampled values a check of p computes on
// the CPU: want for the forward op, as before gradients; for a gradient at
// most hostBudget products in all, and at least 2 (the first and the last).
func sampleCount(p problem.Problem, want int) int {
	if p.Op == problem.OpFprop {
		return want
	}
	return int(max(2, min(int64(want), hostBudget/max(hostCost(p), 1))))
}

// hostGradient is value idx of a gradient op's reference output
// (hostExpected) in float64 from hash-filled inputs, the kernel's second
// and third operands (problem.Op): dgrad reads dY (seed "in") and W (seed
// "filter"), wgrad X (seed "in") and dY (seed "filter").
func hostGradient(p problem.Problem, seed uint32, idx int64) float64 {
	s := p.Shape
	N, C, H, W := int64(s.N), int64(s.C), int64(s.H), int64(s.W)
	K, R, S, P, Q := int64(s.K), int64(s.R), int64(s.S), int64(s.P()), int64(s.Q())
	CG, KG := C/int64(s.Groups), K/int64(s.Groups)
	nhwc := p.Layout == problem.NHWC
	inSeed, fSeed, _ := seeds(seed)
	value := func(i int64, seed uint32, symmetric bool) float64 {
		return roundTo(hostValue(i, seed, symmetric), p.Precision)
	}
	xAt := func(n, c, h, w int64) int64 {
		if nhwc {
			return ((n*H+h)*W+w)*C + c
		}
		return ((n*C+c)*H+h)*W + w
	}
	yAt := func(n, k, pp, q int64) int64 {
		if nhwc {
			return ((n*P+pp)*Q+q)*K + k
		}
		return ((n*K+k)*P+pp)*Q + q
	}
	wAt := func(k, cg, r, t int64) int64 {
		if nhwc {
			return ((k*R+r)*S+t)*CG + cg
		}
		return ((k*CG+cg)*R+r)*S + t
	}
	acc := 0.0
	if p.Op == problem.OpDgrad {
		var n, c, h, w int64
		if nhwc {
			c, w, h, n = idx%C, idx/C%W, idx/(C*W)%H, idx/(C*W*H)
		} else {
			w, h, c, n = idx%W, idx/W%H, idx/(W*H)%C, idx/(W*H*C)
		}
		g := c / CG
		for kk := range KG {
			k := g*KG + kk
			for r := range R {
				ph := h + int64(s.PadH) - r*int64(s.DilationH)
				if ph < 0 || ph%int64(s.StrideH) != 0 || ph/int64(s.StrideH) >= P {
					continue
				}
				for t := range S {
					qw := w + int64(s.PadW) - t*int64(s.DilationW)
					if qw < 0 || qw%int64(s.StrideW) != 0 || qw/int64(s.StrideW) >= Q {
						continue
					}
					acc += value(yAt(n, k, ph/int64(s.StrideH), qw/int64(s.StrideW)), inSeed, true) * value(wAt(k, c-g*CG, r, t), fSeed, true)
				}
			}
		}
		return acc
	}
	dw := K * CG * R * S
	if idx >= dw { // dBias[k]
		k := idx - dw
		for n := range N {
			for pp := range P {
				for q := range Q {
					acc += value(yAt(n, k, pp, q), fSeed, true)
				}
			}
		}
		return acc
	}
	var k, cg, r, t int64
	if nhwc {
		cg, t, r, k = idx%CG, idx/CG%S, idx/(CG*S)%R, idx/(CG*S*R)
	} else {
		t, r, cg, k = idx%S, idx/S%R, idx/(S*R)%CG, idx/(S*R*CG)
	}
	c := k/KG*CG + cg
	for n := range N {
		for pp := range P {
			h := pp*int64(s.StrideH) - int64(s.PadH) + r*int64(s.DilationH)
			if h < 0 || h >= H {
				continue
			}
			for q := range Q {
				w := q*int64(s.StrideW) - int64(s.PadW) + t*int64(s.DilationW)
				if w < 0 || w >= W {
					continue
				}
				acc += value(yAt(n, k, pp, q), fSeed, true) * value(xAt(n, c, h, w), inSeed, false)
			}
		}
	}
	return acc
}
