//go:build cuda

package autotune

import (
	"fmt"
	"testing"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// TestWGMMAIGEMM3xTF32 tunes 3xtf32 forward problems through wgmmaigemm
// alone (each operand tile split in shared memory into the part the
// tensor cores read and its lo part, three wgmmas a k step, step sums):
// TestWGMMAIGEMMNCHW's problems (NCHW by element copies and relayed out,
// NHWC, the chains in NCHW), pinned to the first, middle and last kept
// configurations and split-K tiles (2 and 4) where they render. Every
// kernel must pass the float64 checks within 3xtf32's bound (1e-5,
// FP32's); the medians and errors are logged.
func TestWGMMAIGEMM3xTF32(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	for _, p := range wgmmaIGEMMForwardProblems(t, problem.TF32x3) {
		t.Run(p.String()+" "+p.Epilogue.String(), func(t *testing.T) {
			kept := keptOf(t, p, lim, "wgmmaigemm")
			if len(kept) == 0 {
				t.Fatal("no kept wgmmaigemm candidate")
			}
			split := func(c kernels.Candidate) bool { return c.Config["SplitK"] > 1 } // a relayed-out NCHW problem, or too few k-tiles
			tuneCandidates(t, lib, worker, p, []kernels.Candidate{kept[0], kept[len(kept)/2], kept[len(kept)-1],
				{Family: "wgmmaigemm", Config: kernels.Config{"BM": 128, "BN": 64, "BK": 32, "Warpgroups": 2, "Stages": 3, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "SplitK": 2}},
				{Family: "wgmmaigemm", Config: kernels.Config{"BM": 128, "BN": 128, "BK": 32, "Warpgroups": 2, "Stages": 3, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "SplitK": 4}},
			}, split, 31)
		})
	}
}

// TestWGMMAIGEMM3xTF32Dgrad tunes 3xtf32 data gradients through
// wgmmaigemm alone: ResNet-50's s3-3x3 at stride 1 (B's element copies,
// and the flipped filter's copy in NHWC), its 3×3 and 1×1 at stride 2
// (folded; phase tiles in NHWC, idle phases for the 1×1), the odd dilated
// shape with asymmetric strides and pads, and the flagship's first layer
// at N=8 (folded columns of a 3-channel input), in NCHW and NHWC: pinned
// to the first, middle and last kept configurations and the first kept
// one of each way B is read (FlipFilter, PhaseTiles). Every kernel must
// pass the float64 checks within 3xtf32's bound (1e-5).
func TestWGMMAIGEMM3xTF32Dgrad(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	for _, spec := range []string{
		"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1",
		"N=32,C=128,H=28,W=28,K=128,R=3,S=3,stride=2,pad=1",
		"N=32,C=256,H=56,W=56,K=512,R=1,S=1,stride=2,bias=false",
		"N=3,C=24,H=19,W=23,K=40,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=2,dilation_h=2",
		"N=8,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2",
	} {
		shape, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, lay := range []problem.Layout{problem.NCHW, problem.NHWC} {
			p := problem.Problem{Shape: shape, Precision: problem.TF32x3, Layout: lay, Op: problem.OpDgrad}
			if (kernels.WGMMAIGEMM{}).Serves(p) != nil {
				continue
			}
			t.Run(p.String(), func(t *testing.T) {
				kept := keptOf(t, p, lim, "wgmmaigemm")
				if len(kept) == 0 {
					t.Fatal("no kept wgmmaigemm candidate")
				}
				pins := []kernels.Candidate{kept[0], kept[len(kept)/2], kept[len(kept)-1]}
				ways := map[string]bool{}
				for _, c := range kept {
					if way := fmt.Sprint(c.Config["FlipFilter"], c.Config["PhaseTiles"]); !ways[way] {
						ways[way] = true
						pins = append(pins, c)
					}
				}
				tuneCandidates(t, lib, worker, p, pins, nil, 37)
			})
		}
	}
}
