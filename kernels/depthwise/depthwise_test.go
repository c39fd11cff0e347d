package depthwise

import (
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestStagingVector: NCHW staging loads are 16 bytes where the row length
// allows, narrower otherwise, single elements for odd rows; the staged
// tile starts at the aligned column SHIFT before its first input column.
func TestStagingVector(t *testing.T) {
	for _, tc := range []struct{ w, eb, want int }{
		{112, 4, 4}, {56, 4, 4}, {14, 4, 2}, {7, 4, 1},
		{112, 2, 8}, {28, 2, 4}, {14, 2, 2}, {7, 2, 1},
	} {
		if got := stagingVec(tc.w, tc.eb); got != tc.want {
			t.Errorf("stagingVec(%d, %d) = %d, want %d", tc.w, tc.eb, got, tc.want)
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
