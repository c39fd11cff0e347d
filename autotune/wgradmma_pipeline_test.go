//go:build cuda

package autotune

import (
	"context"
	"testing"
	"time"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// wgradPipelinePins are the Stage=2 (cp.async pipeline) wgradmma
// configurations TestWGradMMAPipeline measures per shape: full and partial
// tiles of rows and columns, the bias column and none, BP 16 to 64, 2 to 4
// stages, cluster splits 1 to 8 (on the odd shape Split=8 leaves the last
// block of the cluster no pixels).
var wgradPipelinePins = []struct {
	shape string
	cfgs  []kernels.Config
}{
	{"N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1", []kernels.Config{ // ResNet-50 s4-3x3
		{"BM": 128, "BN": 128, "WM": 2, "WN": 4, "Split": 2, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4},
		{"BM": 64, "BN": 128, "WM": 2, "WN": 2, "Split": 4, "Unroll": 1, "Stage": 2, "BP": 64, "Stages": 3},
		{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 1, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4},
	}},
	{"N=32,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,bias=false", []kernels.Config{ // ResNet-50 s1-3x3
		{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 8, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4},
		{"BM": 32, "BN": 32, "WM": 1, "WN": 1, "Split": 4, "Unroll": 1, "Stage": 2, "BP": 64, "Stages": 3},
		{"BM": 64, "BN": 128, "WM": 2, "WN": 2, "Split": 8, "Unroll": 1, "Stage": 2, "BP": 64, "Stages": 3},
	}},
	{"N=3,C=24,H=9,W=11,K=40,R=3,S=3,pad=1", []kernels.Config{ // odd: K=40 rows, 217 columns, 297 pixels
		{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 2, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4},
		{"BM": 32, "BN": 32, "WM": 1, "WN": 1, "Split": 4, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 3},
		{"BM": 128, "BN": 128, "WM": 2, "WN": 4, "Split": 8, "Unroll": 1, "Stage": 2, "BP": 16, "Stages": 2},
	}},
}

// TestWGradMMAPipeline measures wgradmma's cp.async pipeline (Stage=2) on
// ResNet-50's s4-3x3 and s1-3x3 layers at N=32 and an odd shape, in fp16,
// bf16 and tf32 NHWC: each pinned configuration (rendered here, since the
// space may soft-reject it on a small shape) must pass the float64 checks
// of dW and dBias within the problem's bound, in one run per problem with
// one kept candidate of the space beside it. Its times and registers are
// logged. Nine tuning runs of four kernels.
func TestWGradMMAPipeline(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	f, err := kernels.FamilyByName("wgradmma")
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range wgradPipelinePins {
		shape, err := problem.ParseShape(sp.shape)
		if err != nil {
			t.Fatal(err)
		}
		for _, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
			p := problem.Problem{Shape: shape, Precision: prec, Layout: problem.NHWC, Op: problem.OpWgrad}
			t.Run(p.String(), func(t *testing.T) {
				var extra []kernels.Kernel
				want := map[string]bool{}
				for _, cfg := range sp.cfgs {
					k, err := f.Render(p, cfg)
					if err != nil {
						t.Fatalf("%v: %v", cfg, err)
					}
					extra = append(extra, k)
					want[k.Family+"/"+k.Name] = true
				}
				// One kept candidate beside them (wgradmma's first, else
				// the space's first), so that the run pins something.
				cands, err := kernels.Enumerate(p, lim)
				if err != nil {
					t.Fatal(err)
				}
				var pin string
				for _, c := range cands {
					if c.Rejected == "" && (pin == "" || c.Family == "wgradmma") {
						pin = c.ID()
						if c.Family == "wgradmma" {
							break
						}
					}
				}
				if pin == "" {
					t.Fatal("no kept candidate")
				}
				res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: worker, Only: []string{pin},
					Extra: extra, Trials: 0, Runs: 10, Seed: 3, Timeout: 60 * time.Second})
				if err != nil {
					t.Fatalf("tune: %v", err)
				}
				checkTrials(t, p, res.Trials)
				seen := 0
				for _, tr := range res.Trials {
					if !want[tr.ID] {
						continue
					}
					seen++
					if tr.Status != StatusOK {
						t.Errorf("%s %s: %s (%s), want ok", tr.ID, tr.Config.String(), tr.Status, tr.Reason)
						continue
					}
					t.Logf("%s: %.4f ms, error %.2e (sampled %.2e), %d registers, %d B spilled, %d B shared",
						tr.Config.String(), tr.MedianMS, tr.RelError, tr.SampleError, tr.Registers, tr.SpillStores, tr.SharedBytes)
				}
				if seen != len(sp.cfgs) {
					t.Errorf("%d of the %d pinned kernels measured", seen, len(sp.cfgs))
				}
				if res.Winner != nil {
					t.Logf("winner %s: %.4f ms", res.Winner.ID, res.Winner.MedianMS)
				}
			})
		}
	}
}
