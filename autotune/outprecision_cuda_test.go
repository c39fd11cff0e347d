//go:build cuda

package autotune

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

// TestTuneOutPrecision tunes small shapes whose output type differs from
// the input's (-out-precision: FP32 stored as BF16, FP16 stored as FP32,
// TF32 stored as FP16, BF16 stored as FP16) through each family that
// stores another type and serves the shape (generic, igemm, wgmmaigemm,
// depthwise), pinned to three of its kept configurations
// (tuneFamilyPinned): every pin must pass the float64 checks (the GPU
// reference compared in the output's type, the sampled CPU one) within
// the looser of the input's and the output's bounds, and the family must
// win. Every other problem carries the chain residual(0.5),relu, whose
// residual has the output's type. The layouts alternate over the cases;
// then one unpinned tune per shape must end with a verified winner of
// those families. Each of the four families must be measured.
func TestTuneOutPrecision(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	shapes := []string{
		"N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1",                        // generic, igemm, wgmmaigemm (NHWC)
		"N=2,C=32,H=15,W=15,K=64,R=3,S=3,stride=2,pad=1,groups=32",     // depthwise, generic
		"N=1,C=5,H=9,W=11,K=7,R=3,S=2,pad_h=1,dilation_w=2,bias=false", // generic, igemm: odd sizes
	}
	cases := []struct {
		prec problem.Precision
		out  problem.Storage
	}{
		{problem.FP32, problem.StorageBF16},
		{problem.FP16, problem.StorageFP32},
		{problem.TF32, problem.StorageFP16},
		{problem.BF16, problem.StorageFP16},
	}
	chain, err := epilogue.Parse("residual(0.5),relu")
	if err != nil {
		t.Fatal(err)
	}
	families := []string{"generic", "igemm", "wgmmaigemm", "depthwise"}
	measured := map[string]bool{}
	for i, text := range shapes {
		shape, err := problem.ParseShape(text)
		if err != nil {
			t.Fatal(err)
		}
		for j, c := range cases {
			lay := problem.Layouts[(i+j)%2]
			if i == 0 && c.prec != problem.FP32 {
				lay = problem.NHWC // wgmmaigemm's layout, in its precisions
			}
			p := problem.Problem{Shape: shape, Precision: c.prec, Layout: lay, OutPrecision: c.out}
			if j%2 == 1 {
				p.Epilogue = chain
			}
			t.Run(p.String(), func(t *testing.T) {
				if !p.OutDiffers() {
					t.Fatal("the problem stores the input's type")
				}
				for _, fam := range families {
					if tuneFamilyPinned(t, lib, worker, lim, p, fam) {
						measured[fam] = true
					}
				}
			})
		}
		p := problem.Problem{Shape: shape, Precision: problem.FP16, Layout: problem.NHWC, OutPrecision: problem.StorageFP32}
		t.Run("unpinned "+p.String(), func(t *testing.T) {
			res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: worker, Trials: 8, Runs: 10, Seed: 3, Timeout: 60 * time.Second})
			if err != nil {
				t.Fatalf("tune: %v", err)
			}
			checkTrials(t, p, res.Trials)
			if res.Winner == nil || res.Winner.Status != StatusOK {
				t.Fatalf("no verified winner: %v", res.Winner)
			}
			fam, _, _ := strings.Cut(res.Winner.ID, "/")
			if !strings.Contains(" generic igemm wgmmaigemm depthwise ", " "+fam+" ") {
				t.Errorf("winner %s is of a family that does not store another output type", res.Winner.ID)
			}
		})
	}
	for _, fam := range families {
		if fam == "wgmmaigemm" && !lim.SM90a {
			continue // needs an NVRTC that targets sm_90a
		}
		if !measured[fam] {
			t.Errorf("%s was never measured with an output precision", fam)
		}
	}
}
