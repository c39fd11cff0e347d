//go:build cuda

package autotune

import (
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// TestWGMMAIGEMMRelayoutSplitK tunes relayed-out NCHW problems split over
// a cluster (SplitK, the tile from the grid, the epoch from a ticket over
// every block): ResNet-50's s4-3x3 at N=32 forward in tf32 (Relayout=1),
// 3xtf32, fp16 and bf16, its fp16 data gradient, the chain
// scale_shift,relu in fp16 and, on the odd shape (partial tiles), in tf32
// (the odd shape's 16-bit tiles have too few k-tiles to split): pinned to
// up to four kept split candidates of each (the tuner launches the
// prologue, then the clusters). Every kernel must pass the float64 checks
// within the precision's bound.
func TestWGMMAIGEMMRelayoutSplitK(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	s4 := "N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1"
	odd := "N=3,C=24,H=19,W=23,K=40,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=2,dilation_h=2"
	for _, tc := range []struct {
		shape string
		prec  problem.Precision
		op    problem.Op
		chain string
	}{
		{s4, problem.TF32, problem.OpFprop, ""},
		{s4, problem.TF32x3, problem.OpFprop, ""},
		{s4, problem.FP16, problem.OpFprop, ""},
		{s4, problem.BF16, problem.OpFprop, ""},
		{s4, problem.FP16, problem.OpDgrad, ""},
		{odd, problem.TF32, problem.OpFprop, "scale_shift,relu"},
		{s4, problem.FP16, problem.OpFprop, "scale_shift,relu"},
	} {
		shape, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		p := problem.Problem{Shape: shape, Precision: tc.prec, Layout: problem.NCHW, Op: tc.op}
		if tc.chain != "" {
			if p.Epilogue, err = epilogue.Parse(tc.chain); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(p.String()+" "+tc.chain, func(t *testing.T) {
			cands, err := kernels.Enumerate(p, lim)
			if err != nil {
				t.Fatalf("enumerate: %v", err)
			}
			var pins []kernels.Candidate
			for _, c := range cands {
				// Kept, or pruned by a soft rule only (a pin lifts those).
				relaid := c.Config["Relayout"] == 1 || p.Precision.ElementBytes() == 2 && c.Config["PlaneA"] == 0
				if c.Family == "wgmmaigemm" && relaid && c.Config["SplitK"] > 1 && (c.Rejected == "" || c.Rejection.Soft) && len(pins) < 4 {
					pins = append(pins, c)
				}
			}
			if len(pins) == 0 {
				t.Fatal("no relayed-out split candidate")
			}
			tuneCandidates(t, lib, worker, p, pins, nil, 41)
		})
	}
}
