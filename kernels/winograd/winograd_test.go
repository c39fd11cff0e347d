package winograd

import (
	"testing"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/kerneltest"
	"github.com/convgen/convgen/problem"
)

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
	lim := family.DefaultLimits(90)
	p := kerneltest.Flagship(t, problem.FP32, problem.NCHW)
	cands := Family{}.Space(p, lim)
	k := kerneltest.Kept(cands)
	if len(k) == 0 || len(k) == len(cands) {
		t.Fatalf("%d of %d kept: want some kept and some rejected", len(k), len(cands))
	}
	s := p.Shape
	for _, c := range k {
		cfg := kerneltest.MustKnobs[winogradKnobs](t, c)
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
	k := kerneltest.Kept(Family{}.Space(p, family.DefaultLimits(90)))
	if len(k) == 0 {
		t.Fatal("no candidate kept")
	}
	for _, c := range k {
		kn := kerneltest.MustKnobs[winogradKnobs](t, c)
		g := winogradGeom(s, kn)
		tg := kn.TileT / kn.ThreadT
		region := g.SharedBytes/4 - 16*5*kn.TileK
		if g.EpiTiles < 4 || 16*g.EpiTiles*tg*(kn.TileK+1) > region || 2*16*kn.Chunk*g.VPitch > region {
			t.Errorf("%s: %d epilogue rows do not fit the %d floats after U", c.ID(), g.EpiTiles, region)
		}
	}
}
