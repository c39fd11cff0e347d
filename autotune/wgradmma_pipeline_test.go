//go:build cuda

package autotune

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// narrowPipelinePins are the Stage=2 configurations of the narrow-channel
// shapes below (K ≤ 20 rows, at most 55 columns): partial tiles of one
// warp, two and four, BP 16 to 64, 2 to 4 stages, cluster splits 2 to 8.
var narrowPipelinePins = []kernels.Config{
	{"BM": 32, "BN": 32, "WM": 1, "WN": 1, "Split": 2, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4},
	{"BM": 32, "BN": 64, "WM": 1, "WN": 2, "Split": 4, "Unroll": 1, "Stage": 2, "BP": 64, "Stages": 3},
	{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 8, "Unroll": 1, "Stage": 2, "BP": 16, "Stages": 2},
	// Three clusters of two per tile, added up through the workspace.
	{"BM": 32, "BN": 32, "WM": 1, "WN": 1, "Split": 2, "Unroll": 1, "Stage": 2, "BP": 16, "Stages": 2, "Clusters": 3},
}

// wgradPipelinePins are the Stage=2 (cp.async pipeline) wgradmma
// configurations TestWGradMMAPipeline measures per shape: full and partial
// tiles of rows and columns, the bias column and none, BP 16 to 64, 2 to 4
// stages, cluster splits 1 to 8 (on the odd shape Split=8 leaves the last
// block of the cluster no pixels), in precs (nil: fp16, bf16 and tf32).
// The ResNet-50 and odd shapes copy 16 bytes at a time; the strided,
// dilated, padded narrow-channel shapes copy dY and X rows in the 8- and
// 4-byte cp.async their K and C allow (copyBytes, checked in the rendered
// source): fp16 with K=20 (40-byte rows) and C=6 (12), tf32 with K=10 (40)
// and C=3 (12, the first layer's input channels).
var wgradPipelinePins = []struct {
	shape     string
	precs     []problem.Precision
	copyBytes [2]int // dY's and X's bytes per copy (0: not checked)
	cfgs      []kernels.Config
	layout    problem.Layout // "": NHWC
}{
	{"N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1", nil, [2]int{}, []kernels.Config{ // ResNet-50 s4-3x3
		{"BM": 128, "BN": 128, "WM": 2, "WN": 4, "Split": 2, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4},
		{"BM": 64, "BN": 128, "WM": 2, "WN": 2, "Split": 4, "Unroll": 1, "Stage": 2, "BP": 64, "Stages": 3},
		{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 1, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4},
	}, ""},
	{"N=32,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,bias=false", nil, [2]int{}, []kernels.Config{ // ResNet-50 s1-3x3
		{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 8, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4},
		{"BM": 32, "BN": 32, "WM": 1, "WN": 1, "Split": 4, "Unroll": 1, "Stage": 2, "BP": 64, "Stages": 3},
		{"BM": 64, "BN": 128, "WM": 2, "WN": 2, "Split": 8, "Unroll": 1, "Stage": 2, "BP": 64, "Stages": 3},
		{"BM": 64, "BN": 128, "WM": 2, "WN": 2, "Split": 8, "Unroll": 1, "Stage": 2, "BP": 64, "Stages": 3, "Clusters": 4},
	}, ""},
	{"N=3,C=24,H=9,W=11,K=40,R=3,S=3,pad=1", nil, [2]int{}, []kernels.Config{ // odd: K=40 rows, 217 columns, 297 pixels
		{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 2, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4},
		{"BM": 32, "BN": 32, "WM": 1, "WN": 1, "Split": 4, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 3},
		{"BM": 128, "BN": 128, "WM": 2, "WN": 4, "Split": 8, "Unroll": 1, "Stage": 2, "BP": 16, "Stages": 2},
	}, ""},
	// Strided, dilated, padded, 728 pixels: 8-byte dY and 4-byte X copies,
	// zero-filled in the padding and the dilated taps past the edges.
	{"N=4,C=6,H=27,W=30,K=20,R=3,S=3,stride=2,pad=1,dilation=2", []problem.Precision{problem.FP16}, [2]int{8, 4}, narrowPipelinePins, ""},
	{"N=4,C=3,H=27,W=30,K=10,R=3,S=3,stride=2,pad=1,dilation=2", []problem.Precision{problem.TF32}, [2]int{8, 4}, narrowPipelinePins, ""},
	// NCHW: one element per copy, pixel fastest (4-byte cp.async in tf32,
	// element loads and stores in fp16 and bf16).
	{"N=4,C=6,H=27,W=30,K=20,R=3,S=3,stride=2,pad=1,dilation=2", []problem.Precision{problem.FP16, problem.TF32}, [2]int{}, narrowPipelinePins, problem.NCHW},
	{"N=3,C=24,H=9,W=11,K=40,R=3,S=3,pad=1", []problem.Precision{problem.BF16}, [2]int{}, narrowPipelinePins, problem.NCHW},
	// A first layer (C=3, 11x11, stride 4): fp16 NHWC copies X's 6-byte
	// tap rows one 2-byte element at a time; NCHW in tf32 and fp16.
	{"N=2,C=3,H=31,W=29,K=16,R=11,S=11,stride=4,pad=2", []problem.Precision{problem.FP16}, [2]int{16, 2}, narrowPipelinePins, ""},
	{"N=2,C=3,H=31,W=29,K=16,R=11,S=11,stride=4,pad=2", []problem.Precision{problem.TF32, problem.FP16}, [2]int{}, narrowPipelinePins, problem.NCHW},
	// Stage=3 (input rows staged whole) on few-channel shapes: element
	// copies (odd widths) and 16-byte ones (W=40 fp16 NCHW, W·C=96 NHWC),
	// strides 4, 2 and (2, 3), dilation, partial channel and column tiles.
	{"N=2,C=3,H=31,W=29,K=16,R=11,S=11,stride=4,pad=2", []problem.Precision{problem.TF32, problem.BF16}, [2]int{}, rowPins, problem.NCHW},
	{"N=2,C=3,H=31,W=29,K=16,R=11,S=11,stride=4,pad=2", []problem.Precision{problem.FP16, problem.TF32}, [2]int{}, rowPins, ""},
	{"N=2,C=3,H=40,W=40,K=64,R=7,S=7,stride=2,pad=3", []problem.Precision{problem.FP16}, [2]int{}, rowPins, problem.NCHW},
	{"N=2,C=3,H=30,W=32,K=24,R=5,S=5,stride=2,pad=2", []problem.Precision{problem.FP16, problem.TF32}, [2]int{}, rowPins, ""},
	{"N=3,C=5,H=19,W=23,K=17,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_w=2", []problem.Precision{problem.TF32, problem.FP16}, [2]int{}, rowPins, problem.NCHW},
	{"N=3,C=5,H=19,W=23,K=17,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_w=2", []problem.Precision{problem.BF16}, [2]int{}, rowPins, ""},
}

// rowPins are Stage=3 configurations: a cluster of 4 and of 8, one
// block per tile, and five clusters of 8 per tile (the workspace; on the
// small shapes some of the 40 blocks have no output rows).
var rowPins = []kernels.Config{
	{"BM": 48, "BN": 64, "WM": 1, "WN": 2, "Split": 4, "Unroll": 1, "Stage": 3},
	{"BM": 96, "BN": 128, "WM": 2, "WN": 4, "Split": 8, "Unroll": 1, "Stage": 3},
	{"BM": 32, "BN": 64, "WM": 1, "WN": 2, "Split": 1, "Unroll": 1, "Stage": 3},
	{"BM": 48, "BN": 128, "WM": 1, "WN": 4, "Split": 8, "Unroll": 1, "Stage": 3, "Clusters": 5},
}

// TestWGradMMAPipeline measures wgradmma's cp.async pipeline (Stage=2) on
// ResNet-50's s4-3x3 and s1-3x3 layers at N=32 and an odd shape, in fp16,
// bf16 and tf32 NHWC, on a strided (2), dilated (2), padded (1) shape
// with narrow channel counts, in fp16 and in tf32, whose rows are copied 8
// and 4 bytes at a time, in NCHW (one element per copy) on that shape and
// the odd one, and on a first layer (C=3, 11x11, stride 4) in fp16 NHWC
// (2-byte element copies of X) and NCHW: each pinned configuration (rendered here, since
// the space may soft-reject it on a small shape) must pass the float64
// checks of dW and dBias within the problem's bound, in one run per
// problem with one kept candidate of the space beside it. Its times and
// registers are logged; and Stage=3 (input rows staged whole) on
// few-channel shapes in every precision and layout; with Clusters > 1
// (the reduction across clusters) among the pins. 27 tuning runs of four
// or five kernels.
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
		precs := sp.precs
		if precs == nil {
			precs = []problem.Precision{problem.FP16, problem.BF16, problem.TF32}
		}
		for _, prec := range precs {
			lay := sp.layout
			if lay == "" {
				lay = problem.NHWC
			}
			p := problem.Problem{Shape: shape, Precision: prec, Layout: lay, Op: problem.OpWgrad}
			t.Run(p.String(), func(t *testing.T) {
				var extra []kernels.Kernel
				want := map[string]bool{}
				for _, cfg := range sp.cfgs {
					k, err := f.Render(p, cfg)
					if err != nil {
						t.Fatalf("%v: %v", cfg, err)
					}
					if b := sp.copyBytes; b != [2]int{} {
						eb := prec.ElementBytes()
						va, vb := fmt.Sprintf("#define VA %d ", b[0]/eb), fmt.Sprintf("#define VB %d ", b[1]/eb)
						if !strings.Contains(k.Source, va) || !strings.Contains(k.Source, vb) {
							t.Fatalf("%v: source lacks %q or %q (%d- and %d-byte copies)", cfg, va, vb, b[0], b[1])
						}
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
				checkPinnedOK(t, res.Trials, want, len(sp.cfgs))
				if res.Winner != nil {
					t.Logf("winner %s: %.4f ms", res.Winner.ID, res.Winner.MedianMS)
				}
			})
		}
	}
}
