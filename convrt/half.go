package convrt

import "math"

// Quiet NaNs of the 2-byte element types, as their bits.
const (
	FP16NaN = 0x7e00
	BF16NaN = 0x7fc0
)

// FP16FromFloat32 rounds f to the nearest fp16 (IEEE binary16), ties to
// even, and returns its bits. Results below the smallest normal fp16
// (2^-14) are subnormal or zero, results beyond the largest finite one
// (65504) are infinite, and a NaN becomes FP16NaN with f's sign.
func FP16FromFloat32(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int(bits>>23) & 0xff // biased by 127
	mant := bits & 0x7fffff
	if exp == 0xff { // infinite or NaN
		if mant != 0 {
			return sign | FP16NaN
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased by 15, as in fp16
	if e >= 0x1f {
		return sign | 0x7c00 // too large: infinite
	}
	if e <= 0 {
		// A subnormal fp16 or zero: the float's 24-bit significand, leading
		// 1 included, shifted right so that its unit becomes 2^-24.
		if e < -10 {
			return sign // below half the smallest subnormal (2^-25): zero
		}
		return sign | uint16(roundShift(mant|0x800000, uint(14-e)))
	}
	// A normal fp16: exponent and mantissa shifted together, so that
	// rounding up carries into the exponent, and past 65504 to infinity.
	return sign | uint16(roundShift(uint32(e)<<23|mant, 13))
}

// roundShift returns x/2^n rounded to the nearest integer, ties to even,
// for 0 < n < 32.
func roundShift(x uint32, n uint) uint32 {
	q := x >> n
	rest := x & (uint32(1)<<n - 1)
	half := uint32(1) << (n - 1)
	if rest > half || rest == half && q&1 == 1 {
		q++
	}
	return q
}

// FP16ToFloat64 decodes the fp16 bits h, exactly.
func FP16ToFloat64(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10)&0x1f, float64(h&0x3ff)
	switch exp {
	case 0: // zero or subnormal: mant × 2^-24
		return sign * math.Ldexp(mant, -24)
	case 0x1f: // infinite or NaN
		if mant != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1024+mant, exp-25) // (1 + mant/1024) × 2^(exp-15)
}

// BF16FromFloat32 rounds f to the nearest bf16 (bfloat16), ties to even, and
// returns its bits: the upper half of f's bits, rounded by the lower half.
// A NaN becomes BF16NaN with f's sign, since rounding could turn it into an
// infinity.
func BF16FromFloat32(f float32) uint16 {
	bits := math.Float32bits(f)
	if math.IsNaN(float64(f)) {
		return uint16(bits>>16)&0x8000 | BF16NaN
	}
	return uint16(roundShift(bits, 16)) // carries into the exponent, and to infinity
}

// BF16ToFloat64 decodes the bf16 bits b, exactly.
func BF16ToFloat64(b uint16) float64 {
	return float64(math.Float32frombits(uint32(b) << 16))
}
