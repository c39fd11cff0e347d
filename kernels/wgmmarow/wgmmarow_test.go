package wgmmarow

import (
	"testing"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/kerneltest"
	"github.com/convgen/convgen/problem"
)

// checkRowSteps checks that the k steps of a wgmmarow geometry pair each
// 4-tap block of the filter (c, r, 4b) exactly once with the staged input
// it multiplies: block offset (c*stride_h + r*dilation_h - j*stride_h)*Pitch
// + 4b in group j's slot, both blocks of a step in one group, the second
// LBO16 16-byte units after the first, padding blocks only at a group's end.
func checkRowSteps(t *testing.T, s problem.Shape, g wgmmaRowGeometry) {
	t.Helper()
	sb := family.CeilDiv(s.S, 4)
	if len(g.Steps) != g.KSteps || len(g.BlockTaps) != 2*g.KSteps || len(g.BlockS0) != 2*g.KSteps {
		t.Fatalf("%d steps, %d taps, %d s0 for KSteps %d", len(g.Steps), len(g.BlockTaps), len(g.BlockS0), g.KSteps)
	}
	seen := map[int]int{}
	for i, st := range g.Steps {
		if st.Index != i || st.Group < 0 || st.Group >= g.GroupsPerRow {
			t.Fatalf("step %d: %+v", i, st)
		}
		for half, off := range []int{4 * st.Off16, 4 * (st.Off16 + st.LBO16)} {
			tap, s0 := g.BlockTaps[2*i+half], g.BlockS0[2*i+half]
			if tap < 0 {
				if half == 0 || st.LBO16 != 0 || (i+1 < g.KSteps && g.Steps[i+1].Group == st.Group) {
					t.Fatalf("step %d: padding block where a group does not end (%+v)", i, st)
				}
				continue
			}
			c, r := tap/(s.R*s.S), tap/s.S%s.R
			if tap%s.S != s0 || s0%4 != 0 || s0 >= 4*sb {
				t.Fatalf("step %d block %d: tap %d with s0 %d", i, half, tap, s0)
			}
			rr := r*s.DilationH - st.Group*s.StrideH
			if rr < 0 || rr >= s.StrideH {
				t.Fatalf("step %d block %d: filter row %d is not in group %d", i, half, r, st.Group)
			}
			if want := (c*s.StrideH+rr)*g.Pitch + s0; off != want {
				t.Fatalf("step %d block %d (c %d, r %d, s0 %d): offset %d, want %d", i, half, c, r, s0, off, want)
			}
			seen[tap]++
		}
	}
	for c := range s.C {
		for r := range s.R {
			for b := range sb {
				if tap := (c*s.R+r)*s.S + 4*b; seen[tap] != 1 {
					t.Errorf("block (c %d, r %d, s %d) taken %d times, want 1", c, r, 4*b, seen[tap])
				}
			}
		}
	}
}

func TestWGMMARowGeometry(t *testing.T) {
	lim := family.DefaultLimits(90)
	p := kerneltest.Flagship(t, problem.TF32, problem.NCHW)
	g := wgmmaRowGeom(p, wgmmaRowKnobs{TileK: 96, Warpgroups: 3, Lag: 2}, lim)
	// 11 filter rows at stride 4: 3 groups; 55 pixels of 12 taps: 228
	// floats a row; 3 groups of 36, 36 and 27 blocks: 18 + 18 + 14 steps.
	if g.GroupsPerRow != 3 || g.Pitch != 228 || g.KSteps != 50 || g.PairStage != 1 {
		t.Errorf("flagship: %d groups a row, pitch %d, %d k steps, pair staging %d; want 3, 228, 50, 1",
			g.GroupsPerRow, g.Pitch, g.KSteps, g.PairStage)
	}
	// The 96-channel filter (153,600 B) leaves room for 7 slots of 10,944 B.
	if g.Slots != 7 || g.SharedBytes > lim.MaxSharedPerBlock || g.SharedBytes+4*g.SlotFloats+16 <= lim.MaxSharedPerBlock {
		t.Errorf("flagship: %d slots, %d B of shared memory (limit %d); want the most that fit, 7", g.Slots, g.SharedBytes, lim.MaxSharedPerBlock)
	}
	checkRowSteps(t, p.Shape, g)
	for _, text := range []string{
		// dilated rows: some staged rows of a group are read by no filter row
		"N=3,C=3,H=47,W=48,K=40,R=5,S=7,stride_h=3,stride_w=4,pad_h=1,pad_w=2,dilation_h=2,bias=false",
		// stride_h 1: a group per filter row; odd pad_w: 4-byte staging
		"N=2,C=5,H=20,W=51,K=24,R=3,S=6,stride_h=1,stride_w=4,pad_h=1,pad_w=1",
		// R < stride_h: a row reads one group, part of it
		"N=2,C=2,H=40,W=40,K=16,R=2,S=2,stride=4,pad=0",
	} {
		s, err := problem.ParseShape(text)
		if err != nil {
			t.Fatal(err)
		}
		q := problem.Problem{Shape: s, Precision: problem.TF32, Layout: problem.NCHW}
		if err := (Family{}).Serves(q); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		g := wgmmaRowGeom(q, wgmmaRowKnobs{TileK: 8, Warpgroups: 1, Lag: 1}, lim)
		if want := family.CeilDiv((s.R-1)*s.DilationH+1, s.StrideH); g.GroupsPerRow != want {
			t.Errorf("%s: %d groups a row, want %d", text, g.GroupsPerRow, want)
		}
		if want := s.W%2 == 0 && s.PadW%2 == 0; (g.PairStage == 1) != want {
			t.Errorf("%s: pair staging %d", text, g.PairStage)
		}
		checkRowSteps(t, s, g)
	}
}
