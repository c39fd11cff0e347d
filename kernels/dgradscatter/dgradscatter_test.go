package dgradscatter

import (
	"math/rand/v2"
	"testing"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// TestTileAxis checks the tiling of random axes against the convolution's
// definition: every dY position whose tap lands on a dX position of a tile
// lies in the tile's window, the products of the window's first and last
// positions do reach the tile (no wasted window rows), and the phase tables
// name exactly the taps each tile position meets, with the window position
// each reads.
func TestTileAxis(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		st, d := 1+rng.IntN(5), 1+rng.IntN(3)
		r := 1 + rng.IntN(11)
		pad := rng.IntN(r*d + 6) // up to beyond the filter's extent
		x := 1 + rng.IntN(60)    // down to maps smaller than the filter
		if x+2*pad < d*(r-1)+1 {
			continue
		}
		y := (x+2*pad-d*(r-1)-1)/st + 1
		tp := 1 + rng.IntN(min(y, 20))
		a := tileAxis(x, tp, st, pad, r, d)
		if a.Tile != tp*st || a.Shift < 0 || a.Shift >= st || a.Tiles*a.Tile < x+a.Shift {
			t.Fatalf("x=%d st=%d pad=%d r=%d d=%d tp=%d: %+v does not cover the axis", x, st, pad, r, d, tp, a)
		}
		for tile := range a.Tiles {
			lo := tile*a.Tile - a.Shift
			reaches := map[int]bool{}
			for p := (lo-r*d)/st - 3; p < (lo+a.Tile+pad)/st+3; p++ {
				for tap := range r {
					h := p*st - pad + tap*d
					if h < lo || h >= lo+a.Tile {
						continue
					}
					i := p - (tile*tp + a.Off)
					reaches[i] = true
					if i < 0 || i >= a.Span {
						t.Fatalf("x=%d st=%d pad=%d r=%d d=%d tp=%d tile %d: dY %d (tap %d) reaches dX %d outside the window [%d, %d)",
							x, st, pad, r, d, tp, tile, p, tap, h, tile*tp+a.Off, tile*tp+a.Off+a.Span)
					}
					if got := i*st + tap*d + a.Local; got != h-lo {
						t.Fatalf("Local: window %d tap %d lands at %d, want %d", i, tap, got, h-lo)
					}
					ph, xx := (h-lo)%st, (h-lo)/st
					found := false
					for u, tt := range a.Taps.Tap[ph] {
						if tt == tap {
							found = true
							if xx+a.Taps.Off[ph][u] != i {
								t.Fatalf("phase %d tap %d: window %d, want %d", ph, tap, xx+a.Taps.Off[ph][u], i)
							}
						}
					}
					if !found {
						t.Fatalf("phase %d lacks tap %d", ph, tap)
					}
				}
			}
			if !reaches[0] || !reaches[a.Span-1] {
				t.Fatalf("x=%d st=%d pad=%d r=%d d=%d tp=%d: window %+v wider than the taps that reach tile %d", x, st, pad, r, d, tp, a, tile)
			}
		}
		taps := 0
		for _, l := range a.Taps.Tap {
			taps += len(l)
		}
		if taps != r {
			t.Fatalf("the phases list %d taps, want %d", taps, r)
		}
	}
}

// TestServedKept: every data gradient the family serves keeps a candidate
// on an sm_90 (the soft rules lifted where they would reject all), and no
// kept candidate holds more accumulators than its block's registers allow
// a thread (__launch_bounds__), for random strided shapes of few channels:
// odd and large K, dilation, padding beyond the filter, tiny maps, N = 1.
func TestServedKept(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	lim := family.DefaultLimits(90)
	served := 0
	for range 400 {
		s := problem.Shape{N: 1 + rng.IntN(4), C: 1 + rng.IntN(32), H: 1 + rng.IntN(70), W: 1 + rng.IntN(70), K: 1 + rng.IntN(600),
			R: 1 + rng.IntN(11), S: 1 + rng.IntN(11), StrideH: 1 + rng.IntN(5), StrideW: 1 + rng.IntN(5),
			PadH: rng.IntN(8), PadW: rng.IntN(8), DilationH: 1 + rng.IntN(3), DilationW: 1 + rng.IntN(3), Groups: 1}
		if s.Validate() != nil {
			continue
		}
		for _, prec := range []problem.Precision{problem.TF32, problem.FP16} {
			p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NHWC, Op: problem.OpDgrad}
			if (Family{}).Serves(p) != nil {
				continue
			}
			served++
			kept := 0
			for _, c := range family.AdmitSoft(Family{}.Space(p, lim)) {
				if c.Rejected != "" {
					continue
				}
				kept++
				k, err := family.ParseKnobs[knobs]("dgradscatter", c.Config)
				if err != nil {
					t.Fatal(err)
				}
				if g := geom(p, k); g.FM*g.FN*4 > 65536/g.Threads-40 {
					t.Errorf("%s %s: %d accumulators a thread in blocks of %d threads", p, c.ID(), g.FM*g.FN*4, g.Threads)
				}
			}
			if kept == 0 {
				t.Errorf("%s: served, but no candidate kept", p)
			}
		}
	}
	if served < 50 {
		t.Fatalf("only %d problems served", served)
	}
}
