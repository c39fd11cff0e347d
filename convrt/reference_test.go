package convrt

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

// scatter computes the whole output another way than Reference does: it
// walks every input element and every filter tap of every filter of the
// input channel's group and adds their product to the output it lands on.
func scatter(p problem.Problem, in, filter, bias []float32) []float64 {
	s := p.Shape
	P, Q := s.P(), s.Q()
	out := make([]float64, s.N*s.K*P*Q)
	kg, cg := s.K/s.Groups, s.C/s.Groups
	for n := range s.N {
		for c := range s.C {
			g := c / cg
			for h := range s.H {
				for w := range s.W {
					x := float64(in[InputAt(p, n, c, h, w)])
					for k := g * kg; k < (g+1)*kg; k++ {
						for r := range s.R {
							ph := h + s.PadH - r*s.DilationH // = pp*StrideH
							if ph < 0 || ph%s.StrideH != 0 || ph/s.StrideH >= P {
								continue
							}
							for t := range s.S {
								qw := w + s.PadW - t*s.DilationW
								if qw < 0 || qw%s.StrideW != 0 || qw/s.StrideW >= Q {
									continue
								}
								a := At{n, k, ph / s.StrideH, qw / s.StrideW}
								out[OutputAt(p, a)] += x * float64(filter[FilterAt(p, k, c-g*cg, r, t)])
							}
						}
					}
				}
			}
		}
	}
	if s.Bias {
		for n := range s.N {
			for k := range s.K {
				for pp := range P {
					for q := range Q {
						out[OutputAt(p, At{n, k, pp, q})] += float64(bias[k])
					}
				}
			}
		}
	}
	return out
}

// TestReference checks Reference against scatter on every output of odd
// shapes, with groups, in both layouts, and checks that the offsets of each
// tensor are a bijection onto its elements.
func TestReference(t *testing.T) {
	for _, text := range []string{
		"N=2,C=6,H=9,W=11,K=4,R=3,S=2,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_h=2,dilation_w=1,groups=2",
		"N=1,C=3,H=7,W=7,K=6,R=3,S=3,pad=1,groups=3,bias=false",
		"N=2,C=4,H=8,W=6,K=5,R=5,S=3,stride=2,pad=2",
	} {
		sh, err := problem.ParseShape(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		for _, l := range []problem.Layout{problem.NCHW, problem.NHWC} {
			p := problem.Problem{Shape: sh, Precision: problem.FP32, Layout: l}
			nIn, nFilter, nBias, nOut := sh.Elements()
			rng := rand.New(rand.NewPCG(3, 4))
			fill := func(n int) []float32 {
				xs := make([]float32, n)
				for i := range xs {
					xs[i] = float32(rng.Float64()*2 - 1)
				}
				return xs
			}
			in, filter, bias := fill(nIn), fill(nFilter), fill(nBias)
			want := scatter(p, in, filter, bias)
			seen := make([]bool, nOut)
			for n := range sh.N {
				for k := range sh.K {
					for pp := range sh.P() {
						for q := range sh.Q() {
							a := At{n, k, pp, q}
							i := OutputAt(p, a)
							if seen[i] {
								t.Fatalf("%s %s: output offset %d taken twice", text, l, i)
							}
							seen[i] = true
							got := Reference(p, Float32Codec().Decode, in, filter, bias, a)
							if math.Abs(got-want[i]) > 1e-12 {
								t.Fatalf("%s %s: Reference(%v) = %v, scatter %v", text, l, a, got, want[i])
							}
						}
					}
				}
			}
			checkBijection(t, text+" "+string(l)+" input", nIn, sh.N, sh.C, sh.H, sh.W, func(a, b, c, d int) int { return InputAt(p, a, b, c, d) })
			checkBijection(t, text+" "+string(l)+" filter", nFilter, sh.K, sh.C/sh.Groups, sh.R, sh.S, func(a, b, c, d int) int { return FilterAt(p, a, b, c, d) })
		}
	}
}

// checkBijection checks that at maps the a×b×c×d index space onto 0..n-1.
func checkBijection(t *testing.T, what string, n, a, b, c, d int, at func(int, int, int, int) int) {
	t.Helper()
	seen := make([]bool, n)
	for i := range a {
		for j := range b {
			for k := range c {
				for l := range d {
					o := at(i, j, k, l)
					if o < 0 || o >= n || seen[o] {
						t.Fatalf("%s: offset %d of [%d][%d][%d][%d] out of range or taken twice", what, o, i, j, k, l)
					}
					seen[o] = true
				}
			}
		}
	}
}

func TestRelError(t *testing.T) {
	sh, err := problem.ParseShape("N=2,C=2,H=5,W=5,K=3,R=3,S=3,pad=1")
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: sh, Precision: problem.FP32, Layout: problem.NCHW}
	nIn, nFilter, nBias, nOut := sh.Elements()
	ones := func(n int) []float32 {
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = 1
		}
		return xs
	}
	in, filter, bias := ones(nIn), ones(nFilter), ones(nBias)
	out := make([]float32, nOut)
	points := Corners(p)
	if len(points) != 16 {
		t.Fatalf("Corners: %d points, want 16", len(points))
	}
	for _, a := range points {
		out[OutputAt(p, a)] = float32(Reference(p, Float32Codec().Decode, in, filter, bias, a))
	}
	if rel, _ := RelError(p, Float32Codec().Decode, out, in, filter, bias, points); rel != 0 {
		t.Errorf("exact output: relative error %v, want 0", rel)
	}
	bad := At{1, 2, 4, 4}
	out[OutputAt(p, bad)] += 100
	if rel, worst := RelError(p, Float32Codec().Decode, out, in, filter, bias, points); !(rel > 1) || worst != bad {
		t.Errorf("one wrong output: relative error %v at %v, want > 1 at %v", rel, worst, bad)
	}
	out[OutputAt(p, bad)] = float32(math.NaN())
	if rel, worst := RelError(p, Float32Codec().Decode, out, in, filter, bias, points); !math.IsNaN(rel) || worst != bad {
		t.Errorf("a NaN output: relative error %v at %v, want NaN at %v", rel, worst, bad)
	}
}

// TestOffsetsBeyond32Bits: the offsets of the last elements of a problem
// whose tensors pass 2^32 elements are exact.
func TestOffsetsBeyond32Bits(t *testing.T) {
	s, err := problem.ParseShape("N=2,C=3,H=32768,W=32768,K=3,R=2,S=2,groups=1")
	if err != nil {
		t.Fatal(err)
	}
	const H, W, C, K, P, Q = 32768, 32768, 3, 3, 32767, 32767
	for _, lay := range problem.Layouts {
		p := problem.Problem{Shape: s, Precision: problem.FP32, Layout: lay}
		in, _, _, out := s.Elements()
		if got := InputAt(p, 1, C-1, H-1, W-1); got != in-1 {
			t.Errorf("%s: InputAt(last) = %d, want %d", lay, got, in-1)
		}
		if got := OutputAt(p, At{N: 1, K: K - 1, P: P - 1, Q: Q - 1}); got != out-1 {
			t.Errorf("%s: OutputAt(last) = %d, want %d", lay, got, out-1)
		}
		want := int64(1)*H*W*C + int64(H-1)*W*C + 5*C + 2 // n=1, h=H-1, w=5, c=2 in NHWC
		if lay == problem.NCHW {
			want = (int64(1)*C+2)*H*W + int64(H-1)*W + 5
		}
		if got := InputAt(p, 1, 2, H-1, 5); int64(got) != want || want < 1<<32 {
			t.Errorf("%s: InputAt(1, 2, H-1, 5) = %d, want %d (past 2^32)", lay, got, want)
		}
	}
}

// TestReferenceOutput: with another output type, ReferenceOutput reads the
// residual with the output's decoder and RelErrorOutput the output; with
// the same type they are ReferenceEpilogue and RelErrorEpilogue.
func TestReferenceOutput(t *testing.T) {
	s, err := problem.ParseShape("N=1,C=2,H=3,W=3,K=2,R=1,S=1")
	if err != nil {
		t.Fatal(err)
	}
	c, err := epilogue.Parse("residual")
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: s, Precision: problem.FP32, Layout: problem.NHWC, Epilogue: c, OutPrecision: problem.StorageFP16}
	in := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}
	filter := []float32{1, 0, 0, 1}
	bias := []float32{0.5, -0.5}
	f32 := Float32Codec().Decode
	res := make([]uint16, 18)
	for i := range res {
		res[i] = FP16FromFloat32(float32(i) / 4)
	}
	a := At{N: 0, K: 1, P: 1, Q: 2}
	i := OutputAt(p, a)
	want := float64(in[InputAt(p, 0, 1, 1, 2)]) - 0.5 + float64(i)/4
	got := ReferenceOutput(p, f32, FP16ToFloat64, in, filter, bias, EpilogueHost[uint16]{Residual: res}, a)
	if got != want {
		t.Errorf("ReferenceOutput = %v, want %v (the residual read as fp16)", got, want)
	}
	out := make([]uint16, 18)
	pts := []At{a, {K: 0}}
	for _, pt := range pts {
		out[OutputAt(p, pt)] = FP16FromFloat32(float32(ReferenceOutput(p, f32, FP16ToFloat64, in, filter, bias, EpilogueHost[uint16]{Residual: res}, pt)))
	}
	if rel, _ := RelErrorOutput(p, f32, FP16ToFloat64, out, in, filter, bias, EpilogueHost[uint16]{Residual: res}, pts); rel > 1e-3 {
		t.Errorf("RelErrorOutput = %v on outputs rounded to fp16", rel)
	}
	out[OutputAt(p, a)] = FP16FromFloat32(float32(want + 1))
	if rel, w := RelErrorOutput(p, f32, FP16ToFloat64, out, in, filter, bias, EpilogueHost[uint16]{Residual: res}, pts); rel < 1e-2 || w != a {
		t.Errorf("RelErrorOutput = %v at %v, want a large error at %v", rel, w, a)
	}
}
