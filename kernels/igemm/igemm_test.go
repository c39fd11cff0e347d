package igemm

import (
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestIGEMMVectorWidth: loads are 16 bytes where C (NHWC input) or C·R·S
// (filter) allows, narrower otherwise, one element for odd 2-byte runs.
func TestIGEMMVectorWidth(t *testing.T) {
	for _, tc := range []struct{ run, eb, want int }{
		{64, 2, 8}, {12, 2, 4}, {6, 2, 2}, {13, 2, 1}, {27, 2, 1},
		{64, 4, 4}, {6, 4, 2}, {13, 4, 1}, {3, 4, 1},
	} {
		if got := igemmVec(tc.run, tc.eb); got != tc.want {
			t.Errorf("igemmVec(%d, %d) = %d, want %d", tc.run, tc.eb, got, tc.want)
		}
	}
	s, err := problem.ParseShape("N=1,C=13,H=8,W=8,K=8,R=3,S=3")
	if err != nil {
		t.Fatal(err)
	}
	for _, lay := range problem.Layouts {
		g := igemmGeom(problem.Problem{Shape: s, Precision: problem.FP16, Layout: lay}, igemmKnobs{BM: 64, BN: 64, BK: 32, WarpsM: 2, WarpsN: 2, Stages: 3})
		if g.VecA != 1 || g.VecB != 1 {
			t.Errorf("%s C=13 fp16: VecA=%d VecB=%d, want element loads", lay, g.VecA, g.VecB)
		}
	}
}
