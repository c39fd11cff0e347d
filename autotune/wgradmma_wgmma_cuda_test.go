//go:build cuda

package autotune

import (
	"slices"
	"testing"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// TestWGradMMAWGMMA tunes NHWC filter gradients through wgradmma's
// Stage=4 alone (wgmma reading both operands MN-major from the 128-byte
// swizzle): of each problem's Stage=4 configurations that no hard rule
// rejects, the first, middle and last, the first with Clusters > 1, the
// first with BN=256 and the first with BM=256 (four warpgroups), each
// checked against the float64 reference: ResNet-50 3×3 and strided 1×1
// layers in fp16 (a 7² map too), odd channel counts with a bias, stride,
// dilation and asymmetric padding in bf16 and fp16; in tf32 (the tiles
// staged through registers into the K-major swizzle) a 3×3 on 14², a 1×1
// on 7² with a bias and an odd strided, dilated shape, and a 1×1 with a
// bias and K=20; 1×1s with a bias in fp16 (K=24) and bf16 (7²), whose
// first candidates with BiasSum=1 (dBias summed from the staged rows;
// with Clusters > 1 too) are pinned as well.
func TestWGradMMAWGMMA(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	if !lim.SM90a {
		t.Skip("no sm_90a")
	}
	for _, tc := range []relayoutCase{
		{"N=8,C=64,H=56,W=56,K=64,R=3,S=3,pad=1", problem.FP16, "", ""},
		{"N=8,C=256,H=28,W=28,K=512,R=1,S=1,stride=2,bias=false", problem.FP16, "", ""},
		{"N=4,C=512,H=7,W=7,K=512,R=3,S=3,pad=1", problem.FP16, "", ""},
		{"N=3,C=24,H=15,W=17,K=40,R=3,S=3,stride_h=2,pad=1,dilation_w=2", problem.BF16, "", ""},
		{"N=2,C=16,H=19,W=23,K=24,R=3,S=5,pad_h=1,pad_w=2", problem.FP16, "", ""},
		{"N=8,C=256,H=14,W=14,K=256,R=3,S=3,pad=1,bias=false", problem.TF32, "", ""},
		{"N=4,C=512,H=7,W=7,K=512,R=1,S=1", problem.TF32, "", ""},
		{"N=3,C=12,H=15,W=17,K=20,R=3,S=3,stride_h=2,pad=1,dilation_w=2", problem.TF32, "", ""},
		{"N=3,C=64,H=9,W=11,K=20,R=1,S=1", problem.TF32, "", ""},
		{"N=3,C=64,H=9,W=11,K=24,R=1,S=1", problem.FP16, "", ""},
		{"N=4,C=512,H=7,W=7,K=512,R=1,S=1", problem.BF16, "", ""},
	} {
		p := tc.problem(t)
		p.Layout = problem.NHWC
		p.Op = problem.OpWgrad
		t.Run(p.String(), func(t *testing.T) {
			cands, err := kernels.Enumerate(p, lim)
			if err != nil {
				t.Fatal(err)
			}
			var w []kernels.Candidate
			for _, c := range cands {
				if c.Family == "wgradmma" && c.Config["Stage"] == 4 && (c.Rejected == "" || c.Rejection.Soft) {
					w = append(w, c)
				}
			}
			if len(w) == 0 {
				t.Fatal("no wgradmma Stage=4 candidate")
			}
			pins := firstMiddleLast(w)
			for _, pick := range []func(kernels.Candidate) bool{
				func(c kernels.Candidate) bool { return c.Config["Clusters"] > 1 },
				func(c kernels.Candidate) bool { return c.Config["BN"] == 256 },
				func(c kernels.Candidate) bool { return c.Config["BM"] == 256 },
				func(c kernels.Candidate) bool { return c.Config["BiasSum"] == 1 },
				func(c kernels.Candidate) bool { return c.Config["BiasSum"] == 1 && c.Config["Clusters"] > 1 },
			} {
				if i := slices.IndexFunc(w, pick); i >= 0 && !slices.Contains(pins, w[i].ID()) {
					pins = append(pins, w[i].ID())
				}
			}
			res := tunePins(t, lib, worker, p, pins, nil, 11)
			for _, tr := range res.Trials {
				if slices.Contains(pins, tr.ID) {
					t.Logf("%s: %s %.4f ms, error %.2e", tr.ID, tr.Status, tr.MedianMS, tr.RelError)
				}
			}
		})
	}
}
