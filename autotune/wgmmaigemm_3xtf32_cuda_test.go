//go:build cuda

package autotune

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// TestWGMMAIGEMM3xTF32 tunes 3xtf32 forward problems through wgmmaigemm
// alone (each operand tile split in shared memory into the part the
// tensor cores read and its lo part, three wgmmas a k step): ResNet-50's
// s3-3x3 and strided 1×1 at N=32, a 7×7 map, an odd dilated shape with
// asymmetric strides and pads (partial tiles) and a KernelBench-style
// 3×3 without bias, in NCHW (element copies and relayed out) and NHWC,
// and the odd shape in NCHW with the chain scale_shift,relu: pinned to the
// first, middle and last kept configurations and split-K tiles (2 and 4) where they
// render. Every kernel must pass the float64 checks within 3xtf32's bound
// (1e-5, FP32's); the medians and errors are logged.
func TestWGMMAIGEMM3xTF32(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	odd := "N=3,C=24,H=19,W=23,K=40,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=2,dilation_h=2"
	cases := []struct{ shape, chain string }{
		{"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1", ""},
		{"N=32,C=256,H=56,W=56,K=512,R=1,S=1,stride=2,bias=false", ""},
		{"N=32,C=512,H=7,W=7,K=2048,R=1,S=1", ""},
		{odd, ""},
		{"N=8,C=64,H=66,W=70,K=128,R=3,S=3,bias=false", ""},
		{odd, "scale_shift,relu"},
	}
	for _, tc := range cases {
		for _, lay := range []problem.Layout{problem.NCHW, problem.NHWC} {
			if lay == problem.NHWC && tc.chain != "" {
				continue
			}
			shape, err := problem.ParseShape(tc.shape)
			if err != nil {
				t.Fatal(err)
			}
			p := problem.Problem{Shape: shape, Precision: problem.TF32x3, Layout: lay}
			if tc.chain != "" {
				if p.Epilogue, err = epilogue.Parse(tc.chain); err != nil {
					t.Fatal(err)
				}
			}
			t.Run(p.String()+" "+tc.chain, func(t *testing.T) {
				kept := keptOf(t, p, lim, "wgmmaigemm")
				if len(kept) == 0 {
					t.Fatal("no kept wgmmaigemm candidate")
				}
				var extra []kernels.Kernel
				want := map[string]bool{}
				for _, c := range []kernels.Candidate{kept[0], kept[len(kept)/2], kept[len(kept)-1],
					{Family: "wgmmaigemm", Config: kernels.Config{"BM": 128, "BN": 64, "BK": 32, "Warpgroups": 2, "Stages": 3, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "SplitK": 2}},
					{Family: "wgmmaigemm", Config: kernels.Config{"BM": 128, "BN": 128, "BK": 32, "Warpgroups": 2, "Stages": 3, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "SplitK": 4}},
				} {
					k, err := kernels.RenderCandidate(p, c)
					if err != nil {
						if c.Config["SplitK"] > 1 {
							continue // a relayed-out NCHW problem, or too few k-tiles
						}
						t.Fatalf("render %s: %v", c.ID(), err)
					}
					if want[k.Family+"/"+k.Name] {
						continue
					}
					want[k.Family+"/"+k.Name] = true
					extra = append(extra, k)
				}
				res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: worker, Only: []string{kept[0].ID()}, Extra: extra,
					Trials: 0, Runs: 10, Seed: 31, Timeout: 60 * time.Second})
				if err != nil {
					t.Fatalf("tune: %v", err)
				}
				checkTrials(t, p, res.Trials)
				checkPinnedOK(t, res.Trials, want, len(extra))
			})
		}
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
				var extra []kernels.Kernel
				want := map[string]bool{}
				for _, c := range pins {
					k, err := kernels.RenderCandidate(p, c)
					if err != nil {
						t.Fatalf("render %s: %v", c.ID(), err)
					}
					if want[k.Family+"/"+k.Name] {
						continue
					}
					want[k.Family+"/"+k.Name] = true
					extra = append(extra, k)
				}
				res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: worker, Only: []string{kept[0].ID()}, Extra: extra,
					Trials: 0, Runs: 10, Seed: 37, Timeout: 60 * time.Second})
				if err != nil {
					t.Fatalf("tune: %v", err)
				}
				checkTrials(t, p, res.Trials)
				checkPinnedOK(t, res.Trials, want, len(extra))
			})
		}
	}
}
