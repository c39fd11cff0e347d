//go:build cuda

package autotune

import (
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestIGEMMDgrad tunes op=dgrad through the igemm family alone, pinned to
// three of its kept configurations per problem (tuneFamilyPinned: the
// first, middle and last), on ResNet-50's stride-1 3x3 layers at 56² and
// 14² and a 1x1 (C=64 → K=256) at 56², an odd dilated shape (element and
// 8-byte loads), a stride-4 shape whose row phases 2 and 3 have no tap
// (their dX must come out zero) and an asymmetric strided one: every pin
// must pass the float64 checks within the precision's bound. The
// precisions and layouts rotate so that fp16, bf16 and tf32 meet NHWC on
// the ResNet layers and every precision meets both layouts on the odd
// shapes. 17 tuning runs.
func TestIGEMMDgrad(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	type mode struct {
		prec problem.Precision
		lay  problem.Layout
	}
	fp16, bf16, tf32, x3 := problem.FP16, problem.BF16, problem.TF32, problem.TF32x3
	nhwc, nchw := problem.NHWC, problem.NCHW
	for _, tc := range []struct {
		shape string
		modes []mode
	}{
		{"N=32,C=64,H=56,W=56,K=64,R=3,S=3,pad=1", []mode{{fp16, nhwc}, {bf16, nhwc}, {tf32, nhwc}}},
		{"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1", []mode{{fp16, nhwc}, {tf32, nhwc}, {tf32, nchw}}},
		{"N=32,C=64,H=56,W=56,K=256,R=1,S=1", []mode{{fp16, nhwc}}},
		{"N=3,C=13,H=9,W=11,K=24,R=3,S=3,pad=1,dilation=2", []mode{{fp16, nhwc}, {bf16, nchw}, {tf32, nhwc}, {x3, nchw}}},
		{"N=2,C=6,H=15,W=16,K=20,R=2,S=3,stride=4,pad=1,dilation_h=4,bias=false", []mode{{fp16, nhwc}, {tf32, nchw}}},
		{"N=3,C=24,H=19,W=23,K=17,R=3,S=5,stride_h=2,pad_h=1,pad_w=2,dilation_w=2", []mode{{bf16, nhwc}, {x3, nhwc}, {fp16, nchw}}},
	} {
		shape, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range tc.modes {
			p := problem.Problem{Shape: shape, Precision: m.prec, Layout: m.lay, Op: problem.OpDgrad}
			t.Run(p.String(), func(t *testing.T) {
				if !tuneFamilyPinned(t, lib, worker, lim, p, "igemm") {
					t.Fatal("no kept igemm dgrad candidate")
				}
			})
		}
	}
}
