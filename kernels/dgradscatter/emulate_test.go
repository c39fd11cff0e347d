package dgradscatter

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/gradmma"
	"github.com/convgen/convgen/problem"
)

// tableAt is entry u of phase a's row of a tap table (Taps.Off), 0 past
// the row's taps (as the template's zero-padded tables).
func tableAt(v [][]int, a, u int) int {
	if u < len(v[a]) {
		return v[a][u]
	}
	return 0
}

// emulate runs the template's algorithm for p and k on the CPU, block by
// block and step by step, from the family's own geometry, tap tables and
// column offsets: it re-evaluates the template's static_asserts, fails on
// any shared-memory index out of range or read before it is written
// (buffers start as NaN), and compares dX with a direct float64 sum of
// dY·W over small-integer data (exact): every element written once, each
// equal.
func emulate(p problem.Problem, k knobs, rng *rand.Rand) error {
	s := p.Shape
	g := geom(p, k)
	mm := gradmma.For(p, "dX")
	KSTEP := mm.KStep
	half := KSTEP == 16
	P, Q := s.P(), s.Q()
	C, K, R, S, H, W, N := s.C, s.K, s.R, s.S, s.H, s.W, s.N
	SH, SW := s.StrideH, s.StrideW
	TP, TQ, WM := k.TP, k.TQ, k.WM
	TH, TW := g.AH.Tile, g.AW.Tile
	PSPAN, QSPAN := g.AH.Span, g.AW.Span
	ROWS, MPAD, MT := g.Rows, g.MPad, g.MT
	MAXTR, MAXTS := g.AH.Taps.Most, g.AW.Taps.Most
	BN, COLS, FM, FN := g.BN, g.Cols, g.FM, g.FN
	KPAD, PK, TPITCH := g.KPad, g.PK, g.TPitch
	NPH := len(g.Phases)
	// static asserts
	sa := func(ok bool, what string) error {
		if !ok {
			return fmt.Errorf("static_assert %s", what)
		}
		return nil
	}
	LOCAL_H, LOCAL_W := g.AH.Local, g.AW.Local
	for _, e := range []error{
		sa(g.Threads == 32*WM, "threads"),
		sa(TH == TP*SH && TW == TQ*SW, "tile"),
		sa(ROWS == PSPAN*QSPAN && MPAD == (ROWS+15)/16*16 && MT*16 == MPAD, "rows"),
		sa(FM == (MT+WM-1)/WM && FN*8 == BN, "frags"),
		sa(COLS == C*MAXTR*MAXTS && BN%8 == 0 && BN >= COLS && BN < COLS+8 && TPITCH == BN+3, "cols"),
		sa(KPAD%KSTEP == 0 && KPAD >= K && KPAD < K+KSTEP, "kpad"),
		sa(LOCAL_H == g.AH.Off*SH-s.PadH+g.AH.Shift && LOCAL_W == g.AW.Off*SW-s.PadW+g.AW.Shift, "local"),
		sa(-SH+LOCAL_H+(R-1)*s.DilationH < 0 && PSPAN*SH+LOCAL_H >= TH, "rows cover"),
		sa(-SW+LOCAL_W+(S-1)*s.DilationW < 0 && QSPAN*SW+LOCAL_W >= TW, "cols cover"),
		sa(NPH > 0, "nphases>0"),
	} {
		if e != nil {
			return e
		}
	}
	kl := 4
	if half {
		kl = 8
	}
	jl := 32 / kl
	if BN%jl != 0 || KPAD%kl != 0 {
		return fmt.Errorf("load_taps static_assert")
	}
	// tables
	NTR := make([]int, SH)
	for a := range SH {
		NTR[a] = len(g.AH.Taps.Tap[a])
	}
	NTS := make([]int, SW)
	for b := range SW {
		NTS[b] = len(g.AW.Taps.Tap[b])
	}
	var coloff []int
	for _, c := range strings.Split(colOffsets(p, g), ", ") {
		v, _ := strconv.Atoi(c)
		coloff = append(coloff, v)
	}
	if len(coloff) != NPH*BN {
		return fmt.Errorf("coloff len")
	}
	nhwc := p.Layout == problem.NHWC
	dy := make([]float64, N*K*P*Q)
	for i := range dy {
		dy[i] = float64(rng.IntN(7) - 3)
	}
	wt := make([]float64, K*C*R*S)
	for i := range wt {
		wt[i] = float64(rng.IntN(7) - 3)
	}
	dyAt := func(n, kk, pp, qq int) float64 {
		if nhwc {
			return dy[((n*P+pp)*Q+qq)*K+kk]
		}
		return dy[((n*K+kk)*P+pp)*Q+qq]
	}
	wAt := func(kk, c, r, ss int) float64 {
		if nhwc {
			return wt[((kk*R+r)*S+ss)*C+c]
		}
		return wt[((kk*C+c)*R+r)*S+ss]
	}
	ref := make([]float64, N*C*H*W)
	for n := range N {
		for kk := range K {
			for pp := range P {
				for qq := range Q {
					for r := range R {
						h := pp*SH - s.PadH + r*s.DilationH
						if h < 0 || h >= H {
							continue
						}
						for ss := range S {
							w := qq*SW - s.PadW + ss*s.DilationW
							if w < 0 || w >= W {
								continue
							}
							for c := range C {
								ref[((n*C+c)*H+h)*W+w] += dyAt(n, kk, pp, qq) * wAt(kk, c, r, ss)
							}
						}
					}
				}
			}
		}
	}
	dx := make([]float64, N*C*H*W)
	cnt := make([]int, N*C*H*W)
	nan := math.NaN()
	for bz := range N {
		for by := range g.AH.Tiles {
			for bx := range g.AW.Tiles {
				n := bz
				h0 := by*TH - g.AH.Shift
				p0, q0 := by*TP+g.AH.Off, bx*TQ+g.AW.Off
				store := func(h, f int, v float64) error {
					var c, wl, x int
					if nhwc {
						c, wl, x = f%C, (f/C)%TW, f/(C*TW)
					} else {
						wl, x, c = f%TW, (f/TW)%TP, f/(TP*TW)
					}
					hh := h + SH*x
					w := bx*TW - g.AW.Shift + wl
					if c >= C || x >= TP {
						return fmt.Errorf("store f out of range")
					}
					if hh < 0 || hh >= H || w < 0 || w >= W {
						return nil
					}
					i := ((n*C+c)*H+hh)*W + w
					dx[i] = v
					cnt[i]++
					return nil
				}
				so := coloff
				smA := make([]float64, MPAD*PK)
				for i := range smA {
					smA[i] = nan
				}
				for row := range ROWS {
					for kk := range K {
						pp, qq := p0+row/QSPAN, q0+row%QSPAN
						v := 0.0
						if pp >= 0 && pp < P && qq >= 0 && qq < Q {
							v = dyAt(n, kk, pp, qq)
						}
						smA[row*PK+kk] = v
					}
				}
				for e := 0; e < ROWS*(KPAD-K); e++ {
					smA[(e/(KPAD-K))*PK+K+e%(KPAD-K)] = 0
				}
				for e := 0; e < (MPAD-ROWS)*KPAD; e++ {
					smA[(ROWS+e/KPAD)*PK+e%KPAD] = 0
				}
				loadTaps := func(ph int) ([]float64, error) {
					sb := make([]float64, BN*PK)
					for i := range sb {
						sb[i] = nan
					}
					seen := make([]int, BN*PK)
					for e := 0; e < KPAD*BN; e++ {
						blk, l := e/32, e%32
						j := (blk%(BN/jl))*jl + l/kl
						kk := (blk/(BN/jl))*kl + l%kl
						if j >= BN || kk >= KPAD {
							return nil, fmt.Errorf("load_taps oob j=%d k=%d", j, kk)
						}
						off := so[ph*BN+j]
						v := 0.0
						if off >= 0 && kk < K {
							gi := kk*(C*R*S) + off
							if gi >= len(wt) {
								return nil, fmt.Errorf("wt oob")
							}
							v = wt[gi]
						}
						sb[j*PK+kk] = v
						seen[j*PK+kk]++
					}
					for j := range BN {
						for kk := range KPAD {
							if seen[j*PK+kk] != 1 {
								return nil, fmt.Errorf("load_taps coverage j=%d k=%d: %d", j, kk, seen[j*PK+kk])
							}
						}
					}
					return sb, nil
				}
				sxr := make([]float64, C*TP*TW)
				for e := 0; e < len(g.ZeroRows)*C*TP*TW; e++ {
					if err := store(h0+g.ZeroRows[e/(C*TP*TW)], e%(C*TP*TW), 0); err != nil {
						return err
					}
				}
				st := make([]float64, MPAD*TPITCH)
				for ph := range NPH {
					stw := make([]bool, MPAD*TPITCH)
					sb, err := loadTaps(ph)
					if err != nil {
						return err
					}
					a, b := g.Phases[ph]/SW, g.Phases[ph]%SW
					ntr, nts := NTR[a], NTS[b]
					nfn := (C*ntr*nts + 7) / 8
					if nfn > FN {
						return fmt.Errorf("nfn %d > FN %d", nfn, FN)
					}
					for warp := range WM {
						for fm := range FM {
							mt := warp + fm*WM
							if mt >= MT {
								break
							}
							for fn := range FN {
								if fn >= nfn {
									break
								}
								for rr := range 16 {
									row := mt*16 + rr
									for cc := range 8 {
										col := fn*8 + cc
										sum := 0.0
										for kk := range KPAD {
											av, bv := smA[row*PK+kk], sb[col*PK+kk]
											if math.IsNaN(av) || math.IsNaN(bv) {
												return fmt.Errorf("mma reads uninit")
											}
											sum += av * bv
										}
										if row >= MPAD || col >= BN {
											return fmt.Errorf("st write oob")
										}
										st[row*TPITCH+col] = sum
										stw[row*TPITCH+col] = true
									}
								}
							}
						}
					}
					for e := 0; e < C*TP*TQ; e++ {
						y, x, c := e%TQ, (e/TQ)%TP, e/(TP*TQ)
						base := (x*QSPAN+y)*TPITCH + c*ntr*nts
						sum := 0.0
						for u := range MAXTR {
							if u >= ntr {
								break
							}
							for v := range MAXTS {
								if v >= nts {
									break
								}
								di, dj := tableAt(g.AH.Taps.Off, a, u), tableAt(g.AW.Taps.Off, b, v)
								if x+di < 0 || x+di >= PSPAN || y+dj < 0 || y+dj >= QSPAN {
									return fmt.Errorf("gather window oob x=%d di=%d y=%d dj=%d", x, di, y, dj)
								}
								idx := base + (di*QSPAN+dj)*TPITCH + u*nts + v
								if idx < 0 || idx >= MPAD*TPITCH || !stw[idx] {
									return fmt.Errorf("gather reads unwritten st")
								}
								sum += st[idx]
							}
						}
						si := (c*TP+x)*TW + b + SW*y
						if si >= len(sxr) {
							return fmt.Errorf("sxr oob")
						}
						sxr[si] = sum
					}
					if g.PhaseEnd[ph] == 1 {
						for f := 0; f < C*TP*TW; f++ {
							var c, wl, x int
							if nhwc {
								c, wl, x = f%C, (f/C)%TW, f/(C*TW)
							} else {
								wl, x, c = f%TW, (f/TW)%TP, f/(TP*TW)
							}
							e := (c*TP+x)*TW + wl
							if err := store(h0+a, f, sxr[e]); err != nil {
								return err
							}
							sxr[e] = 0
						}
					}
				}
			}
		}
	}
	for i := range ref {
		if cnt[i] != 1 {
			return fmt.Errorf("dx[%d] written %d times", i, cnt[i])
		}
		if dx[i] != ref[i] {
			return fmt.Errorf("dx[%d] = %v want %v", i, dx[i], ref[i])
		}
	}
	return nil
}

// randShape is a random valid shape of few channels: strides to 5, dilation
// to 3, padding beyond the filter's extent, maps down to 1×1.
func randShape(rng *rand.Rand) problem.Shape {
	for {
		s := problem.Shape{N: 1 + rng.IntN(2), C: 1 + rng.IntN(32), K: 1 + rng.IntN(40),
			R: 1 + rng.IntN(7), S: 1 + rng.IntN(7), StrideH: 1 + rng.IntN(5), StrideW: 1 + rng.IntN(5),
			DilationH: 1 + rng.IntN(3), DilationW: 1 + rng.IntN(3), Groups: 1}
		if rng.IntN(4) == 0 {
			s.C = 1 + rng.IntN(4)
		}
		s.PadH = rng.IntN(s.R*s.DilationH + 4)
		s.PadW = rng.IntN(s.S*s.DilationW + 4)
		s.H = 1 + rng.IntN(30)
		s.W = 1 + rng.IntN(30)
		if s.Validate() != nil {
			continue
		}
		return s
	}
}

// TestEmulatedKernel emulates (emulate) the kernels of random served
// problems (tf32 and fp16, both layouts) for up to four of their kept
// configurations and one arbitrary one: 50 problems by default, 1500 with
// CONVGEN_FULL_SWEEP=1.
func TestEmulatedKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	precs := []problem.Precision{problem.TF32, problem.FP16}
	n := 50
	if os.Getenv("CONVGEN_FULL_SWEEP") == "1" {
		n = 1500
	}
	done := 0
	for done < n {
		s := randShape(rng)
		p := problem.Problem{Shape: s, Precision: precs[rng.IntN(2)], Layout: problem.Layouts[rng.IntN(2)], Op: problem.OpDgrad}
		if (Family{}).Serves(p) != nil {
			continue
		}
		done++
		lim := family.DefaultLimits(90)
		cands := family.AdmitSoft(Family{}.Space(p, lim))
		var ks []knobs
		for _, c := range cands {
			if c.Rejected == "" {
				k, err := family.ParseKnobs[knobs]("dgradscatter", c.Config)
				if err != nil {
					t.Fatal(err)
				}
				ks = append(ks, k)
			}
		}
		if len(ks) == 0 {
			t.Errorf("%v %s %s: served, but no candidate kept", s, p.Precision, p.Layout)
		}
		// and arbitrary knobs (Render takes any that pass check)
		ks = append(ks, knobs{TP: 1 + rng.IntN(40), TQ: 1 + rng.IntN(40), WM: 1 + rng.IntN(16)})
		if len(ks) > 4 {
			rng.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
			ks = ks[:4]
		}
		for _, k := range ks {
			if err := emulate(p, k, rng); err != nil {
				t.Errorf("%v %s %s %+v: %v", s, p.Precision, p.Layout, k, err)
			}
		}
	}
}
