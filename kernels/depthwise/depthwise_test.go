package depthwise

import (
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestStagingVector: NCHW staging loads are 16 bytes where the row length
// allows, narrower otherwise, single elements for odd rows; the staged
// tile starts at the aligned column SHIFT before its first input column.
func TestStagingVector(t *testing.T) {
	for _, tc := range []struct{ w, eb, step, want int }{
		{112, 4, 16, 4}, {56, 4, 32, 4}, {14, 4, 16, 2}, {7, 4, 16, 1},
		{112, 2, 16, 8}, {28, 2, 64, 4}, {14, 2, 16, 2}, {7, 2, 16, 1},
		{112, 4, 2, 2}, {112, 2, 4, 4}, {112, 4, 3, 1}, // a pinned narrow tile
	} {
		if got := stagingVec(tc.w, tc.eb, tc.step); got != tc.want {
			t.Errorf("stagingVec(%d, %d, %d) = %d, want %d", tc.w, tc.eb, tc.step, got, tc.want)
		}
	}
	s, err := problem.ParseShape("N=1,C=8,H=28,W=28,K=8,R=3,S=3,pad=1,groups=8")
	if err != nil {
		t.Fatal(err)
	}
	g := geom(problem.Problem{Shape: s, Precision: problem.FP32, Layout: problem.NCHW}, Knobs{TileH: 8, TileW: 32, OutputsPerThread: 2})
	// Input columns -1 .. 32 of the first tile; the aligned row starts at -4.
	if g.LoadVec != 4 || g.Shift != 3 || g.InTileW != 34 || g.InPitch != 40 || g.SharedBytes != 4*10*40 {
		t.Errorf("LoadVec %d, Shift %d, InTileW %d, InPitch %d, SharedBytes %d; want 4, 3, 34, 40, 1600",
			g.LoadVec, g.Shift, g.InTileW, g.InPitch, g.SharedBytes)
	}
}

// TestStagingVectorPinnedTiles: every configuration checkKnobs accepts,
// narrow pinned tiles included, has the staging geometry the template
// asserts (W and TileW·StrideW multiples of LoadVec, SHIFT + PAD_W too);
// a TileW of 2 over rows of 112 once rendered LoadVec 4 and failed to
// compile.
func TestStagingVectorPinnedTiles(t *testing.T) {
	for _, spec := range []string{
		"N=1,C=8,H=112,W=112,K=8,R=3,S=3,pad=1,groups=8",
		"N=1,C=8,H=56,W=56,K=8,R=3,S=3,stride=2,pad=1,groups=8",
		"N=1,C=8,H=30,W=30,K=8,R=5,S=5,stride=3,pad=2,groups=8",
	} {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, prec := range []problem.Precision{problem.FP32, problem.FP16} {
			p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NCHW}
			for tw := 1; tw <= 64; tw++ {
				for _, opt := range []int{1, 2, 4} {
					k := Knobs{TileH: 32 * opt, TileW: tw, OutputsPerThread: opt}
					if checkKnobs(p, k) != nil {
						continue
					}
					g := geom(p, k)
					if s.W%g.LoadVec != 0 || (tw*s.StrideW)%g.LoadVec != 0 || (g.Shift+s.PadW)%g.LoadVec != 0 {
						t.Errorf("%s %s %+v: LoadVec %d, Shift %d break the staging asserts", spec, prec, k, g.LoadVec, g.Shift)
					}
				}
			}
		}
	}
}
