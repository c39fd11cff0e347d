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

// wgmmaRowReadEnds returns one past the last byte of dynamic shared memory
// that any wgmma of the kernel with geometry g and TileK tileK may address:
// aEnd for the A operand (a ring slot: the last slot's, the highest), bEnd
// for B (the filter slice). Two readings of a descriptor are covered: the
// tensor cores' (no swizzle, K-major: 8-row core matrices of 16 contiguous
// bytes, A's 64 rows 16 bytes apart in each of the step's two 4-tap blocks,
// LBO apart; B's TileK/8 channel groups B_SBO apart, each two core matrices
// of 128 bytes) and compute-sanitizer memcheck's, which counts an operand as
// the M (or N) x 32 contiguous bytes from the descriptor's start ("Invalid
// __shared__ read of size 2048 bytes" for A at the start of a step).
func wgmmaRowReadEnds(g wgmmaRowGeometry, tileK int) (aEnd, bEnd int) {
	filter := 4 * tileK * g.KSteps * 8
	lastSlot := filter + 4*(g.Slots-1)*g.SlotFloats
	bSBO := g.KSteps * 8 * 32
	for _, st := range g.Steps {
		a := lastSlot + 16*st.Off16
		aEnd = max(aEnd, a+16*st.LBO16+64*16, a+64*32)
		b := 256 * st.Index
		bEnd = max(bEnd, b+(tileK/8-1)*bSBO+256, b+tileK*32)
	}
	return aEnd, bEnd
}

// TestWGMMARowDescriptorsInBounds checks, for every kept configuration of
// the flagship and of odd shapes, that every byte a wgmma descriptor may
// address lies inside the dynamic shared memory the kernel is launched
// with, and holds defined values: A inside the ring and its zeroed slack
// (not the mbarriers after it), B inside the filter slice. (The flagship
// winner Lag=2,RowsPerBlock=107,Slots=7,TileK=96,Warpgroups=3 once read
// 896 bytes past its 230,464 under memcheck.)
func TestWGMMARowDescriptorsInBounds(t *testing.T) {
	lim := family.DefaultLimits(90)
	lim.SM90a = true
	problems := []problem.Problem{kerneltest.Flagship(t, problem.TF32, problem.NCHW)}
	for _, text := range []string{
		"N=128,C=3,H=227,W=227,K=96,R=11,S=11,stride=4,pad=0", // AlexNet's own conv1
		"N=256,C=3,H=224,W=224,K=64,R=11,S=11,stride=4,pad=2", // the flagship with K 64
		// the sanitizer's odd shapes with stride_w 4, then TestWGMMARowGeometry's
		"N=2,C=3,H=61,W=67,K=24,R=11,S=11,stride=4,pad=2",
		"N=2,C=3,H=45,W=51,K=24,R=5,S=6,stride=4,pad_h=2,pad_w=1",
		"N=3,C=3,H=47,W=48,K=40,R=5,S=7,stride_h=3,stride_w=4,pad_h=1,pad_w=2,dilation_h=2,bias=false",
		"N=2,C=5,H=20,W=51,K=24,R=3,S=6,stride_h=1,stride_w=4,pad_h=1,pad_w=1",
		"N=2,C=2,H=40,W=40,K=16,R=2,S=2,stride=4,pad=0",
		"N=4,C=1,H=253,W=253,K=8,R=1,S=1,stride=4,pad=0", // Q = 64, one tap: the slack does it all
		"N=1,C=7,H=30,W=30,K=8,R=9,S=13,stride_h=2,stride_w=4,pad=3",
	} {
		s, err := problem.ParseShape(text)
		if err != nil {
			t.Fatal(err)
		}
		problems = append(problems, problem.Problem{Shape: s, Precision: problem.TF32, Layout: problem.NCHW})
	}
	for _, p := range problems {
		if err := (Family{}).Serves(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		kept := kerneltest.Kept(family.AdmitSoft(Family{}.Space(p, lim))) // as kernels.Enumerate offers them
		if len(kept) == 0 {
			t.Errorf("%s: no kept configuration", p)
		}
		for _, c := range kept {
			k := kerneltest.MustKnobs[wgmmaRowKnobs](t, c)
			kern, err := Family{}.Render(p, c.Config)
			if err != nil {
				t.Fatalf("%s %s: %v", p, c.ID(), err)
			}
			g := wgmmaRowGeom(p, k, family.Limits{})
			filter := 4 * k.TileK * g.KSteps * 8
			zeroed := filter + 4*(g.Slots*g.SlotFloats+g.SlackFloats) // the slack ends there, the mbarriers follow
			aEnd, bEnd := wgmmaRowReadEnds(g, k.TileK)
			if aEnd > zeroed || aEnd > kern.SharedBytes {
				t.Errorf("%s %s: an A descriptor addresses up to byte %d, past the ring's zeroed slack (%d) of %d B",
					p, c.ID(), aEnd, zeroed, kern.SharedBytes)
			}
			if bEnd > filter {
				t.Errorf("%s %s: a B descriptor addresses up to byte %d, past the %d B filter slice", p, c.ID(), bEnd, filter)
			}
			if kern.SharedBytes > lim.MaxSharedPerBlock {
				t.Errorf("%s %s: %d B of shared memory > %d", p, c.ID(), kern.SharedBytes, lim.MaxSharedPerBlock)
			}
		}
	}
}
