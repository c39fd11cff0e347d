package dgradwin

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convgen/convgen/convrt"
	"github.com/convgen/convgen/problem"
)

// foldTap is the template's fold_tap: the filter position (r, s) phase
// (a, b) meets at dY offsets (dp, dq), or false.
func foldTap(s problem.Shape, a, b, dp, dq int) (r, t int, ok bool) {
	xr, xs := a+s.PadH-s.StrideH*dp, b+s.PadW-s.StrideW*dq
	if xr < 0 || xs < 0 {
		return 0, 0, false
	}
	r, t = xr/s.DilationH, xs/s.DilationW
	return r, t, xr == r*s.DilationH && xs == t*s.DilationW && r < s.R && t < s.S
}

// emulate runs the kernel's data movement and arithmetic on the CPU in
// float64, block by block as the template does: the fold table, each
// chunk's window and folded filter copies (copy i at element Vec·i of its part),
// the wgmmas as the tensor cores read their operands through the
// descriptors (core matrix (row/8, k/Vec) at start + (row/8)·SBO +
// (k/Vec)·LBO, row%8 16 bytes and k%Vec elements into it), and the epilogue's
// stores. It fails t where a descriptor reads past its part or a dX
// element is stored twice, and returns dX and how often each element was
// stored.
func emulate(t *testing.T, p problem.Problem, k knobs, dy, w []float32) ([]float64, []int) {
	t.Helper()
	s := p.Shape
	g := geom(p, k)
	shH, shW := g.ShiftH, g.ShiftW
	nhwc := p.Layout == problem.NHWC
	P, Q := s.P(), s.Q()
	crs := s.C * s.R * s.S
	// The fold table.
	tbl := make([]int, g.NT*g.NB)
	for idx := range tbl {
		tt, col := idx/g.NB, idx%g.NB
		ab, c := col/s.C, col%s.C
		a, b := ab/s.StrideW, ab%s.StrideW
		tbl[idx] = -1
		if col >= g.CF {
			continue
		}
		if r, sc, ok := foldTap(s, a, b, g.DPMin+tt/g.NDQ+shH[a], g.DQMin+tt%g.NDQ+shW[b]); ok {
			if nhwc {
				tbl[idx] = (r*s.S+sc)*s.C + c
			} else {
				tbl[idx] = (c*s.R+r)*s.S + sc
			}
		}
	}
	dx := make([]float64, s.N*s.C*s.H*s.W)
	stored := make([]int, len(dx))
	for n := range s.N {
		for by := range g.TilesM {
			for bx := range g.TilesN {
				m0, j0 := by*k.TM, bx*TileCols
				acc := make([]float64, k.TM*64*g.NB)
				for ch := range g.KCH {
					win := make([]float64, g.WinElems)
					bf := make([]float64, g.BElems)
					winLo := make([]float64, g.WinElems)
					bfLo := make([]float64, g.BElems)
					vec := g.Vec
					for i := range g.WinElems / vec {
						col, row, kg := i%g.WC, i/g.WC%g.WR, i/(g.WC*g.WR)
						pp, q, kk := m0+g.DPMin+row, j0+g.DQMin+col, ch*k.KC+vec*kg
						for e := range vec {
							if pp < 0 || pp >= P || q < 0 || q >= Q || kk+e >= s.K {
								continue
							}
							var at int
							if nhwc {
								at = ((n*P+pp)*Q+q)*s.K + kk + e
							} else {
								at = ((n*s.K+kk+e)*P+pp)*Q + q
							}
							win[vec*i+e], winLo[vec*i+e] = stage(dy[at], g.Split3)
						}
					}
					for i := range g.BElems / vec {
						col, kg, tt := i%g.NB, i/g.NB%(k.KC/vec), i/(g.NB*(k.KC/vec))
						kk := ch*k.KC + vec*kg
						off := tbl[tt*g.NB+col]
						for e := range vec {
							if off >= 0 && kk+e < s.K {
								bf[vec*i+e], bfLo[vec*i+e] = stage(w[(kk+e)*crs+off], g.Split3)
							}
						}
					}
					for rr := range k.TM {
						for tt := range g.NT {
							dpi, dqi := tt/g.NDQ, tt%g.NDQ
							for ks := range k.KC / g.KStep {
								aStart := ((2*ks*g.WR+rr+dpi)*g.WC + dqi) * vec
								bStart := (tt*(k.KC/vec) + 2*ks) * g.NB * vec
								eb := g.ElemBytes
								for row := range 64 {
									for col := range g.NB {
										sum := 0.0
										for kk := range g.KStep {
											ai := aStart + row/8*g.SBOA/eb + kk/vec*g.LBOA/eb + row%8*vec + kk%vec
											bi := bStart + col/8*g.SBOB/eb + kk/vec*g.LBOB/eb + col%8*vec + kk%vec
											if ai >= len(win) || bi >= len(bf) {
												t.Fatalf("%s %+v: a descriptor reads past its part (A %d of %d, B %d of %d)", p, k, ai, len(win), bi, len(bf))
											}
											sum += winLo[ai]*bf[bi] + win[ai]*bfLo[bi] + win[ai]*bf[bi]
										}
										acc[(rr*64+row)*g.NB+col] += sum
									}
								}
							}
						}
					}
				}
				for rr := range k.TM {
					m := m0 + rr
					if m >= g.HP {
						continue
					}
					for col := range g.CF {
						ab, c := col/s.C, col%s.C
						a, b := ab/s.StrideW, ab%s.StrideW
						h := a + s.StrideH*(m-shH[a])
						if h < 0 || h >= s.H {
							continue
						}
						for row := range 64 {
							j := j0 + row
							x := b + s.StrideW*(j-shW[b])
							if j >= g.WP || x < 0 || x >= s.W {
								continue
							}
							var at int
							if nhwc {
								at = ((n*s.H+h)*s.W+x)*s.C + c
							} else {
								at = ((n*s.C+c)*s.H+h)*s.W + x
							}
							if stored[at]++; stored[at] > 1 {
								t.Fatalf("%s %+v: dX element %d stored twice", p, k, at)
							}
							dx[at] = acc[(rr*64+row)*g.NB+col]
						}
					}
				}
			}
		}
	}
	return dx, stored
}

// stage is what the template stores for x: x itself (tf32: the emulation
// keeps the FP32 value, to check the indexing exactly) and 0, or in
// 3xtf32 its high part and rounded residual as split_hi and split_lo
// compute them.
func stage(x float32, split3 bool) (hi, lo float64) {
	if !split3 {
		return float64(x), 0
	}
	h := math.Float32frombits(math.Float32bits(x) & 0xffffe000)
	l := math.Float32frombits((math.Float32bits(x-h) + 0x1000) & 0xffffe000)
	return float64(h), float64(l)
}

// TestEmulated: the kernel's data movement, descriptors and stores,
// emulated on the CPU in float64, give convrt's float64 data gradient
// (within rounding of the sums' order) at every dX element, each stored
// exactly once: the flagship's geometry at a small size in both layouts,
// asymmetric strides with dilation, a 7×7 stride-2 stem, a map wider
// than one 64-column tile, odd K (a chunk past K) and several knobs.
func TestEmulated(t *testing.T) {
	tf32, x3 := problem.TF32, problem.TF32x3
	cases := []struct {
		spec string
		prec problem.Precision
		lay  problem.Layout
		k    knobs
	}{
		{"N=1,C=3,H=31,W=29,K=20,R=11,S=11,stride=4,pad=2", tf32, problem.NCHW, knobs{TM: 4, WG: 2, KC: 16}},
		{"N=2,C=3,H=27,W=33,K=13,R=11,S=11,stride=4,pad=2", tf32, problem.NHWC, knobs{TM: 2, WG: 1, KC: 8}},
		{"N=2,C=2,H=19,W=23,K=13,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_w=2", tf32, problem.NCHW, knobs{TM: 4, WG: 4, KC: 8}},
		{"N=1,C=3,H=40,W=40,K=9,R=7,S=7,stride=2,pad=3", tf32, problem.NHWC, knobs{TM: 8, WG: 2, KC: 16}},
		{"N=1,C=4,H=10,W=150,K=8,R=3,S=3,stride=2,pad=1", tf32, problem.NCHW, knobs{TM: 2, WG: 2, KC: 8}},
		{"N=1,C=1,H=17,W=9,K=36,R=4,S=2,stride_h=3,stride_w=2,pad_h=2,pad_w=1", tf32, problem.NHWC, knobs{TM: 4, WG: 1, KC: 32}},
		{"N=1,C=3,H=31,W=29,K=20,R=11,S=11,stride=4,pad=2", x3, problem.NCHW, knobs{TM: 4, WG: 2, KC: 16}},
		{"N=1,C=2,H=19,W=23,K=13,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_w=2", x3, problem.NHWC, knobs{TM: 2, WG: 2, KC: 8}},
		{"N=1,C=3,H=31,W=29,K=40,R=11,S=11,stride=4,pad=2", problem.FP16, problem.NHWC, knobs{TM: 4, WG: 2, KC: 32}},
		{"N=2,C=2,H=19,W=23,K=21,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_w=2", problem.BF16, problem.NCHW, knobs{TM: 2, WG: 1, KC: 16}},
		{"N=1,C=3,H=40,W=40,K=24,R=7,S=7,stride=2,pad=3", problem.FP16, problem.NCHW, knobs{TM: 8, WG: 4, KC: 64}},
	}
	rng := rand.New(rand.NewPCG(28, 1))
	for _, c := range cases {
		s, err := problem.ParseShape(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		s.Bias = false
		p := problem.Problem{Shape: s, Precision: c.prec, Layout: c.lay, Op: problem.OpDgrad}
		if err := (Family{}).Serves(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if msg := check(c.k); msg != "" {
			t.Fatalf("%+v: %s", c.k, msg)
		}
		dy := make([]float32, s.N*s.K*s.P()*s.Q())
		w := make([]float32, s.K*s.C*s.R*s.S)
		for i := range dy {
			dy[i] = float32(rng.NormFloat64())
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		dx, stored := emulate(t, p, c.k, dy, w)
		id := func(v float32) float64 { return float64(v) }
		worst, norm := 0.0, 0.0
		for n := range s.N {
			for ch := range s.C {
				for h := range s.H {
					for x := range s.W {
						var at int
						if c.lay == problem.NHWC {
							at = ((n*s.H+h)*s.W+x)*s.C + ch
						} else {
							at = ((n*s.C+ch)*s.H+h)*s.W + x
						}
						if stored[at] != 1 {
							t.Fatalf("%s %+v: dX[%d,%d,%d,%d] stored %d times", p, c.k, n, ch, h, x, stored[at])
						}
						want := convrt.ReferenceDgrad(p, id, dy, w, n, ch, h, x)
						worst, norm = max(worst, math.Abs(dx[at]-want)), max(norm, math.Abs(want))
					}
				}
			}
		}
		// tf32 here keeps the FP32 values (the indexing exactly); 3xtf32's
		// split is within about 2^-22 of them a product.
		if bound := map[bool]float64{false: 1e-9, true: 1e-5 * norm}[c.prec == x3]; worst > bound {
			t.Errorf("%s %+v: largest difference from the float64 reference %.3g (bound %.3g)", p, c.k, worst, bound)
		}
	}
}
