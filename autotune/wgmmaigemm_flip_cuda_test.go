//go:build cuda

package autotune

import (
	"testing"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// nhwcDgradCase is an NHWC data gradient of the dgrad-variant tests: a
// shape and a precision.
type nhwcDgradCase struct {
	shape string
	prec  problem.Precision
}

// tuneNHWCDgrad tunes each case through tuneKeptPins with keep (a subtest
// each, named by its problem and suffix).
func tuneNHWCDgrad(t *testing.T, lib *nvrtc.Library, worker []string, lim kernels.Limits, cases []nhwcDgradCase, suffix string, keep func(kernels.Candidate) bool, seed uint64) {
	t.Helper()
	for _, tc := range cases {
		shape, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		p := problem.Problem{Shape: shape, Precision: tc.prec, Layout: problem.NHWC, Op: problem.OpDgrad}
		t.Run(p.String()+suffix, func(t *testing.T) { tuneKeptPins(t, lib, worker, lim, p, keep, seed) })
	}
}

// TestWGMMAIGEMMFlipFilter tunes NHWC data gradients at stride 1 through
// wgmmaigemm's FlipFilter candidates alone (the forward of dY by the
// flipped, transposed filter, copied by the prologue or, launched alone,
// by the kernel's blocks): ResNet-50-like 3×3 and 1×1 layers in tf32 and
// fp16, an odd dilated tf32 shape (C=13, K=12, 3×5, asymmetric padding:
// partial copy tiles, the forward's padding 3×2), an unpadded bf16 3×3
// and an fp16 3×3 with C=13 (dX's channels need no 16-byte runs);
// on a 7×7 map (52 tiles of 128 × 128 for 132 SMs) its split-K ones (the
// tile from the grid, the epoch from a ticket over every block). Each
// problem's first, middle and last kept such configurations must pass the
// float64 checks: the worker's first run launches the kernel alone (its
// blocks copy the filter), the re-check after the timed runs follows
// prologue launches.
func TestWGMMAIGEMMFlipFilter(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	tuneNHWCDgrad(t, lib, worker, lim, []nhwcDgradCase{
		{"N=8,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,bias=false", problem.TF32},
		{"N=8,C=256,H=14,W=14,K=1024,R=1,S=1,bias=false", problem.TF32},
		{"N=3,C=13,H=9,W=11,K=12,R=3,S=5,pad_h=1,pad_w=2,dilation_h=2,bias=false", problem.TF32},
		{"N=4,C=128,H=28,W=28,K=128,R=3,S=3,pad=1,bias=false", problem.FP16},
		{"N=2,C=24,H=10,W=10,K=40,R=3,S=3,bias=false", problem.BF16},
		{"N=3,C=13,H=9,W=11,K=16,R=3,S=3,pad=1,bias=false", problem.FP16},
	}, "", func(c kernels.Candidate) bool { return c.Config["FlipFilter"] == 1 }, 19)
	tuneNHWCDgrad(t, lib, worker, lim, []nhwcDgradCase{{"N=8,C=512,H=7,W=7,K=512,R=3,S=3,pad=1,bias=false", problem.TF32}}, " split-K",
		func(c kernels.Candidate) bool { return c.Config["FlipFilter"] == 1 && c.Config["SplitK"] > 1 }, 31)
}

// TestWGMMAIGEMMPhaseTiles tunes folded NHWC data gradients through
// wgmmaigemm's PhaseTiles candidates alone (each tile one stride phase's
// columns, running only the k-tiles of the offsets that phase meets):
// ResNet-50's 3×3 at stride 2 in fp16 and tf32, C = K = 64 (BN = 64 only)
// in bf16, and asymmetric strides 2×3 with a 3×5 filter (six phases of
// 1 to 4 offsets) in fp16, a 1×1 at stride 2 on an odd map (three idle
// phases, whose zeros the first phase's tiles store). Where the phases
// meet unequal numbers of offsets the tiles start heaviest phase first
// (HeavyFirst: each block's tile from its place in launch order). Each
// problem's first, middle and last kept PhaseTiles configurations and its
// first StoreRows twin must pass the float64 checks.
func TestWGMMAIGEMMPhaseTiles(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	tuneNHWCDgrad(t, lib, worker, lim, []nhwcDgradCase{
		{"N=8,C=128,H=56,W=56,K=128,R=3,S=3,stride=2,pad=1,bias=false", problem.FP16},
		{"N=8,C=256,H=28,W=28,K=256,R=3,S=3,stride=2,pad=1,bias=false", problem.TF32},
		{"N=4,C=64,H=29,W=29,K=64,R=3,S=3,stride=2,pad=1,bias=false", problem.BF16},
		{"N=3,C=64,H=15,W=17,K=64,R=3,S=5,stride_h=2,stride_w=3,pad=1,bias=false", problem.FP16},
		{"N=4,C=256,H=27,W=29,K=512,R=1,S=1,stride=2,bias=false", problem.FP16},
	}, "", func(c kernels.Candidate) bool { return c.Config["PhaseTiles"] == 1 }, 23)
}

// TestWGMMAIGEMMPhaseFilter tunes folded tf32 NHWC data gradients through
// wgmmaigemm's PhaseFilter candidates alone (tiled by phase, B in 16-byte
// copies of each phase's filter, gathered and rounded by the prologue or,
// launched alone, by the kernel's blocks): ResNet-50's 3×3 at stride 2,
// asymmetric strides 2×3 with a 3×5 filter (six phases), a dilated 5×5 at
// stride 2, and a 1×1 at stride 2 on an odd map (three idle phases); in
// the first two, whose phases meet unequal numbers of offsets, the tiles
// start heaviest phase first (HeavyFirst: each block's tile from its
// ticket). Each problem's first, middle and last kept
// PhaseFilter configurations and its first StoreRows twin must pass the
// float64 checks.
func TestWGMMAIGEMMPhaseFilter(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	tuneNHWCDgrad(t, lib, worker, lim, []nhwcDgradCase{
		{"N=8,C=256,H=28,W=28,K=256,R=3,S=3,stride=2,pad=1,bias=false", problem.TF32},
		{"N=3,C=64,H=15,W=17,K=64,R=3,S=5,stride_h=2,stride_w=3,pad=1,bias=false", problem.TF32},
		{"N=2,C=64,H=19,W=21,K=32,R=5,S=5,stride=2,pad=3,dilation=2,bias=false", problem.TF32},
		{"N=4,C=256,H=27,W=29,K=512,R=1,S=1,stride=2,bias=false", problem.TF32},
	}, "", func(c kernels.Candidate) bool { return c.Config["PhaseFilter"] == 1 }, 29)
}
