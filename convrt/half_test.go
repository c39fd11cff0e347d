package convrt

import (
	"math"
	"math/rand/v2"
	"testing"
)

// halfType is a 2-byte element type under test: its codec, its constants
// and known conversions.
type halfType struct {
	name             string
	codec            Codec[uint16]
	mantBits, minExp int
	maxFinite        float64
	known            []struct {
		v    float64
		want uint16
	}
}

func halfTypes() []halfType {
	type kv = struct {
		v    float64
		want uint16
	}
	return []halfType{
		{"fp16", FP16Codec(), 10, -14, 65504, []kv{
			{1, 0x3c00},
			{-2, 0xc000},
			{65504, 0x7bff},
			{0.1, 0x2e66},                   // mantissa 614.4: down
			{1e-8, 0x0000},                  // below half the smallest subnormal (5.96e-8)
			{6e-8, 0x0001},                  // the smallest subnormal, 2^-24
			{0x1p-25, 0x0000},               // half of it: a tie, to even 0
			{3 * 0x1p-25, 0x0002},           // 1.5 subnormals: a tie, to even 2
			{0x3ffp-24, 0x03ff},             // the largest subnormal
			{0x1p-14, 0x0400},               // the smallest normal
			{0x7ffp-25, 0x0400},             // a tie between the largest subnormal and the smallest normal
			{1 + 0x1p-11, 0x3c00},           // halfway between 1 and 1+2^-10: to even 1
			{1 + 3*0x1p-11, 0x3c02},         // halfway between 1+2^-10 and 1+2^-9: to even
			{1 + 0x1p-11 + 0x1p-20, 0x3c01}, // just above halfway: up
			{65519, 0x7bff},                 // below halfway to 65536: the largest finite
			{65520, 0x7c00},                 // halfway: to even, which is infinite
			{1e6, 0x7c00},
			{-1e6, 0xfc00},
			{math.Inf(1), 0x7c00},
			{math.Inf(-1), 0xfc00},
			{math.Copysign(0, -1), 0x8000},
			{-0x1p-24, 0x8001},
		}},
		{"bf16", BF16Codec(), 7, -126, 0x1.fep127, []kv{
			{1, 0x3f80},
			{-2, 0xc000},
			{1.00390625, 0x3f80},  // 0x3f808000: a tie, to the even 0x3f80
			{1.01171875, 0x3f82},  // 0x3f818000: a tie, to the even 0x3f82
			{1.0078125, 0x3f81},   // 0x3f810000: exact
			{1.005859375, 0x3f81}, // 0x3f80c000: above halfway, up
			{0.1, 0x3dcd},         // 0x3dcccccd: up
			{0x1.fep127, 0x7f7f},  // the largest finite
			{0x1.ffp127, 0x7f80},  // halfway to 2^128: to even, which is infinite
			{math.Inf(1), 0x7f80},
			{math.Inf(-1), 0xff80},
			{math.Copysign(0, -1), 0x8000},
			{0x1p-133, 0x0001}, // the smallest subnormal
		}},
	}
}

func TestHalfKnownValues(t *testing.T) {
	for _, h := range halfTypes() {
		for _, c := range h.known {
			if got := h.codec.Encode(float32(c.v)); got != c.want {
				t.Errorf("%s: Encode(%v) = %#04x, want %#04x", h.name, c.v, got, c.want)
			}
		}
		nan := uint16(h.codec.NaNBits)
		if got := h.codec.Encode(float32(math.NaN())); got != nan {
			t.Errorf("%s: Encode(NaN) = %#04x, want %#04x", h.name, got, nan)
		}
		if !math.IsNaN(h.codec.Decode(nan)) {
			t.Errorf("%s: Decode(NaNBits) = %v, want NaN", h.name, h.codec.Decode(nan))
		}
	}
}

// TestHalfRoundTrip: every bit pattern decodes to a value that encodes back
// to it; NaNs stay NaN.
func TestHalfRoundTrip(t *testing.T) {
	for _, h := range halfTypes() {
		for b := range 1 << 16 {
			e := uint16(b)
			v := h.codec.Decode(e)
			got := h.codec.Encode(float32(v))
			if math.IsNaN(v) {
				if !math.IsNaN(h.codec.Decode(got)) {
					t.Fatalf("%s: NaN %#04x: Encode(Decode) = %#04x is not NaN", h.name, e, got)
				}
				continue
			}
			if got != e {
				t.Fatalf("%s: Encode(Decode(%#04x) = %v) = %#04x", h.name, e, v, got)
			}
		}
	}
}

// TestHalfUlp: Decode(Encode(x)) is within half an ulp of x for random
// float32 x in the type's finite range, and a tie goes to an even mantissa.
func TestHalfUlp(t *testing.T) {
	for _, h := range halfTypes() {
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range 1_000_000 {
			x := float64(math.Float32frombits(rng.Uint32()))
			if i%2 == 0 { // also many small values: near the subnormals
				x = math.Ldexp(rng.Float64()-0.5, rng.IntN(2*(-h.minExp+h.mantBits))+h.minExp-h.mantBits)
				x = float64(float32(x))
			}
			if math.IsNaN(x) || math.Abs(x) > h.maxFinite {
				continue
			}
			e := h.codec.Encode(float32(x))
			y := h.codec.Decode(e)
			exp := math.Ilogb(x)
			if x == 0 || exp < h.minExp {
				exp = h.minExp
			}
			ulp := math.Ldexp(1, exp-h.mantBits)
			d := math.Abs(y - x)
			if d > ulp/2 {
				t.Fatalf("%s: x = %v: encoded %#04x = %v, off by %v > half an ulp %v", h.name, x, e, y, d, ulp/2)
			}
			if d == ulp/2 && e&1 != 0 {
				t.Fatalf("%s: x = %v: a tie, encoded %#04x = %v: mantissa not even", h.name, x, e, y)
			}
			if math.Signbit(y) != math.Signbit(x) {
				t.Fatalf("%s: x = %v: encoded %#04x = %v: the sign changed", h.name, x, e, y)
			}
		}
	}
}
