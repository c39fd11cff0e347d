//go:build cuda

package autotune

import (
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestIGEMMShapes tunes channel-heavy and odd groups=1 shapes through the
// igemm family alone, pinned to three of its kept configurations (the
// first, middle and last: both block-tile extremes, 2 to 4 stages), in
// every precision it serves and both layouts: every pinned candidate must
// pass the float64 checks within the precision's bound, and the winner
// must be an igemm candidate. The shapes cover 16-byte loads (C=64, C=256),
// 8- and 4-byte loads (C=12, C=6), element loads (C=13, C=5), a strided
// 1x1, a 1x1 on a 7x7 map, asymmetric stride/pad/dilation with K=17, and
// partial tiles everywhere.
func TestIGEMMShapes(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	shapes := []string{
		"N=2,C=64,H=30,W=30,K=64,R=3,S=3,pad=1",                                                        // VGG-like 3x3
		"N=2,C=256,H=28,W=28,K=136,R=1,S=1,stride=2,bias=false",                                        // strided 1x1
		"N=4,C=512,H=7,W=7,K=200,R=1,S=1",                                                              // 1x1 on a 7x7 map
		"N=3,C=13,H=19,W=23,K=11,R=3,S=3,pad=1",                                                        // primes: element loads
		"N=2,C=6,H=21,W=25,K=17,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_h=2,bias=false", // asymmetric
		"N=2,C=12,H=17,W=15,K=40,R=3,S=3,stride=2,pad=1,dilation_w=2",                                  // 8-byte loads
		"N=1,C=5,H=9,W=9,K=24,R=5,S=5",                                                                 // one k-tile, C·R·S odd
	}
	precs := []problem.Precision{problem.FP16, problem.BF16, problem.TF32, problem.TF32x3}
	eachProblem(t, shapes, precs, func(p problem.Problem) {
		t.Run(p.String(), func(t *testing.T) {
			if !tuneFamilyPinned(t, lib, worker, lim, p, "igemm") {
				t.Fatal("no kept igemm candidate")
			}
		})
	})
}
