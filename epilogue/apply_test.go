package epilogue

import (
	"math"
	"testing"
)

var (
	inf  = math.Inf(1)
	nan  = math.NaN()
	ln3  = math.Log(3)
	a01  = float64(float32(0.1)) // 0.1 rounded to float32, as Parse stores it
	tiny = 1e-8
)

// golden is one expected value of a one-element chain.
type golden struct {
	x, want float64
	// rel is the relative tolerance; 0 means exact (NaN matches NaN).
	rel float64
}

// TestApplyGolden checks each element against values derived
// independently of the implementation. Sources, per comment:
//   - "def": the definition evaluated by hand (exact in float64);
//   - "id": a math identity, stated in the comment;
//   - "mp": mpmath 1.3 at 30 significant digits (100 where 1+tiny cancels:
//     gelu_tanh(−10), mish(−50)),
//     from the textbook formula, e.g. x*erfc(-x/sqrt(2))/2 for gelu,
//     x/2*(1+tanh(sqrt(2/pi)*(x+0.044715*x**3))) for gelu_tanh,
//     1/(1+exp(-x)) for sigmoid, x*tanh(log(1+exp(x))) for mish;
//   - "pt": PyTorch's formula in IEEE arithmetic on ±Inf/NaN (e.g.
//     gelu(−Inf) = −Inf·0.5·(1+erf(−Inf)) = −Inf·0 = NaN).
func TestApplyGolden(t *testing.T) {
	cases := map[string][]golden{
		"relu": {
			{0, 0, 0}, {3, 3, 0}, {-2, 0, 0}, {1e-300, 1e-300, 0}, {-1e-300, 0, 0}, // def
			{inf, inf, 0}, {-inf, 0, 0}, {nan, nan, 0}, // pt: relu propagates NaN
		},
		"relu6": {
			{0, 0, 0}, {5.5, 5.5, 0}, {6, 6, 0}, {7, 6, 0}, {-1, 0, 0}, // def
			{inf, 6, 0}, {-inf, 0, 0}, {nan, nan, 0}, // pt: hardtanh propagates NaN
		},
		"leaky_relu(0.1)": {
			{3, 3, 0}, {0, 0, 0}, {-2, -2 * a01, 0}, // def, α = float32(0.1)
			{inf, inf, 0}, {-inf, -inf, 0}, {nan, nan, 0}, // pt: x > 0 ? x : α·x
		},
		"leaky_relu(-0.5)": {{-4, 2, 0}, {4, 4, 0}}, // def: a negative slope is allowed, as in PyTorch
		"clamp(-1,1)": {
			{-5, -1, 0}, {0.5, 0.5, 0}, {5, 1, 0}, {1, 1, 0}, // def
			{inf, 1, 0}, {-inf, -1, 0}, {nan, nan, 0}, // pt: torch.clamp propagates NaN
		},
		"clamp(2,2)": {{-3, 2, 0}, {3, 2, 0}}, // def
		"sigmoid": {
			{0, 0.5, 0},                        // id: 1/(1+1)
			{1, 0.73105857863000487925, 1e-15}, // mp
			{-3, 0.047425873177566780879, 1e-15},
			{1e-10, 0.500000000025, 1e-15}, // mp (= 1/2 + x/4 − …)
			{-40, 4.2483542552915889773e-18, 1e-14},
			{-710, 4.4762862256751299561e-309, 1e-12}, // mp; the naive 1/(1+exp(710)) is 0
			{40, 1, 0},                               // mp: 1 − 4.2e−18 rounds to 1
			{inf, 1, 0}, {-inf, 0, 0}, {nan, nan, 0}, // pt
		},
		"tanh": {
			{0, 0, 0},                                 // def
			{math.Log(2), 0.6, 1e-15},                 // id: tanh(ln a) = (a²−1)/(a²+1) = 3/5
			{0.5, 0.4621171572600097585, 1e-15},       // mp
			{1e-9, 1e-9, 1e-15},                       // mp: x − x³/3
			{-20, -0.9999999999999999915, 1e-15},      // mp
			{inf, 1, 0}, {-inf, -1, 0}, {nan, nan, 0}, // pt
		},
		"gelu": {
			{0, 0, 0},                            // def
			{1, 0.84134474606854294859, 1e-15},   // mp: Φ(1)
			{-1, -0.15865525393145705141, 1e-14}, // mp: −Φ(−1)
			{3, 2.9959503059051097164, 1e-15},
			{1e-8, 5.0000000398942280401e-9, 1e-15},
			{-10, -7.619853024160526066e-23, 1e-12},      // mp: −10·Φ(−10); 1+erf cancels to 0 in float64
			{40, 40, 0},                                  // mp: 40 − 40·Φ(−40), Φ(−40) ≈ 4e−350
			{inf, inf, 0}, {-inf, nan, 0}, {nan, nan, 0}, // pt
		},
		"gelu_tanh": {
			{0, 0, 0},                            // def
			{1, 0.84119199060827670478, 1e-15},   // mp
			{-1, -0.15880800939172329522, 1e-14}, // mp
			{3, 2.9963626079182269812, 1e-15},
			{1e-8, 5.0000000398942280401e-9, 1e-15},
			{-5, -2.2917961966295060456e-7, 1e-12},
			{-10, -1.2040923482098059937e-37, 1e-12},     // mp (100 digits); 1+tanh cancels to 0 in float64
			{inf, inf, 0}, {-inf, nan, 0}, {nan, nan, 0}, // pt
		},
		"silu": {
			{0, 0, 0},                                    // def
			{ln3, ln3 * 0.75, 1e-15},                     // id: sigmoid(ln 3) = 3/4
			{1, 0.73105857863000487925, 1e-15},           // mp
			{-20, -4.1223072363804071629e-8, 1e-14},      // mp
			{-710, -3.1781632202293422688e-306, 1e-12},   // mp; the naive x/(1+exp(−x)) is −0
			{inf, inf, 0}, {-inf, nan, 0}, {nan, nan, 0}, // pt: x/(1+exp(−x)), −Inf/Inf
		},
		"hardswish": {
			{-4, 0, 0}, {-3, 0, 0}, {0, 0, 0}, // def: x·relu6(x+3)/6
			{1, 2.0 / 3, 1e-15}, {-1.5, -0.375, 0}, {3, 3, 0}, {4, 4, 0}, // def
			{inf, inf, 0}, {-inf, nan, 0}, {nan, nan, 0}, // pt: −Inf·0/6
		},
		"mish": {
			{0, 0, 0},                          // def
			{ln3, ln3 * 15 / 17, 1e-15},        // id: tanh(softplus(ln 3)) = tanh(ln 4) = 15/17
			{-ln3, -ln3 * 7 / 25, 1e-15},       // id: tanh(ln(4/3)) = (16/9−1)/(16/9+1) = 7/25
			{1, 0.86509838826731034612, 1e-15}, // mp
			{-1, -0.30340146137410891807, 1e-15},
			{-5, -0.033576237730161705396, 1e-14},
			{tiny, 6.000000031999999984e-9, 1e-15},
			{-50, -9.6437492398195889151e-21, 1e-14}, // mp at 100 digits (30 lose the 1+exp(−50))
			{20, 19.99999999999999983, 1e-15},
			{1000, 1000, 0},                              // mp: exp(1000) overflows float64; softplus must not
			{inf, inf, 0}, {-inf, nan, 0}, {nan, nan, 0}, // pt: −Inf·tanh(0)
		},
		"residual":      {{1, 1 + 2.5, 0}, {inf, inf, 0}, {nan, nan, 0}}, // def, z = 2.5
		"residual(0.5)": {{1, 1 + 0.5*2.5, 0}},                           // def
		"residual(0.1)": {{1, 1 + a01*2.5, 0}},                           // def, α = float32(0.1)
		"residual(-2)":  {{1, 1 - 5, 0}},                                 // def
		"scale_shift":   {{3, 2*3 + 1, 0}, {-0.5, 2*-0.5 + 1, 0}},        // def, k = 0: scale 2, shift 1
		"":              {{-7.25, -7.25, 0}, {nan, nan, 0}},              // the empty chain is the identity
	}
	scale, shift := []float64{2, -0.5}, []float64{1, 3}
	const z = 2.5
	for spec, gs := range cases {
		c, err := Parse(spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", spec, err)
		}
		for _, g := range gs {
			got := Apply(c, g.x, 0, scale, shift, z)
			if !near(got, g.want, g.rel) {
				t.Errorf("%s(%v) = %v, want %v (rel %g)", spec, g.x, got, g.want, g.rel)
			}
		}
	}
}

// near reports whether got is want within relative tolerance rel (exactly
// for rel = 0), NaN matching NaN and an infinity only itself.
func near(got, want, rel float64) bool {
	switch {
	case math.IsNaN(want):
		return math.IsNaN(got)
	case math.IsInf(want, 0) || rel == 0:
		return got == want
	}
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// TestApplyIdentities checks identities over a range of inputs: gelu(x) −
// gelu(−x) = x (Φ(x)+Φ(−x) = 1), likewise for gelu_tanh (tanh is odd),
// sigmoid(x) + sigmoid(−x) = 1, silu(x) − silu(−x) = x, and relu6 =
// clamp(0,6).
func TestApplyIdentities(t *testing.T) {
	one := func(spec string) Chain {
		c, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	f := func(c Chain, x float64) float64 { return Apply(c, x, 0, nil, nil, 0) }
	gelu, gt, sig, silu := one("gelu"), one("gelu_tanh"), one("sigmoid"), one("silu")
	relu6, clamp06 := one("relu6"), one("clamp(0,6)")
	for x := -12.0; x <= 12; x += 0.37 {
		for _, c := range []Chain{gelu, gt, silu} {
			if d := f(c, x) - f(c, -x); math.Abs(d-x) > 1e-14*math.Max(1, math.Abs(x)) {
				t.Errorf("%s(%v) − %s(%v) = %v, want %v", c, x, c, -x, d, x)
			}
		}
		if s := f(sig, x) + f(sig, -x); math.Abs(s-1) > 1e-15 {
			t.Errorf("sigmoid(%v) + sigmoid(%v) = %v, want 1", x, -x, s)
		}
		if a, b := f(relu6, x), f(clamp06, x); a != b {
			t.Errorf("relu6(%v) = %v, clamp(0,6) = %v", x, a, b)
		}
	}
}

// TestApplyChainOrder checks that elements apply in the order written, and
// that scale_shift reads channel k.
func TestApplyChainOrder(t *testing.T) {
	scale, shift := []float64{1, -2}, []float64{0, 0.5}
	for _, tc := range []struct {
		spec string
		y    float64
		k    int
		z    float64
		want float64
	}{
		{"scale_shift,relu", -1, 1, 0, 2.5},                      // −2·−1 + 0.5, then relu
		{"relu,scale_shift", -1, 1, 0, 0.5},                      // relu(−1) = 0, then −2·0 + 0.5
		{"scale_shift", -1, 0, 0, -1},                            // channel 0: 1·−1 + 0
		{"residual,relu", -3, 0, 1, 0},                           // −3 + 1 = −2, relu
		{"relu,residual", -3, 0, 1, 1},                           // 0 + 1
		{"scale_shift,residual(0.5),relu6", 4, 1, 2, 0},          // −8 + 0.5 + 1 = −6.5 → 0
		{"scale_shift,residual(-0.5),clamp(-1,1)", -1, 1, -3, 1}, // 2.5 + 1.5 = 4 → 1
		{"leaky_relu(0.5),leaky_relu(0.5)", -8, 0, 0, -2},        // −8·0.5·0.5
	} {
		c, err := Parse(tc.spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.spec, err)
		}
		if got := Apply(c, tc.y, tc.k, scale, shift, tc.z); got != tc.want {
			t.Errorf("%s: Apply(y=%v, k=%d, z=%v) = %v, want %v", tc.spec, tc.y, tc.k, tc.z, got, tc.want)
		}
	}
}
