//go:build cuda

package autotune

import (
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestWGMMAIGEMMShapes tunes channel-heavy NHWC shapes through the
// wgmmaigemm family alone (sm_90 only), pinned to three of its kept
// configurations (the first, middle and last), in fp16, bf16 and tf32:
// every pinned candidate must pass the float64 checks within the
// precision's bound, and the winner must be a wgmmaigemm candidate. The
// shapes cover output channel counts that are no multiple of the channel
// tile (K=17, 40, 136, 200: predicated channel tails), a strided 1x1, a 1x1
// on a 7x7 map, asymmetric stride/pad/dilation, C=4 (tf32's smallest), one
// image, and partial pixel tiles everywhere.
func TestWGMMAIGEMMShapes(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	shapes := []string{
		"N=2,C=64,H=30,W=30,K=64,R=3,S=3,pad=1",
		"N=2,C=256,H=28,W=28,K=136,R=1,S=1,stride=2,bias=false",
		"N=4,C=512,H=7,W=7,K=200,R=1,S=1",
		"N=2,C=16,H=21,W=25,K=17,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_h=2,bias=false",
		"N=1,C=8,H=17,W=15,K=40,R=3,S=3,stride=2,pad=1,dilation_w=2",
		"N=3,C=4,H=19,W=23,K=24,R=3,S=3,pad=1",
	}
	precs := []problem.Precision{problem.FP16, problem.BF16, problem.TF32}
	ran := 0
	eachProblem(t, shapes, precs, func(p problem.Problem) {
		if p.Layout != problem.NHWC {
			return
		}
		t.Run(p.String(), func(t *testing.T) {
			if !tuneFamilyPinned(t, lib, worker, lim, p, "wgmmaigemm") {
				if p.Shape.C%8 != 0 && p.Precision != problem.TF32 {
					t.Skipf("wgmmaigemm declines C=%d in %s (C a multiple of 8)", p.Shape.C, p.Precision)
				}
				t.Fatal("no kept wgmmaigemm candidate")
			}
			ran++
		})
	})
	if ran == 0 {
		t.Fatal("no problem had a kept wgmmaigemm candidate")
	}
}
