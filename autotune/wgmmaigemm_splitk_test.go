//go:build cuda

package autotune

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// splitTile is a wgmmaigemm configuration with 128-byte tile rows, the
// reduction split over a cluster of SplitK blocks.
type splitTile struct{ bm, warpgroups, bn, blocksPerSM, stages, split int }

func (s splitTile) config(prec problem.Precision) kernels.Config {
	return kernels.Config{"BM": s.bm, "Warpgroups": s.warpgroups, "BN": s.bn, "BK": 128 / prec.ElementBytes(),
		"BlocksPerSM": s.blocksPerSM, "Stages": s.stages, "Producer": 0, "Swizzle": 1, "SplitK": s.split}
}

// TestWGMMAIGEMMSplitK tunes wgmmaigemm kernels whose reduction is split
// over a thread-block cluster (SplitK 2, 4 and 8, rendered by the test and
// measured beside the first kept unsplit candidate): ResNet-50's s4-3x3
// and s3-3x3 at N=32 in fp16 and tf32; a small shape with partial pixel
// and channel tiles and uneven k-tile shares (C=72: 11 fp16 k-tiles, 2, 3,
// 3, 3 over four blocks; 21 tf32 ones, the last partial); s4-3x3 with the
// chain residual,relu; and an odd K (37: single-channel stores) with
// stride, dilation, scale_shift,relu and a bf16 output from tf32. Every
// kernel must pass the float64 checks within the precision's bound (the
// epilogue applied once, to the cluster's sum); the medians are logged.
// sm_90 only; 8 tuning runs, 26 split kernels.
func TestWGMMAIGEMMSplitK(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	chain := func(spec string) epilogue.Chain {
		c, err := epilogue.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	resnet := []splitTile{{128, 2, 128, 1, 4, 2}, {128, 2, 128, 1, 4, 4}, {64, 1, 128, 2, 4, 2}, {128, 2, 256, 1, 4, 4}}
	cases := []struct {
		shape    string
		prec     problem.Precision
		epilogue string
		out      problem.Storage
		tiles    []splitTile
	}{
		{"N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1", problem.FP16, "", "", resnet},
		{"N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1", problem.TF32, "", "", resnet},
		{"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1", problem.FP16, "", "", resnet},
		{"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1", problem.TF32, "", "", resnet},
		{"N=3,C=72,H=9,W=11,K=40,R=3,S=3,pad=1", problem.FP16, "", "", []splitTile{{64, 1, 64, 1, 4, 2}, {64, 1, 64, 1, 4, 4}, {128, 2, 128, 1, 4, 2}}},
		{"N=3,C=72,H=9,W=11,K=40,R=3,S=3,pad=1", problem.TF32, "", "", []splitTile{{64, 1, 64, 1, 4, 2}, {64, 1, 64, 1, 4, 4}, {128, 2, 128, 1, 4, 2}}},
		{"N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1", problem.FP16, "residual,relu", "", []splitTile{{128, 2, 128, 1, 4, 4}, {64, 1, 64, 1, 4, 8}}},
		{"N=2,C=40,H=9,W=7,K=37,R=3,S=3,stride=2,pad=1,dilation_w=2", problem.TF32, "scale_shift,relu", problem.StorageBF16, []splitTile{{64, 1, 64, 1, 4, 2}, {64, 1, 64, 2, 3, 4}}},
	}
	for _, tc := range cases {
		shape, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		p := problem.Problem{Shape: shape, Precision: tc.prec, Layout: problem.NHWC, Epilogue: chain(tc.epilogue), OutPrecision: tc.out}
		t.Run(p.String(), func(t *testing.T) {
			cands, err := kernels.Enumerate(p, lim)
			if err != nil {
				t.Fatalf("enumerate: %v", err)
			}
			var pin string
			for _, c := range cands {
				if c.Family == "wgmmaigemm" && c.Rejected == "" && c.Config["SplitK"] == 0 {
					pin = c.ID()
					break
				}
			}
			if pin == "" {
				t.Fatal("no kept unsplit wgmmaigemm candidate")
			}
			var extra []kernels.Kernel
			configOf := map[string]string{}
			for _, st := range tc.tiles {
				k, err := kernels.RenderCandidate(p, kernels.Candidate{Family: "wgmmaigemm", Config: st.config(p.Precision)})
				if err != nil {
					t.Fatalf("render SplitK=%d: %v", st.split, err)
				}
				if k.Grid[2] != st.split {
					t.Fatalf("%s: grid %v, want z = %d", k.Config, k.Grid, st.split)
				}
				extra = append(extra, k)
				configOf[k.Family+"/"+k.Name] = k.Config.String()
			}
			res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: worker, Only: []string{pin}, Extra: extra,
				Trials: 0, Runs: 10, Seed: 19, Timeout: 60 * time.Second})
			if err != nil {
				t.Fatalf("tune: %v", err)
			}
			if passed := checkTrials(t, p, res.Trials); passed != len(extra)+1 {
				t.Errorf("%d of %d kernels passed", passed, len(extra)+1)
			}
			for _, tr := range res.Trials {
				if tr.ID == pin || strings.HasPrefix(tr.ID, "wgmmaigemm/convgen_") {
					cfg := configOf[tr.ID]
					if cfg == "" {
						cfg = "unsplit " + tr.ID
					}
					t.Logf("%s: %s, %.4f ms, error %.2e (sampled %.2e)", cfg, tr.Status, tr.MedianMS, tr.RelError, tr.SampleError)
				}
			}
		})
	}
}
