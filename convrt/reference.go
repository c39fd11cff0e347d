package convrt

import (
	"math"
	"strconv"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

// Element is the host type of one tensor element: a float32 (fp32, tf32,
// 3xtf32) or the bits of a 2-byte element (fp16, bf16) in a uint16.
type Element interface{ float32 | uint16 }

// Codec converts elements of one type to and from numbers.
type Codec[E Element] struct {
	// Encode rounds a float32 to an element, to nearest with ties to even.
	Encode func(float32) E
	// Decode widens an element to float64, exactly.
	Decode func(E) float64
	// NaNBits are the bits of a quiet NaN element, to fill device memory
	// with (a 32-bit pattern for float32, a 16-bit one for 2-byte types).
	NaNBits uint32
}

// Float32Codec is the codec of fp32, tf32 and 3xtf32 elements.
func Float32Codec() Codec[float32] {
	return Codec[float32]{
		Encode:  func(f float32) float32 { return f },
		Decode:  func(e float32) float64 { return float64(e) },
		NaNBits: 0x7fc00000,
	}
}

// FP16Codec is the codec of fp16 elements.
func FP16Codec() Codec[uint16] {
	return Codec[uint16]{Encode: FP16FromFloat32, Decode: FP16ToFloat64, NaNBits: FP16NaN}
}

// BF16Codec is the codec of bf16 elements.
func BF16Codec() Codec[uint16] {
	return Codec[uint16]{Encode: BF16FromFloat32, Decode: BF16ToFloat64, NaNBits: BF16NaN}
}

// InputAt, FilterAt and OutputAt compute offsets in int, which is 64-bit on
// every platform convgen runs on: tensors of 2^31 elements or more (up to
// problem.Validate's 2^40) index exactly. The array below has a negative
// length, and the package does not compile, where int is narrower.
var _ [strconv.IntSize - 64]struct{}

// At is the position of one output element: image, output channel, row and
// column.
type At struct{ N, K, P, Q int }

// InputAt is the offset of in[n][c][h][w] in p's input (NCHW or NHWC).
func InputAt(p problem.Problem, n, c, h, w int) int {
	s := p.Shape
	if p.Layout == problem.NHWC {
		return ((n*s.H+h)*s.W+w)*s.C + c
	}
	return ((n*s.C+c)*s.H+h)*s.W + w
}

// FilterAt is the offset of filter[k][c][r][s] in p's filter (KCRS for
// nchw, KRSC for nhwc); c counts within k's channel group.
func FilterAt(p problem.Problem, k, c, r, s int) int {
	sh := p.Shape
	cg := sh.C / sh.Groups
	if p.Layout == problem.NHWC {
		return ((k*sh.R+r)*sh.S+s)*cg + c
	}
	return ((k*cg+c)*sh.R+r)*sh.S + s
}

// OutputAt is the offset of out[n][k][p][q] in p's output (NKPQ for nchw,
// NPQK for nhwc).
func OutputAt(p problem.Problem, a At) int {
	s := p.Shape
	P, Q := s.P(), s.Q()
	if p.Layout == problem.NHWC {
		return ((a.N*P+a.P)*Q+a.Q)*s.K + a.K
	}
	return ((a.N*s.K+a.K)*P+a.P)*Q + a.Q
}

// Reference computes the output at a in float64 from the elements as they
// are: the sum over the input channels of k's group and the filter taps that
// land inside the input (padding reads as zero), plus the bias when the
// problem has one.
func Reference[E Element](p problem.Problem, decode func(E) float64, in, filter, bias []E, a At) float64 {
	s := p.Shape
	sum := 0.0
	if s.Bias {
		sum = decode(bias[a.K])
	}
	cg := s.C / s.Groups
	group := a.K / (s.K / s.Groups)
	for c := range cg {
		for r := range s.R {
			h := a.P*s.StrideH - s.PadH + r*s.DilationH
			if h < 0 || h >= s.H {
				continue
			}
			for t := range s.S {
				w := a.Q*s.StrideW - s.PadW + t*s.DilationW
				if w < 0 || w >= s.W {
					continue
				}
				sum += decode(in[InputAt(p, a.N, group*cg+c, h, w)]) * decode(filter[FilterAt(p, a.K, c, r, t)])
			}
		}
	}
	return sum
}

// Corners lists the four output corners of the first and the last image, in
// the first and the last output channel.
func Corners(p problem.Problem) []At {
	s := p.Shape
	var pts []At
	for _, n := range []int{0, s.N - 1} {
		for _, k := range []int{0, s.K - 1} {
			for _, pp := range []int{0, s.P() - 1} {
				for _, q := range []int{0, s.Q() - 1} {
					pts = append(pts, At{n, k, pp, q})
				}
			}
		}
	}
	return pts
}

// EpilogueHost holds host copies of the arrays an epilogue chain reads
// (Epilogue), for the reference: Scale and Shift (K values each, the
// float32 values the device holds, widened) and Residual (the output's
// shape, layout and element type: E is the output's, which
// problem.Problem.OutPrecision may make other than the input's). Those the chain does not read may be
// nil.
type EpilogueHost[E Element] struct {
	Scale, Shift []float64
	Residual     []E
}

// ReferenceEpilogue is Reference with p's epilogue chain applied in
// float64 (epilogue.Apply) to the output at a: the value a generated
// kernel stores there. It is NaN when the chain reads an array of ep that
// is too short. The residual has the input's element type E: for a
// problem whose output type differs (problem.Problem.OutPrecision), use
// ReferenceOutput.
func ReferenceEpilogue[E Element](p problem.Problem, decode func(E) float64, in, filter, bias []E, ep EpilogueHost[E], a At) float64 {
	return ReferenceOutput(p, decode, decode, in, filter, bias, ep, a)
}

// ReferenceOutput is ReferenceEpilogue for a kernel whose output, and so
// its residual, has the element type O, which may differ from the input's
// E (problem.Problem.OutPrecision): decodeOut reads the residual. The
// value is float64, not rounded to O; the output type's rounding is part
// of the error bound (problem.Problem.ErrorBound).
func ReferenceOutput[E, O Element](p problem.Problem, decodeIn func(E) float64, decodeOut func(O) float64, in, filter, bias []E, ep EpilogueHost[O], a At) float64 {
	y := Reference(p, decodeIn, in, filter, bias, a)
	if len(p.Epilogue) == 0 {
		return y
	}
	z := 0.0
	if p.Epilogue.NeedsResidual() {
		i := OutputAt(p, a)
		if i >= len(ep.Residual) {
			return math.NaN()
		}
		z = decodeOut(ep.Residual[i])
	}
	if p.Epilogue.NeedsScaleShift() && (a.K >= len(ep.Scale) || a.K >= len(ep.Shift)) {
		return math.NaN()
	}
	return epilogue.Apply(p.Epilogue, y, a.K, ep.Scale, ep.Shift, z)
}

// RelError compares out with the float64 reference at points: it returns
// the relative L2 error ‖out−ref‖/‖ref‖ (the absolute one when the
// reference is all zero; NaN when an output is NaN) and the point of the
// largest difference.
func RelError[E Element](p problem.Problem, decode func(E) float64, out, in, filter, bias []E, points []At) (rel float64, worst At) {
	return RelErrorEpilogue(p, decode, out, in, filter, bias, EpilogueHost[E]{}, points)
}

// RelErrorEpilogue is RelError against ReferenceEpilogue: for a problem
// whose epilogue chain reads arrays (RelError passes none, and its error
// is then NaN).
func RelErrorEpilogue[E Element](p problem.Problem, decode func(E) float64, out, in, filter, bias []E, ep EpilogueHost[E], points []At) (rel float64, worst At) {
	return RelErrorOutput(p, decode, decode, out, in, filter, bias, ep, points)
}

// RelErrorOutput is RelErrorEpilogue against ReferenceOutput: for a
// kernel whose output (and residual) has the element type O, read with
// decodeOut, and whose inputs have the element type E.
func RelErrorOutput[E, O Element](p problem.Problem, decodeIn func(E) float64, decodeOut func(O) float64, out []O, in, filter, bias []E, ep EpilogueHost[O], points []At) (rel float64, worst At) {
	var diff2, ref2, worstDiff float64
	for _, a := range points {
		want := ReferenceOutput(p, decodeIn, decodeOut, in, filter, bias, ep, a)
		d := decodeOut(out[OutputAt(p, a)]) - want
		diff2 += d * d
		ref2 += want * want
		if math.Abs(d) > worstDiff || math.IsNaN(d) && !math.IsNaN(worstDiff) {
			worstDiff, worst = math.Abs(d), a
		}
	}
	if ref2 == 0 {
		return math.Sqrt(diff2), worst
	}
	return math.Sqrt(diff2 / ref2), worst
}
