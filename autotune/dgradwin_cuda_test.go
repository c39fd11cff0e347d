//go:build cuda

package autotune

import (
	"os"
	"testing"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/kernels/dgradwin"
	"github.com/convgen/convgen/problem"
)

// dgradWinShapes are strided data gradients dgradwin serves: the
// flagship's geometry at a small size (11×11, stride 4: aligned 3 × 3
// offsets), a map wider than one 64-column tile, ResNet's stem (7×7,
// stride 2), per-axis strides with dilation and odd channel counts (K not
// a multiple of 4: a chunk past K), 256 folded columns (C=64 at stride
// 2), and a long reduction (16 offsets × K=160: 3xtf32's step sums).
var dgradWinShapes = []string{
	"N=2,C=3,H=61,W=67,K=24,R=11,S=11,stride=4,pad=2",
	"N=2,C=3,H=21,W=290,K=20,R=11,S=11,stride=4,pad=2",
	"N=2,C=3,H=32,W=30,K=64,R=7,S=7,stride=2,pad=3,bias=false",
	"N=3,C=5,H=19,W=23,K=17,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_w=2",
	"N=2,C=64,H=20,W=21,K=40,R=3,S=3,stride=2,pad=1",
	"N=2,C=3,H=30,W=30,K=160,R=7,S=7,stride=2,pad=3,bias=false",
}

// dgradWinKernels renders p's dgradwin configurations that only the
// unverified rule rejects (the family is out of the search until these
// tests pass), and returns with them a pin the tuner must have: the first
// kept candidate of another family.
func dgradWinKernels(t *testing.T, p problem.Problem, lim kernels.Limits) ([]kernels.Kernel, string) {
	t.Helper()
	cands, err := kernels.Enumerate(p, lim)
	if err != nil {
		t.Fatal(err)
	}
	var ks []kernels.Kernel
	pin := ""
	for _, c := range cands {
		switch {
		case c.Family == "dgradwin" && c.Rejection.Rule == dgradwin.Unverified:
			k, err := kernels.RenderCandidate(p, c)
			if err != nil {
				t.Fatalf("render %s: %v", c.ID(), err)
			}
			ks = append(ks, k)
		case pin == "" && c.Rejected == "":
			pin = c.ID()
		}
	}
	if len(ks) == 0 || pin == "" {
		t.Fatalf("%d dgradwin kernels, pin %q", len(ks), pin)
	}
	return ks, pin
}

// TestDgradWin tunes dgradwin on dgradWinShapes in tf32 (three of them
// in 3xtf32, fp16 and bf16 too), both layouts: its first, middle and last configurations that no rule but the
// unverified one rejects, rendered and measured beside another family's
// kernel; each must pass the float64 checks within the precision's
// bound.
func TestDgradWin(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	run := func(p problem.Problem) {
		p.Op = problem.OpDgrad
		t.Run(p.String(), func(t *testing.T) {
			ks, pin := dgradWinKernels(t, p, lim)
			pick := []kernels.Kernel{ks[0]}
			for _, k := range []kernels.Kernel{ks[len(ks)/2], ks[len(ks)-1]} {
				if k.Name != pick[len(pick)-1].Name {
					pick = append(pick, k)
				}
			}
			res := tunePins(t, lib, worker, p, []string{pin}, pick, 28)
			for _, tr := range res.Trials {
				t.Logf("%s: %s %.4f ms, error %.2e, %d registers, %d B spilled%s", tr.ID, tr.Status, tr.MedianMS, tr.RelError, tr.Registers, tr.SpillStores, warned(tr.Warnings))
			}
		})
	}
	// tf32 on every shape; the other precisions on the flagship's
	// geometry, the per-axis strides and the long reduction.
	eachProblem(t, dgradWinShapes, []problem.Precision{problem.TF32}, run)
	some := []string{dgradWinShapes[0], dgradWinShapes[3], dgradWinShapes[5]}
	eachProblem(t, some, []problem.Precision{problem.TF32x3, problem.FP16, problem.BF16}, run)
}

// warned is a trial's compiler warnings for a log line ("" without).
func warned(w string) string {
	if w == "" {
		return ""
	}
	return "; compiler: " + w
}

// TestDgradWinTimes (CONVGEN_DGRADWIN_TIMES=1) times every dgradwin
// configuration on the flagship's data gradient in tf32 (both layouts),
// 3xtf32 NCHW and fp16 NHWC, beside the committed records' kernels
// (wgmmaigemm Fold=2, dgradscatter), in one process, each verified
// against float64.
func TestDgradWinTimes(t *testing.T) {
	if os.Getenv("CONVGEN_DGRADWIN_TIMES") != "1" {
		t.Skip("CONVGEN_DGRADWIN_TIMES=1 times the flagship's data gradient")
	}
	lib, worker, lim := sm90aSetup(t)
	for _, c := range []struct {
		prec   problem.Precision
		lay    problem.Layout
		record string
	}{
		{problem.TF32, problem.NCHW, "wgmmaigemm/ARegs=1,BK=32,BM=256,BN=48,BlocksPerSM=1,Fold=2,Producer=0,Stages=4,Swizzle=1,TruncB=1,Warpgroups=2"},
		{problem.TF32, problem.NHWC, "wgmmaigemm/ARegs=1,BK=32,BM=256,BN=48,BlocksPerSM=1,Fold=2,Producer=0,Stages=4,Swizzle=1,TruncB=1,Warpgroups=2"},
		{problem.TF32x3, problem.NCHW, "wgmmaigemm/BK=32,BM=128,BN=48,BlocksPerSM=1,Fold=2,Producer=0,Stages=4,Swizzle=1,Warpgroups=2"},
		{problem.FP16, problem.NHWC, "dgradscatter/TP=10,TQ=19,WM=16"},
	} {
		p := (relayoutCase{"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2", c.prec, "", ""}).problem(t)
		p.Layout, p.Op, p.Shape.Bias = c.lay, problem.OpDgrad, false
		t.Run(p.String(), func(t *testing.T) {
			ks, _ := dgradWinKernels(t, p, lim)
			res := tunePins(t, lib, worker, p, []string{c.record}, ks, 28)
			for _, tr := range res.Trials {
				t.Logf("%s: %s %.4f ms, error %.2e, %d registers, %d B spilled%s", tr.ID, tr.Status, tr.MedianMS, tr.RelError, tr.Registers, tr.SpillStores, warned(tr.Warnings))
			}
		})
	}
}
