//go:build cuda

package autotune

import (
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// TestWGMMAIGEMMThreeWarpgroups tunes NHWC problems through
// wgmmaigemm's tiles of three computing warpgroups alone (BM = 192, 384
// threads, B's copies split unevenly, the last iteration guarded): a
// ResNet-50-like 1×1 forward and data gradient on 14², an odd forward with
// partial tiles, K past the last column tile and the residual chain, and
// an odd bf16 data gradient (C = 24, K = 40, 3×5); in tf32 (A rounded in
// registers, B's rounding guarded like its copies) a 1×1 forward, a data
// gradient on its flipped filter and the odd forward; split-K over a
// cluster on a 3×3 of 18 tiles (fp16 data gradient, tf32 forward and data
// gradient on its flipped filter: the tile from the grid, the epoch from
// a ticket); and, at N=32, the unsplit tiles of BN = 256 (fp16 forward,
// bf16 data gradient, plain and on its flipped filter) and the split of
// two (ranks of 96 rows; fp16 data gradient, tf32 forward). Each
// problem's first, middle and last kept such configurations must pass
// the float64 checks.
func TestWGMMAIGEMMThreeWarpgroups(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	for _, tc := range []struct {
		shape string
		prec  problem.Precision
		op    problem.Op
		chain string // an epilogue chain, or "split", "split2", "bn256": the split-K candidates, those of SplitK=2, the unsplit ones of BN=256 alone
	}{
		{"N=8,C=1024,H=14,W=14,K=512,R=1,S=1", problem.FP16, problem.OpFprop, ""},
		{"N=8,C=1024,H=14,W=14,K=256,R=1,S=1", problem.FP16, problem.OpDgrad, ""},
		{"N=16,C=40,H=33,W=35,K=72,R=3,S=3,pad=1", problem.BF16, problem.OpFprop, "residual(0.5),relu"},
		{"N=8,C=24,H=57,W=61,K=40,R=3,S=5,pad=1,bias=false", problem.BF16, problem.OpDgrad, ""},
		{"N=8,C=512,H=14,W=14,K=1024,R=1,S=1", problem.TF32, problem.OpFprop, ""},
		{"N=8,C=1024,H=14,W=14,K=512,R=1,S=1,bias=false", problem.TF32, problem.OpDgrad, ""},
		{"N=16,C=40,H=33,W=35,K=72,R=3,S=3,pad=1", problem.TF32, problem.OpFprop, "residual(0.5),relu"},
		{"N=8,C=256,H=14,W=14,K=256,R=3,S=3,pad=1", problem.FP16, problem.OpDgrad, "split"},
		{"N=8,C=256,H=14,W=14,K=256,R=3,S=3,pad=1", problem.TF32, problem.OpFprop, "split"},
		{"N=8,C=256,H=14,W=14,K=256,R=3,S=3,pad=1,bias=false", problem.TF32, problem.OpDgrad, "split"},
		{"N=32,C=1024,H=14,W=14,K=512,R=1,S=1", problem.FP16, problem.OpFprop, "bn256"},
		{"N=32,C=1024,H=14,W=14,K=512,R=1,S=1,bias=false", problem.BF16, problem.OpDgrad, "bn256"},
		{"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1,bias=false", problem.FP16, problem.OpDgrad, "split2"},
		{"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1", problem.TF32, problem.OpFprop, "split2"},
	} {
		shape, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		p := problem.Problem{Shape: shape, Precision: tc.prec, Layout: problem.NHWC, Op: tc.op}
		// The candidates pinned: of three warpgroups, and as the case says.
		want := func(c kernels.Candidate) bool {
			switch tc.chain {
			case "split":
				return c.Config["SplitK"] > 1
			case "split2":
				return c.Config["SplitK"] == 2
			case "bn256":
				return c.Config["BN"] == 256 && c.Config["SplitK"] <= 1
			}
			return c.Config["SplitK"] <= 1
		}
		if tc.chain != "" && !strings.HasPrefix(tc.chain, "split") && tc.chain != "bn256" {
			if p.Epilogue, err = epilogue.Parse(tc.chain); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(p.String()+" "+tc.chain, func(t *testing.T) {
			tuneKeptPins(t, lib, worker, lim, p, func(c kernels.Candidate) bool {
				return c.Config["Warpgroups"] == 3 && want(c)
			}, 37)
		})
	}
}
