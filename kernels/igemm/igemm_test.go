package igemm

import (
	"testing"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/dgradphase"
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

// TestFoldGeometry: the folded dgrad's columns, offset span and reduction
// on the flagship (C=3, 11x11, stride 4, pad 2: row and column offsets -2
// to 1 over the four phases), and Fold refused where there is nothing to
// fold.
func TestFoldGeometry(t *testing.T) {
	s, err := problem.ParseShape("N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2")
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: s, Precision: problem.TF32, Layout: problem.NCHW, Op: problem.OpDgrad}
	g := igemmGeom(p, igemmKnobs{BM: 128, BN: 64, BK: 32, WarpsM: 4, WarpsN: 2, Stages: 3, Fold: 1})
	if !g.Folded || g.CF != 48 || g.DPMin != -2 || g.NDP != 4 || g.DQMin != -2 || g.NDQ != 4 || g.KRed != 4*4*96 || g.TilesN != 1 || g.GridZ != 1 || g.M != 256*56*56 {
		t.Errorf("flagship fold geometry %+v", g)
	}
	if lo, n := dgradphase.Axis(1, 2, 0, 1).OffsetSpan(); lo != 0 || n != 1 {
		t.Errorf("1-tap stride-2 span [%d, +%d), want [0, +1)", lo, n)
	}
	if !foldable(p) {
		t.Error("the flagship's dgrad is not foldable")
	}
	one, err := problem.ParseShape("N=2,C=3,H=8,W=8,K=8,R=3,S=3,pad=1")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []problem.Problem{
		{Shape: one, Precision: problem.FP16, Layout: problem.NHWC, Op: problem.OpDgrad},
		{Shape: s, Precision: problem.FP16, Layout: problem.NHWC, Op: problem.OpFprop},
	} {
		if foldable(q) {
			t.Errorf("%s: foldable", q)
		}
		if _, err := (Family{}).Render(q, family.Config{"BM": 64, "BN": 64, "BK": 32, "WarpsM": 2, "WarpsN": 2, "Stages": 3, "Fold": 1}); err == nil {
			t.Errorf("%s: Fold=1 rendered", q)
		}
	}
}
