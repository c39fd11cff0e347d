//go:build cuda

package autotune

import (
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/nvrtc"
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
	for _, tc := range []pinnedNCHWCase{
		{s4, problem.TF32, problem.OpFprop, ""},
		{s4, problem.TF32x3, problem.OpFprop, ""},
		{s4, problem.FP16, problem.OpFprop, ""},
		{s4, problem.BF16, problem.OpFprop, ""},
		{s4, problem.FP16, problem.OpDgrad, ""},
		{odd, problem.TF32, problem.OpFprop, "scale_shift,relu"},
		{s4, problem.FP16, problem.OpFprop, "scale_shift,relu"},
	} {
		tunePinnedRelayout(t, lib, worker, lim, tc, func(c kernels.Candidate) bool { return c.Config["SplitK"] > 1 }, 41)
	}
}

// TestWGMMAIGEMMRelayoutStoreRows tunes tf32 and 3xtf32 relayed-out NCHW
// forwards storing through shared memory (StoreRows: the tile staged
// channel by channel, then stored along the pixels, 16 bytes a thread
// where P·Q is a multiple of 4, one pixel a thread elsewhere): ResNet-50's
// s3-3x3 (14², 16-byte runs) and s4-3x3 (7², single pixels) at N=32, the
// odd shape with scale_shift,relu and s3-3x3 with residual(0.5) (the
// residual read 16 bytes at a time): pinned to up to four StoreRows
// candidates of each. Every kernel must pass the float64 checks.
func TestWGMMAIGEMMRelayoutStoreRows(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	s3 := "N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1"
	s4 := "N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1"
	odd := "N=3,C=24,H=19,W=23,K=40,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=2,dilation_h=2"
	for _, tc := range []pinnedNCHWCase{
		{s3, problem.TF32, problem.OpFprop, ""},
		{s4, problem.TF32, problem.OpFprop, ""},
		{s3, problem.TF32x3, problem.OpFprop, ""},
		{odd, problem.TF32, problem.OpFprop, "scale_shift,relu"},
		{s3, problem.TF32, problem.OpFprop, "residual(0.5)"},
	} {
		tunePinnedRelayout(t, lib, worker, lim, tc, func(c kernels.Candidate) bool { return c.Config["StoreRows"] == 1 }, 43)
	}
}

// pinnedNCHWCase is an NCHW problem of the relayed-out split and StoreRows GPU tests.
type pinnedNCHWCase struct {
	shape string
	prec  problem.Precision
	op    problem.Op
	chain string
}

// tunePinnedRelayout tunes tc's problem over up to four of its relayed-out
// wgmmaigemm candidates that want accepts, kept or pruned by a soft rule
// only (a pin lifts those), and checks every one (tuneCandidates).
func tunePinnedRelayout(t *testing.T, lib *nvrtc.Library, worker []string, lim kernels.Limits, tc pinnedNCHWCase, want func(kernels.Candidate) bool, seed uint64) {
	t.Helper()
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
			relaid := c.Config["Relayout"] == 1 || p.Precision.ElementBytes() == 2 && c.Config["PlaneA"] == 0
			if c.Family == "wgmmaigemm" && relaid && want(c) && (c.Rejected == "" || c.Rejection.Soft) && len(pins) < 4 {
				pins = append(pins, c)
			}
		}
		if len(pins) == 0 {
			t.Fatal("no such relayed-out candidate")
		}
		tuneCandidates(t, lib, worker, p, pins, nil, seed)
	})
}
