package kernels

import (
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestWinogradServes checks which shapes the family takes: at most three
// filter taps per stride phase, dilation 1, fp32 only.
func TestWinogradServes(t *testing.T) {
	for _, tc := range []struct {
		shape string
		prec  problem.Precision
		want  string // "" for served, else a fragment of the reason
	}{
		{"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2", problem.FP32, ""},
		{"N=2,C=5,H=19,W=23,K=20,R=3,S=3,pad=1", problem.FP32, ""},
		{"N=2,C=3,H=60,W=64,K=32,R=7,S=7,stride=4,pad=3", problem.FP32, ""},
		{"N=2,C=3,H=60,W=64,K=32,R=7,S=7,stride=2,pad=3", problem.FP32, "at most 3 filter taps per stride phase, not 4x4"},
		{"N=2,C=3,H=60,W=64,K=32,R=3,S=3,dilation=2", problem.FP32, "dilation 1"},
		{"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2", problem.TF32, "only fp32"},
	} {
		s, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		err = Winograd{}.Serves(problem.Problem{Shape: s, Precision: tc.prec, Layout: problem.NCHW})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %s: %v, want served", tc.shape, tc.prec, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %s: error %v, want one containing %q", tc.shape, tc.prec, err, tc.want)
		}
	}
}

// TestWinogradVPitch checks the transformed-input row length against the
// bank model it is chosen by: 16-byte rows, and the stores of one warp's
// pairs (b fastest, then tiles) spread over all 32 banks.
func TestWinogradVPitch(t *testing.T) {
	for _, tc := range []struct{ tileT, strideW, threads, want int }{
		{32, 4, 384, 40}, // flagship: 4 phase columns x 8 tiles per warp, rows 8 banks apart
		{64, 4, 512, 72},
		{32, 1, 256, 32}, // stride 1: a warp stores one row of 32 tiles
		{32, 2, 256, 48},
	} {
		got := winogradVPitch(tc.tileT, tc.strideW, tc.threads)
		if got != tc.want {
			t.Errorf("winogradVPitch(%d, %d, %d) = %d, want %d", tc.tileT, tc.strideW, tc.threads, got, tc.want)
		}
		if got%4 != 0 || got < tc.tileT {
			t.Errorf("pitch %d: not 16-byte rows of at least %d floats", got, tc.tileT)
		}
		var banks [32]int
		for lane := range 32 {
			tile, col := lane/tc.strideW%tc.tileT, lane/(tc.strideW*tc.tileT)*tc.strideW+lane%tc.strideW
			banks[(col*got+tile)%32]++
		}
		for b, n := range banks {
			if n != 1 {
				t.Errorf("pitch %d for tileT=%d strideW=%d: bank %d takes %d stores of a warp, want 1", got, tc.tileT, tc.strideW, b, n)
			}
		}
	}
}

// TestWinogradSpace checks the flagship's space: every kept configuration
// tiles the problem, fits the SM and has an epilogue round; the grid covers
// every step of every channel block.
func TestWinogradSpace(t *testing.T) {
	lim := DefaultLimits(90)
	p := flagship(t, problem.FP32, problem.NCHW)
	cands := Winograd{}.Space(p, lim)
	k := kept(cands)
	if len(k) == 0 || len(k) == len(cands) {
		t.Fatalf("%d of %d kept: want some kept and some rejected", len(k), len(cands))
	}
	s := p.Shape
	for _, c := range k {
		cfg := mustKnobs[winogradKnobs](t, c)
		g := winogradGeom(s, cfg)
		if g.SharedBytes > lim.MaxSharedPerBlock || g.ThreadsPerBlock > lim.MaxThreadsPerBlock || g.EpiTiles == 0 {
			t.Errorf("%s kept with %d B shared, %d threads, epilogue rows %d", c.ID(), g.SharedBytes, g.ThreadsPerBlock, g.EpiTiles)
		}
		if (s.C*s.StrideH*s.StrideW)%cfg.Chunk != 0 || cfg.Chunk%s.StrideW != 0 {
			t.Errorf("%s: Chunk does not hold whole phase columns of the 48 phase channels", c.ID())
		}
		blocksPerK := g.Grid / (s.K / cfg.TileK)
		if blocksPerK*cfg.StepsPerBlock < g.Steps || (blocksPerK-1)*cfg.StepsPerBlock >= g.Steps {
			t.Errorf("%s: %d blocks of %d steps per channel block for %d steps", c.ID(), blocksPerK, cfg.StepsPerBlock, g.Steps)
		}
		if g.Grid > 2*lim.SMs {
			t.Errorf("%s: grid %d is not persistent (one or two blocks per SM)", c.ID(), g.Grid)
		}
	}
}

// TestWinogradSmallChannels checks that a stride-1 3x3 shape with few
// channels keeps candidates: its epilogue round outgrows the small stage
// buffers, which then grow to hold it.
func TestWinogradSmallChannels(t *testing.T) {
	s, err := problem.ParseShape("N=2,C=5,H=19,W=23,K=20,R=3,S=3,pad=1")
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: s, Precision: problem.FP32, Layout: problem.NCHW}
	k := kept(Winograd{}.Space(p, DefaultLimits(90)))
	if len(k) == 0 {
		t.Fatal("no candidate kept")
	}
	for _, c := range k {
		kn := mustKnobs[winogradKnobs](t, c)
		g := winogradGeom(s, kn)
		tg := kn.TileT / kn.ThreadT
		region := g.SharedBytes/4 - 16*5*kn.TileK
		if g.EpiTiles < 4 || 16*g.EpiTiles*tg*(kn.TileK+1) > region || 2*16*kn.Chunk*g.VPitch > region {
			t.Errorf("%s: %d epilogue rows do not fit the %d floats after U", c.ID(), g.EpiTiles, region)
		}
	}
}

// TestWinogradArithmetic checks that the family keeps no candidate where it
// would not save multiplies: 4·StrideH·StrideW ≥ R·S (a 7×7 filter at
// stride 4, a 1×1 filter), and keeps some where it does.
func TestWinogradArithmetic(t *testing.T) {
	for _, tc := range []struct {
		shape string
		keeps bool
	}{
		{"N=2,C=3,H=60,W=64,K=32,R=7,S=7,stride=4,pad=3", false},
		{"N=2,C=8,H=20,W=20,K=32,R=1,S=1", false},
		{"N=2,C=3,H=61,W=67,K=24,R=11,S=11,stride=4,pad=2", true},
		{"N=2,C=5,H=19,W=23,K=20,R=3,S=3,pad=1", true},
	} {
		s, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		cands := Winograd{}.Space(problem.Problem{Shape: s, Precision: problem.FP32, Layout: problem.NCHW}, DefaultLimits(90))
		if got := len(kept(cands)) > 0; got != tc.keeps {
			t.Errorf("%s: keeps candidates %v, want %v", tc.shape, got, tc.keeps)
		}
		if !tc.keeps {
			for _, c := range cands {
				if !strings.HasPrefix(c.Rejected, "arithmetic:") {
					t.Errorf("%s: %s rejected for %q, want the arithmetic reason", tc.shape, c.ID(), c.Rejected)
				}
			}
		}
	}
}
