//go:build cuda

package autotune

import (
	"context"
	"testing"
	"time"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// TestWGMMAIGEMMNCHW tunes tf32 NCHW forward problems through wgmmaigemm
// alone (A copied one 4-byte element at a time into the K-major swizzled
// tiles, rounded to TF32 by its copying thread; the output stored channel
// plane by channel plane): ResNet-50's s3-3x3 and strided 1×1 at N=32, a
// 7×7 map, an odd dilated shape with asymmetric strides and pads (partial
// tiles), a KernelBench-style 3×3 without bias, and the odd shape with the
// epilogue chains scale_shift,relu and residual(0.5) (their NCHW offsets):
// pinned to the first, middle and last kept configurations, plus the
// producer warpgroup and no swizzle (128- and 256-byte rows) where they
// render, and A through
// registers (ARegs: ldmatrix, rounded there; alone, with split-K and with
// the producer). The same problems in NHWC (but the chains) check ARegs
// there. Every kernel must pass the float64 checks within tf32's bound;
// the medians are logged.
func TestWGMMAIGEMMNCHW(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	for _, p := range wgmmaIGEMMForwardProblems(t, problem.TF32) {
		wgmmaIGEMMTF32Run(t, lib, worker, lim, p, p.Epilogue.String())
	}
}

// wgmmaIGEMMForwardProblems are the forward problems of
// TestWGMMAIGEMMNCHW (and TestWGMMAIGEMM3xTF32) in precision prec:
// ResNet-50's s3-3x3 and strided 1×1 at N=32, a 7×7 map, an odd dilated
// shape with asymmetric strides and pads (partial tiles) and a
// KernelBench-style 3×3 without bias, each in NCHW and NHWC, and the odd
// shape in NCHW with the chains scale_shift,relu and residual(0.5).
func wgmmaIGEMMForwardProblems(t *testing.T, prec problem.Precision) []problem.Problem {
	t.Helper()
	odd := "N=3,C=24,H=19,W=23,K=40,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=2,dilation_h=2"
	cases := []struct{ shape, chain string }{
		{"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1", ""},
		{"N=32,C=256,H=56,W=56,K=512,R=1,S=1,stride=2,bias=false", ""},
		{"N=32,C=512,H=7,W=7,K=2048,R=1,S=1", ""},
		{odd, ""},
		{"N=8,C=64,H=66,W=70,K=128,R=3,S=3,bias=false", ""},
		{odd, "scale_shift,relu"},
		{odd, "residual(0.5)"},
	}
	var out []problem.Problem
	for _, tc := range cases {
		for _, lay := range []problem.Layout{problem.NCHW, problem.NHWC} {
			if lay == problem.NHWC && tc.chain != "" {
				continue
			}
			shape, err := problem.ParseShape(tc.shape)
			if err != nil {
				t.Fatal(err)
			}
			p := problem.Problem{Shape: shape, Precision: prec, Layout: lay}
			if tc.chain != "" {
				if p.Epilogue, err = epilogue.Parse(tc.chain); err != nil {
					t.Fatal(err)
				}
			}
			out = append(out, p)
		}
	}
	return out
}

// wgmmaIGEMMTF32Run tunes p through wgmmaigemm's first, middle and last
// kept configurations and the pins of TestWGMMAIGEMMNCHW, and checks every
// kernel passed.
func wgmmaIGEMMTF32Run(t *testing.T, lib *nvrtc.Library, worker []string, lim kernels.Limits, p problem.Problem, chain string) {
	t.Run(p.String()+" "+chain, func(t *testing.T) {
		kept := keptOf(t, p, lim, "wgmmaigemm")
		if len(kept) == 0 {
			t.Fatal("no kept wgmmaigemm candidate")
		}
		tuneCandidates(t, lib, worker, p, []kernels.Candidate{kept[0], kept[len(kept)/2], kept[len(kept)-1],
			{Family: "wgmmaigemm", Config: kernels.Config{"BM": 128, "BN": 128, "BK": 32, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 1, "Swizzle": 1}},
			{Family: "wgmmaigemm", Config: kernels.Config{"BM": 64, "BN": 64, "BK": 32, "Warpgroups": 1, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 0}},
			{Family: "wgmmaigemm", Config: kernels.Config{"BM": 64, "BN": 64, "BK": 64, "Warpgroups": 1, "Stages": 3, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 0}},
			{Family: "wgmmaigemm", Config: kernels.Config{"BM": 128, "BN": 128, "BK": 32, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "ARegs": 1}},
			{Family: "wgmmaigemm", Config: kernels.Config{"BM": 128, "BN": 256, "BK": 32, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 1, "Swizzle": 1, "ARegs": 1}},
			{Family: "wgmmaigemm", Config: kernels.Config{"BM": 128, "BN": 128, "BK": 32, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "SplitK": 2, "ARegs": 1}},
		}, nil, 29)
	})
}

// tuneCandidates renders the candidates cands for p (skipping those
// optional says may fail to render; any other render error fails the
// test), tunes p over them alone (10 timed runs each, seed as given) and
// requires every one to pass the float64 checks within p's bound; the
// medians and errors are logged.
func tuneCandidates(t *testing.T, lib *nvrtc.Library, worker []string, p problem.Problem, cands []kernels.Candidate, optional func(kernels.Candidate) bool, seed uint64) {
	t.Helper()
	var extra []kernels.Kernel
	want := map[string]bool{}
	for _, c := range cands {
		k, err := kernels.RenderCandidate(p, c)
		if err != nil {
			if optional != nil && optional(c) {
				continue
			}
			t.Fatalf("render %s: %v", c.ID(), err)
		}
		if want[k.Family+"/"+k.Name] {
			continue
		}
		want[k.Family+"/"+k.Name] = true
		extra = append(extra, k)
	}
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: worker, Only: []string{cands[0].ID()}, Extra: extra,
		Trials: 0, Runs: 10, Seed: seed, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	checkTrials(t, p, res.Trials)
	checkPinnedOK(t, res.Trials, want, len(extra))
}
