//go:build cuda

package autotune

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// windowCandidates is p's wgradmma Stage=5 candidates that no hard rule
// rejects.
func windowCandidates(t *testing.T, p problem.Problem, lim kernels.Limits) []kernels.Candidate {
	t.Helper()
	cands, err := kernels.Enumerate(p, lim)
	if err != nil {
		t.Fatal(err)
	}
	var w []kernels.Candidate
	for _, c := range cands {
		if c.Family == "wgradmma" && c.Config["Stage"] == 5 && (c.Rejected == "" || c.Rejection.Soft) {
			w = append(w, c)
		}
	}
	return w
}

// TestWGradMMAWindow tunes first layers' filter gradients through
// wgradmma's Stage=5 alone (the band's input rows staged whole, the taps
// gathered into wgmma's A registers): of each problem's Stage=5
// configurations that no hard rule rejects, the first, middle and last and
// the first with one sub-tile, with Clusters > 1, with Band=8 and with
// Split=8, each checked against the float64 reference, in tf32, fp16 and
// bf16 and both layouts (3xtf32 on the first and third shapes): C=3 with
// K=20 (wgmma's N 24), per-axis stride, padding and dilation; C=1 without
// a bias; C=5 with K=40 at stride 2; a flagship at N=2.
func TestWGradMMAWindow(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	if !lim.SM90a {
		t.Skip("no sm_90a")
	}
	specs := []string{
		"N=2,C=3,H=19,W=23,K=20,R=5,S=3,stride_h=2,stride_w=3,pad_h=2,pad_w=1,dilation_h=2",
		"N=3,C=1,H=17,W=13,K=12,R=3,S=3,stride=1,pad=1,bias=false",
		"N=2,C=5,H=15,W=14,K=40,R=4,S=4,stride=2,pad=1",
		"N=2,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2",
	}
	for si, spec := range specs {
		for pi, prec := range []problem.Precision{problem.TF32, problem.FP16, problem.BF16, problem.TF32x3} {
			for _, lay := range []problem.Layout{problem.NCHW, problem.NHWC} {
				if si == 3 && pi == 2 {
					continue // the flagship's bf16: fp16's kernel with another type
				}
				if pi == 3 && si%2 == 1 {
					continue // 3xtf32 (session 28): the first and third shapes
				}
				p := (relayoutCase{spec, prec, "", ""}).problem(t)
				p.Layout, p.Op = lay, problem.OpWgrad
				t.Run(p.String(), func(t *testing.T) {
					w := windowCandidates(t, p, lim)
					if len(w) == 0 {
						t.Fatal("no wgradmma Stage=5 candidate")
					}
					pins := firstMiddleLast(w)
					for _, pick := range []func(kernels.Candidate) bool{
						func(c kernels.Candidate) bool { return c.Config["BN"] == 64*c.Config["WM"]/4 },
						func(c kernels.Candidate) bool { return c.Config["Clusters"] > 1 },
						func(c kernels.Candidate) bool { return c.Config["Band"] == 8 },
						func(c kernels.Candidate) bool { return c.Config["Split"] == 8 },
					} {
						if i := slices.IndexFunc(w, pick); i >= 0 && !slices.Contains(pins, w[i].ID()) {
							pins = append(pins, w[i].ID())
						}
					}
					res := tunePins(t, lib, worker, p, pins, nil, 23)
					for _, tr := range res.Trials {
						if slices.Contains(pins, tr.ID) {
							t.Logf("%s: %s %.4f ms, error %.2e", tr.ID, tr.Status, tr.MedianMS, tr.RelError)
						}
					}
				})
			}
		}
	}
}

// TestWGradMMAWindowTimes (CONVGEN_WINDOW_TIMES=1) times Stage=5 on the
// flagship and ResNet-50's stem beside the Stage=3 kernel that won them
// (the committed records' configurations), in one process: the Stage=5
// candidates kept by the rules with 128 blocks a tile, and those pins,
// each verified (registers, spills and the clusters the driver says run
// at once logged).
func TestWGradMMAWindowTimes(t *testing.T) {
	if os.Getenv("CONVGEN_WINDOW_TIMES") != "1" {
		t.Skip("CONVGEN_WINDOW_TIMES=1 times the flagship and the stem")
	}
	lib, worker, lim := gpuSetup(t)
	if !lim.SM90a {
		t.Skip("no sm_90a")
	}
	for _, c := range []struct {
		spec  string
		prec  problem.Precision
		lay   problem.Layout
		stage string // the committed record's winner
		tile  [3]int // BN, WM, Band: the tile whose every split is timed
	}{
		{"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2", problem.TF32, problem.NCHW, "wgradmma/BM=96,BN=128,Clusters=8,Split=8,Stage=3,Unroll=1,WM=2,WN=4", [3]int{384, 12, 4}},
		{"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2", problem.FP16, problem.NHWC, "wgradmma/BM=96,BN=128,Clusters=8,Split=8,Stage=3,Unroll=1,WM=2,WN=4", [3]int{192, 12, 8}},
		{"N=32,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3", problem.FP16, problem.NHWC, "wgradmma/BM=64,BN=64,Clusters=16,Split=8,Stage=3,Unroll=1,WM=2,WN=2", [3]int{256, 16, 8}},
		{"N=32,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3", problem.TF32, problem.NHWC, "wgradmma/BM=64,BN=64,Clusters=8,Split=8,Stage=3,Unroll=1,WM=2,WN=2", [3]int{256, 16, 4}},
	} {
		p := (relayoutCase{c.spec, c.prec, "", ""}).problem(t)
		p.Layout, p.Op = c.lay, problem.OpWgrad
		t.Run(p.String(), func(t *testing.T) {
			// Every tile at 15 clusters of 8 (one wave on the H100), and
			// every split of c.tile.
			var pins []string
			for _, k := range windowCandidates(t, p, lim) {
				cf := k.Config
				wave := cf["Split"] == 8 && cf["Clusters"] == 15
				tile := cf["BN"] == c.tile[0] && cf["WM"] == c.tile[1] && cf["Band"] == c.tile[2]
				if k.Rejected == "" && (wave || tile) {
					pins = append(pins, k.ID())
				}
			}
			pins = append(pins, c.stage)
			res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: worker, Only: pins,
				Trials: 0, Runs: 10, Seed: 29, Timeout: 60 * time.Second})
			if err != nil {
				t.Fatalf("tune: %v", err)
			}
			if passed := checkTrials(t, p, res.Trials); passed != len(pins) {
				t.Errorf("%d of %d kernels passed", passed, len(pins))
			}
			for _, tr := range res.Trials {
				if slices.Contains(pins, tr.ID) {
					t.Logf("%s: %s %.4f ms, error %.2e, %d registers, %d B spilled, %d clusters at once (the driver)", tr.ID, tr.Status, tr.MedianMS, tr.RelError, tr.Registers, tr.SpillStores, tr.MaxClusters)
				}
			}
		})
	}
}
