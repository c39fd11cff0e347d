package autotune

import (
	"math"
	"testing"

	"github.com/convgen/convgen/problem"
)

func TestHostValueRangeAndExactness(t *testing.T) {
	for i := int64(0); i < 10000; i++ {
		u := hostValue(i, 42, false)
		s := hostValue(i, 42, true)
		if u < 0 || u >= 1 || s < -1 || s >= 1 {
			t.Fatalf("element %d: %v, %v out of range", i, u, s)
		}
		if float64(float32(u)) != u || float64(float32(s)) != s {
			t.Fatalf("element %d: %v, %v not exact in float32 (the GPU fills float32)", i, u, s)
		}
	}
	if hostValue(7, 1, false) == hostValue(7, 2, false) {
		t.Error("the seed does not change the values")
	}
}

func TestHostOutputMatchesDirectSum(t *testing.T) {
	shape, err := problem.ParseShape("N=2,C=2,H=7,W=6,K=3,R=3,S=2,stride_h=2,pad_w=1,dilation_h=2")
	if err != nil {
		t.Fatal(err)
	}
	for _, lay := range problem.Layouts {
		p := problem.Problem{Shape: shape, Precision: problem.FP32, Layout: lay}
		in, f, b := seeds(9)
		P, Q := shape.P(), shape.Q()
		for n := 0; n < shape.N; n++ {
			for k := 0; k < shape.K; k++ {
				for pp := 0; pp < P; pp++ {
					for q := 0; q < Q; q++ {
						want := hostValue(int64(k), b, true)
						for c := 0; c < shape.C; c++ {
							for r := 0; r < shape.R; r++ {
								for s := 0; s < shape.S; s++ {
									h := pp*shape.StrideH - shape.PadH + r*shape.DilationH
									w := q*shape.StrideW - shape.PadW + s*shape.DilationW
									if h < 0 || h >= shape.H || w < 0 || w >= shape.W {
										continue
									}
									xi := ((n*shape.C+c)*shape.H+h)*shape.W + w
									fi := ((k*shape.C+c)*shape.R+r)*shape.S + s
									if lay == problem.NHWC {
										xi = ((n*shape.H+h)*shape.W+w)*shape.C + c
										fi = ((k*shape.R+r)*shape.S+s)*shape.C + c
									}
									want += hostValue(int64(xi), in, false) * hostValue(int64(fi), f, true)
								}
							}
						}
						idx := ((n*shape.K+k)*P+pp)*Q + q
						if lay == problem.NHWC {
							idx = ((n*P+pp)*Q+q)*shape.K + k
						}
						if got := hostOutput(p, 9, int64(idx)); math.Abs(got-want) > 1e-12 {
							t.Fatalf("%s output %d: %v, want %v", lay, idx, got, want)
						}
					}
				}
			}
		}
	}
}

func TestQuantileAndNeighbours(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	if q := quantile(xs, 0.5); q != 3 {
		t.Errorf("median %v", q)
	}
	if q := quantile(xs, 0.1); math.Abs(q-1.4) > 1e-12 {
		t.Errorf("p10 %v", q)
	}
	if !neighbours(map[string]int{"a": 1, "b": 2}, map[string]int{"a": 1, "b": 3}) {
		t.Error("configs one knob apart are neighbours")
	}
	if neighbours(map[string]int{"a": 1, "b": 2}, map[string]int{"a": 2, "b": 3}) {
		t.Error("configs two knobs apart are not neighbours")
	}
	// An optional knob absent from one config counts as 0 there.
	if !neighbours(map[string]int{"a": 1}, map[string]int{"a": 1, "ARegs": 1}) || !neighbours(map[string]int{"a": 1, "ARegs": 1}, map[string]int{"a": 1}) {
		t.Error("a config and its twin with an optional knob set are neighbours")
	}
	if neighbours(map[string]int{"a": 1}, map[string]int{"a": 2, "ARegs": 1}) {
		t.Error("a changed knob and an optional knob set are two knobs apart")
	}
	if neighbours(map[string]int{"a": 1}, map[string]int{"a": 1, "SplitK": 0}) {
		t.Error("an optional knob present at 0 is the same config")
	}
	if neighbours(map[string]int{"a": 1}, map[string]int{"a": 1}) {
		t.Error("a config is not its own neighbour")
	}
	// Candidates of two families are never neighbours, whatever their
	// knobs (a wgmma fp16 config is wgmmahalf's knobs with two more).
	half := Trial{Family: "wgmmahalf", Config: map[string]int{"TileK": 64}}
	if neighbourTrials(half, Trial{Family: "wgmma", Config: map[string]int{"TileK": 64, "VecStage": 1}}) {
		t.Error("a wgmmahalf and a wgmma candidate one knob apart are neighbours")
	}
	if !neighbourTrials(half, Trial{Family: "wgmmahalf", Config: map[string]int{"TileK": 32}}) {
		t.Error("two wgmmahalf candidates one knob apart are not neighbours")
	}
}

func TestRoundTo(t *testing.T) {
	cases := []struct {
		p        problem.Precision
		in, want float64
	}{
		{problem.FP16, 1, 1},
		{problem.FP16, 1 + 1.0/2048, 1},                        // tie: to even
		{problem.FP16, 1 + 3.0/2048, 1 + 2.0/1024},             // tie: to even (up)
		{problem.FP16, 1 + 1.0/1024, 1 + 1.0/1024},             // representable
		{problem.FP16, 0.1, 0.0999755859375},                   // nearest fp16 of 0.1
		{problem.FP16, math.Ldexp(3, -26), math.Ldexp(1, -24)}, // subnormal step 2^-24
		{problem.FP16, -0.333251953125, -0.333251953125},
		{problem.BF16, 1 + 1.0/256, 1},           // tie: to even
		{problem.BF16, 1 + 3.0/256, 1 + 2.0/128}, // tie: up to even
		{problem.BF16, -0.5, -0.5},
		{problem.FP32, 0.1, 0.1},
	}
	for _, c := range cases {
		if got := roundTo(c.in, c.p); got != c.want {
			t.Errorf("roundTo(%v, %s) = %v, want %v", c.in, c.p, got, c.want)
		}
	}
}

// TestHostOutputGroups checks hostOutput on grouped, depthwise and
// depthwise-with-multiplier shapes against an independent loop over every
// input channel that skips those outside the output channel's group.
func TestHostOutputGroups(t *testing.T) {
	for _, spec := range []string{
		"N=2,C=6,H=7,W=6,K=9,R=3,S=2,stride_h=2,pad_w=1,dilation_h=2,groups=3",
		"N=1,C=4,H=5,W=5,K=4,R=3,S=3,pad=1,groups=4,bias=false",
		"N=2,C=3,H=6,W=4,K=6,R=2,S=3,stride_w=2,pad=1,groups=3",
	} {
		shape, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		cg, kg := shape.C/shape.Groups, shape.K/shape.Groups
		for _, lay := range problem.Layouts {
			p := problem.Problem{Shape: shape, Precision: problem.FP32, Layout: lay}
			in, f, b := seeds(4)
			P, Q := shape.P(), shape.Q()
			for n := 0; n < shape.N; n++ {
				for k := 0; k < shape.K; k++ {
					for pp := 0; pp < P; pp++ {
						for q := 0; q < Q; q++ {
							want := 0.0
							if shape.Bias {
								want = hostValue(int64(k), b, true)
							}
							for ci := 0; ci < shape.C; ci++ {
								if ci/cg != k/kg {
									continue // another group's channel
								}
								c := ci % cg // the filter's channel within the group
								for r := 0; r < shape.R; r++ {
									for s := 0; s < shape.S; s++ {
										h := pp*shape.StrideH - shape.PadH + r*shape.DilationH
										w := q*shape.StrideW - shape.PadW + s*shape.DilationW
										if h < 0 || h >= shape.H || w < 0 || w >= shape.W {
											continue
										}
										xi := ((n*shape.C+ci)*shape.H+h)*shape.W + w
										fi := ((k*cg+c)*shape.R+r)*shape.S + s
										if lay == problem.NHWC {
											xi = ((n*shape.H+h)*shape.W+w)*shape.C + ci
											fi = ((k*shape.R+r)*shape.S+s)*cg + c
										}
										want += hostValue(int64(xi), in, false) * hostValue(int64(fi), f, true)
									}
								}
							}
							idx := ((n*shape.K+k)*P+pp)*Q + q
							if lay == problem.NHWC {
								idx = ((n*P+pp)*Q+q)*shape.K + k
							}
							if got := hostOutput(p, 4, int64(idx)); math.Abs(got-want) > 1e-12 {
								t.Fatalf("%s %s output %d: %v, want %v", spec, lay, idx, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestHostOutputBeyond32Bits: hostOutput reads the right input elements
// where their offsets pass 2^32 (an input of 3·2^31 elements): the last
// output of the last image and channel, in both layouts.
func TestHostOutputBeyond32Bits(t *testing.T) {
	shape, err := problem.ParseShape("N=2,C=3,H=32768,W=32768,K=2,R=1,S=1")
	if err != nil {
		t.Fatal(err)
	}
	if !shape.Needs64BitIndex() {
		t.Fatal("the shape does not need 64-bit offsets")
	}
	const H, W, C, K = 32768, 32768, 3, 2
	in, f, b := seeds(5)
	for _, lay := range problem.Layouts {
		p := problem.Problem{Shape: shape, Precision: problem.FP32, Layout: lay}
		n, k, h, w := int64(1), int64(1), int64(H-1), int64(W-1)
		var out int64
		if lay == problem.NHWC {
			out = ((n*H+h)*W+w)*K + k
		} else {
			out = ((n*K+k)*H+h)*W + w
		}
		want := hostValue(k, b, true)
		for c := int64(0); c < C; c++ {
			xi := ((n*C+c)*H+h)*W + w
			if lay == problem.NHWC {
				xi = ((n*H+h)*W+w)*C + c
			}
			if c == C-1 && xi < 1<<32 {
				t.Fatalf("%s: input offset %d below 2^32, the test checks nothing", lay, xi)
			}
			want += hostValue(xi, in, false) * hostValue(k*C+c, f, true)
		}
		if got := hostOutput(p, 5, out); got != want {
			t.Errorf("%s: hostOutput(%d) = %v, want %v", lay, out, got, want)
		}
	}
}

// TestHostResidualOutPrecision: the residual of a problem whose output
// type differs from the input's is rounded to the output's type (as
// convgen_fill_out writes it), not the input's: FP32 inputs with an FP16
// or BF16 output get 2-byte values, FP16 inputs with an FP32 output the
// FP32 ones.
func TestHostResidualOutPrecision(t *testing.T) {
	s, err := problem.ParseShape("N=1,C=4,H=6,W=6,K=4,R=3,S=3,pad=1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		prec problem.Precision
		out  problem.Storage
		like problem.Precision // the precision whose fill rounds as the output type
	}{{problem.FP32, problem.StorageFP16, problem.FP16}, {problem.FP32, problem.StorageBF16, problem.BF16}, {problem.FP16, problem.StorageFP32, problem.FP32}} {
		p := problem.Problem{Shape: s, Precision: tc.prec, Layout: problem.NHWC, OutPrecision: tc.out}
		like := problem.Problem{Shape: s, Precision: tc.like, Layout: problem.NHWC}
		plain := problem.Problem{Shape: s, Precision: tc.prec, Layout: problem.NHWC}
		differ := 0
		for i := range int64(64) {
			got := hostResidual(p, 3, i)
			if want := hostResidual(like, 3, i); got != want {
				t.Fatalf("%s: residual %d = %v, want %v (as the output type %s stores it)", p, i, got, want, tc.out)
			}
			if got != hostResidual(plain, 3, i) {
				differ++
			}
		}
		if differ == 0 {
			t.Errorf("%s: every residual value is the input type's: the output type is not applied", p)
		}
	}
}
