//go:build cuda

package autotune

import (
	"testing"

	"github.com/convgen/convgen/problem"
)

// dgradScatterShapes are data gradients of few input channels: a first
// layer like the flagship's (11×11, stride 4) and ResNet's stem (7×7,
// stride 2) at small sizes, per-axis strides, a dilated filter whose row
// phases meet no tap, odd channel counts, one axis strided, and the most
// columns a phase may have (C=32, 2 × 2 taps).
var dgradScatterShapes = []string{
	"N=2,C=3,H=61,W=67,K=24,R=11,S=11,stride=4,pad=2",
	"N=2,C=3,H=32,W=30,K=64,R=7,S=7,stride=2,pad=3,bias=false",
	"N=2,C=6,H=15,W=16,K=20,R=2,S=3,stride=4,pad=1,dilation_h=4,bias=false",
	"N=3,C=13,H=19,W=23,K=17,R=3,S=3,stride_h=2,pad_h=1,pad_w=2,dilation_w=2",
	"N=2,C=32,H=20,W=21,K=40,R=3,S=3,stride=2,pad=1",
}

// TestDgradScatter tunes dgradscatter alone on dgradScatterShapes in every
// tensor-core precision and both layouts, pinned to three of its kept
// configurations (first, middle, last): each must pass the float64 checks
// within the precision's bound.
func TestDgradScatter(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	eachProblem(t, dgradScatterShapes, []problem.Precision{problem.TF32, problem.TF32x3, problem.FP16, problem.BF16}, func(p problem.Problem) {
		p.Op = problem.OpDgrad
		t.Run(p.String(), func(t *testing.T) {
			if !tuneFamilyPinned(t, lib, worker, lim, p, "dgradscatter") {
				t.Fatal("dgradscatter kept no candidate")
			}
		})
	})
}
