package wgradmma

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convgen/convgen/convrt"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// windowPerm is window.cu.tmpl's perm: the band pixel (within its k-tile)
// that slot i holds.
func windowPerm(i int, half bool, dq int) int {
	t, v := i%4, i/4
	if half {
		t, v = (i%8)/2, (i/8)*2+i%2
	}
	return t*dq + v%dq + (v/dq)*4*dq
}

// windowPermInv is window.cu.tmpl's perm_inv.
func windowPermInv(pi int, half bool, dq int) int {
	a, rem := pi/(4*dq), pi%(4*dq)
	t, v := rem/dq, a*dq+rem%dq
	if half {
		return 8*(v/2) + 2*t + v%2
	}
	return 4*v + t
}

// emulateWindow runs Stage=5's data movement for knobs k on p on the CPU,
// in float64, as window.cu.tmpl writes it: every block's bands, the window
// copies (VX elements, zeros outside the image), the pixel table, the
// taps' offsets and the bias row, each thread's dY copies into the
// swizzled stage (its warp's copies u, NHWC or NCHW) and, per k step, the
// A rows the threads gather and the B rows wgmma reads from the stage; the
// partial tiles summed per tile. It returns dW in the layout's filter
// order and dBias; it fails t where a stage slot is written twice or read
// unwritten, or a window element is read outside the window.
// tf32 is the template's tf32(): x rounded to TF32 (to nearest, ties
// away from zero), for finite x.
func tf32(x float32) float32 {
	return math.Float32frombits((math.Float32bits(x) + 0x1000) & 0xffffe000)
}

// split3 is 3xtf32's split of v (an FP32 value): its TF32 high part and
// the residual rounded to TF32, as put and gather compute them.
func split3(v float64) (hi, lo float64) {
	h := tf32(float32(v))
	return float64(h), float64(tf32(float32(v) - h))
}

func emulateWindow(t *testing.T, p problem.Problem, k knobs, x, dy []float32) (dw, db []float64) {
	t.Helper()
	s := p.Shape
	g := geom(p, k)
	w := g.Win
	half := p.Precision.ElementBytes() == 2
	eb := p.Precision.ElementBytes()
	nhwc := p.Layout == problem.NHWC
	ce := 1
	if nhwc {
		ce = s.C
	}
	P, Q := s.P(), s.Q()
	kstep := g.KStep
	warps := g.Threads / 32
	crs := g.CRS
	dw = make([]float64, s.K*crs)
	db = make([]float64, s.K)
	type band struct{ n, p0, pix, tiles int }
	bandOf := func(b int) band {
		n := b / w.BandsPerImage
		p0 := (b - n*w.BandsPerImage) * w.Band
		pix := min(w.Band, P-p0) * Q
		return band{n, p0, pix, family.CeilDiv(pix, w.KT)}
	}
	for bx := range g.TilesN {
		for by := range g.TilesM {
			j0, k0 := bx*k.BN, by*k.BM
			tot := make([]float64, k.BN*k.BM) // [tap row][channel]
			coff := make([]int, k.BN)
			one := make([]bool, k.BN)
			for r := range k.BN {
				j := j0 + r
				if j < crs {
					if nhwc {
						rr, rem := j/(s.S*s.C), j%(s.S*s.C)
						coff[r] = rr*s.DilationH*w.WB + (w.PWA-s.PadW+rem/s.C*s.DilationW)*s.C + rem%s.C
					} else {
						c, rs := j/(s.R*s.S), j%(s.R*s.S)
						coff[r] = (c*w.WR+rs/s.S*s.DilationH)*w.WB + w.PWA - s.PadW + rs%s.S*s.DilationW
					}
				}
				one[r] = s.Bias && j == crs
			}
			for bz := range g.Parts {
				for b := bz * w.Bands / g.Parts; b < (bz+1)*w.Bands/g.Parts; b++ {
					bd := bandOf(b)
					win := make([]float64, w.Units*w.WB)
					for e := range w.Units * (w.WB / w.VX) {
						u, i0 := e/(w.WB/w.VX), e%(w.WB/w.VX)*w.VX
						h, c0 := bd.p0*s.StrideH-s.PadH+u, 0
						if !nhwc {
							c0, h = u/w.WR, bd.p0*s.StrideH-s.PadH+u%w.WR
						}
						e0 := i0 - w.PWA*ce
						if h >= 0 && h < s.H && e0 >= 0 && e0+w.VX <= s.W*ce {
							src := (bd.n*s.H+h)*s.W*s.C + e0
							if !nhwc {
								src = ((bd.n*s.C+c0)*s.H+h)*s.W + e0
							}
							for v := range w.VX {
								win[u*w.WB+i0+v] = float64(x[src+v])
							}
						}
					}
					table := make([]int, bd.tiles*w.KT)
					for i := range table {
						l := i/w.KT*w.KT + windowPerm(i%w.KT, half, w.DQ)
						if l >= bd.pix {
							l = 0
						}
						table[i] = l/Q*s.StrideH*w.WB + l%Q*s.StrideW*ce
					}
					for kt := range bd.tiles {
						// The stage, by element (byte / eb); NaN: unwritten.
						st := make([]float64, k.BM*128/eb)
						for i := range st {
							st[i] = math.NaN()
						}
						for tid := range g.Threads {
							lane, warp := tid%32, tid/32
							for u := range w.Fetch {
								var v float64
								var addr int
								if nhwc {
									octs, sgps := k.BM/8, w.KT/4
									m8, sg := lane%8, lane/8
									psg := windowPerm(sg, half, w.DQ)
									var octet, sgp int
									switch {
									case warps%octs == 0:
										octet, sgp = warp%octs, warp/octs+u*(warps/octs)
									case octs%warps == 0:
										octet, sgp = warp+(u%(octs/warps))*warps, u/(octs/warps)
									default:
										wi := warp + u*warps
										octet, sgp = wi%octs, wi/octs
									}
									if sgp >= sgps {
										continue
									}
									pp := windowPerm(4*sgp, half, w.DQ)
									if k0+octet*8+m8 < s.K && pp < bd.pix-kt*w.KT-psg {
										v = float64(dy[((bd.n*P+bd.p0)*Q+kt*w.KT+psg)*s.K+k0+m8+pp*s.K+octet*8])
									}
									tc := (m8 * 128) | (m8 << 4) | (eb * sg)
									cb := 4 * eb * sgp
									addr = octet*1024 + ((tc ^ ((cb >> 4) << 4)) + (cb & 15))
								} else {
									halves := w.KT / 32
									pi := warp%halves*32 + lane
									sb := windowPermInv(pi, half, w.DQ) * eb
									kk0, step := warp/halves, warps/halves
									kk := kk0 + u*step
									if kk >= k.BM {
										continue
									}
									if pi < bd.pix-kt*w.KT && k0+kk < s.K {
										v = float64(dy[((bd.n*s.K+k0+kk0)*P+bd.p0)*Q+kt*w.KT+pi+u*step*P*Q])
									}
									addr = kk/8*1024 + kk%8*128 + ((sb>>4)^(kk%8))<<4 + sb&15
								}
								if addr%eb != 0 || !math.IsNaN(st[addr/eb]) {
									t.Fatalf("%s %v: thread %d copy %d stores to byte %d twice or unaligned", p, k, tid, u, addr)
								}
								st[addr/eb] = v
							}
						}
						for ks := range w.KT / kstep {
							for e := range kstep {
								sl := kt*w.KT + ks*kstep + e
								kb := (ks*kstep + e) * eb
								for r := range k.BN {
									a := 1.0
									if !one[r] {
										at := coff[r] + table[sl]
										if at < 0 || at >= len(win) {
											t.Fatalf("%s %v: row %d reads window element %d of %d", p, k, r, at, len(win))
										}
										a = win[at]
									}
									for nn := range k.BM {
										bv := st[(nn/8*1024+nn%8*128+((kb>>4)^(nn%8))<<4+kb&15)/eb]
										if math.IsNaN(bv) {
											t.Fatalf("%s %v: tile %d reads an unwritten stage element (channel %d, slot %d)", p, k, kt, nn, ks*kstep+e)
										}
										if w.Split3 {
											// 3xtf32: the thread's A and the stage's dY
											// as TF32 high parts and rounded residuals,
											// three products (put and gather's split).
											ah, al := split3(a)
											bh, bl := split3(bv)
											tot[r*k.BM+nn] += al*bh + ah*bl + ah*bh
											continue
										}
										tot[r*k.BM+nn] += a * bv
									}
								}
							}
						}
					}
				}
			}
			for i := range k.BM {
				for r := range k.BN {
					kk, j := k0+i, j0+r
					switch {
					case kk >= s.K:
					case j < crs:
						dw[kk*crs+j] = tot[r*k.BM+i]
					case j == crs && s.Bias:
						db[kk] = tot[r*k.BM+i]
					}
				}
			}
		}
	}
	return dw, db
}

// TestWindowEmulated runs Stage=5's data movement on the CPU
// (emulateWindow) against convrt's float64 reference gradients, exactly
// (the products of float32 inputs summed in float64): shapes with several
// channel tiles (K past the tile), the bias row alone in a second tap tile,
// bands past P, band pixels that are no multiple of KT, blocks without
// bands, 2-byte window copies (VX=1), every DQ, tf32 and 16-bit element
// sizes in both layouts, and random first layers.
func TestWindowEmulated(t *testing.T) {
	type tc struct {
		spec string
		prec problem.Precision
		lay  problem.Layout
		k    knobs
	}
	kn := func(bm, bn, wm, split, clusters, band int) knobs {
		return knobs{BM: bm, BN: bn, WM: wm, WN: 1, Split: split, Clusters: clusters, Unroll: 1, Stage: 5, Stages: windowStages, Band: band}
	}
	cases := []tc{
		{"N=1,C=8,H=21,W=19,K=200,R=7,S=7,stride=2,pad=3", problem.TF32, problem.NCHW, kn(96, 384, 12, 8, 16, 4)},
		{"N=1,C=8,H=13,W=19,K=200,R=7,S=7,stride=2,pad=3", problem.TF32, problem.NHWC, kn(96, 256, 8, 4, 2, 16)},
		{"N=1,C=5,H=33,W=31,K=97,R=4,S=6,stride_h=3,stride_w=1,pad_h=1,pad_w=4,dilation_w=2", problem.TF32, problem.NHWC, kn(96, 192, 12, 1, 4, 9)},
		{"N=2,C=3,H=17,W=13,K=60,R=5,S=3,stride_w=2,pad_h=2,pad_w=1,dilation_w=2", problem.FP16, problem.NCHW, kn(24, 128, 8, 1, 0, 3)},
		{"N=2,C=8,H=16,W=16,K=60,R=4,S=4,pad=1", problem.BF16, problem.NHWC, kn(24, 128, 8, 8, 0, 5)},
		{"N=3,C=1,H=30,W=30,K=44,R=3,S=3,pad=1,bias=false", problem.FP16, problem.NCHW, kn(48, 128, 4, 2, 0, 7)},
		{"N=2,C=3,H=19,W=23,K=70,R=5,S=3,stride_h=2,stride_w=3,pad_h=2,pad_w=1,dilation_h=2", problem.FP16, problem.NHWC, kn(24, 192, 12, 2, 0, 64)},
		{"N=2,C=3,H=19,W=23,K=260,R=5,S=3,stride_h=2,stride_w=3,pad_h=2,pad_w=1,dilation_h=2", problem.TF32, problem.NCHW, kn(128, 128, 8, 3, 0, 2)},
		{"N=1,C=3,H=21,W=19,K=40,R=7,S=7,stride=2,pad=3", problem.TF32x3, problem.NCHW, kn(40, 192, 12, 8, 2, 4)},
		{"N=2,C=3,H=19,W=23,K=20,R=5,S=3,stride_h=2,stride_w=3,pad_h=2,pad_w=1,dilation_h=2", problem.TF32x3, problem.NHWC, kn(24, 128, 8, 2, 0, 3)},
	}
	fixed := len(cases)
	rng := rand.New(rand.NewPCG(27, 5))
	for range 5 {
		spec := problem.Shape{N: 1 + rng.IntN(3), C: 1 + rng.IntN(4), H: 6 + rng.IntN(20), W: 6 + rng.IntN(20), K: 1 + rng.IntN(70),
			R: 1 + rng.IntN(6), S: 1 + rng.IntN(6), StrideH: 1 + rng.IntN(3), StrideW: 1 + rng.IntN(3),
			DilationH: 1 + rng.IntN(2), DilationW: 1 + rng.IntN(2), Groups: 1, Bias: rng.IntN(2) == 0}
		spec.PadH, spec.PadW = rng.IntN(spec.R), rng.IntN(spec.S)
		prec := []problem.Precision{problem.TF32, problem.FP16, problem.BF16}[rng.IntN(3)]
		lay := []problem.Layout{problem.NCHW, problem.NHWC}[rng.IntN(2)]
		bm := family.RoundUp(min(spec.K, 128), 8)
		wm := []int{4, 8, 12, 16}[rng.IntN(4)]
		cases = append(cases, tc{spec.String(), prec, lay, kn(bm, wm*16*(1+rng.IntN(2)), wm, 1+rng.IntN(8), rng.IntN(3), 1+rng.IntN(8))})
	}
	dqs := map[int]bool{}
	ran := 0
	for i, c := range cases {
		shape, err := problem.ParseShape(c.spec)
		if err == nil {
			err = (problem.Problem{Shape: shape, Precision: c.prec, Layout: c.lay, Op: problem.OpWgrad}).Validate()
		}
		if err != nil && i >= fixed {
			continue // a random shape without output pixels
		} else if err != nil {
			t.Fatal(err)
		}
		ran++
		p := problem.Problem{Shape: shape, Precision: c.prec, Layout: c.lay, Op: problem.OpWgrad}
		if msg := windowCheck(c.k); msg != "" {
			t.Fatalf("%s %+v: %s", p, c.k, msg)
		}
		dqs[geom(p, c.k).Win.DQ] = true
		s := p.Shape
		x := make([]float32, s.N*s.C*s.H*s.W)
		dy := make([]float32, s.N*s.K*s.P()*s.Q())
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range dy {
			dy[i] = float32(rng.NormFloat64())
		}
		dw, db := emulateWindow(t, p, c.k, x, dy)
		id := func(v float32) float64 { return float64(v) }
		worst, norm := 0.0, 0.0
		for k := range s.K {
			for c := range s.C {
				for r := range s.R {
					for sc := range s.S {
						j := (c*s.R+r)*s.S + sc
						if p.Layout == problem.NHWC {
							j = (r*s.S+sc)*s.C + c
						}
						want := convrt.ReferenceWgrad(p, id, x, dy, k, c, r, sc)
						worst, norm = max(worst, math.Abs(dw[k*s.C*s.R*s.S+j]-want)), max(norm, math.Abs(want))
					}
				}
			}
			if s.Bias {
				worst = max(worst, math.Abs(db[k]-convrt.ReferenceBiasGrad(p, id, dy, k)))
			}
		}
		// The emulation keeps the FP32 values but in 3xtf32, whose split
		// products are within about 2^-21 of them each (a missing
		// residual product, 2^-11).
		if bound := map[bool]float64{false: 1e-9, true: 1e-5 * max(norm, 1)}[c.prec == problem.TF32x3]; worst > bound {
			t.Errorf("%s %+v: emulated gradients off by %.2e (bound %.2e)", p, c.k, worst, bound)
		}
	}
	if ran < fixed+3 {
		t.Errorf("%d of %d cases ran (the random shapes: at least 3 valid)", ran, len(cases))
	}
	if len(dqs) < 2 {
		t.Errorf("the cases cover DQ %v only", dqs)
	}
}
