//go:build cuda

package autotune

import (
	"context"
	"testing"
	"time"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels"
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
	fp16, bf16, tf32, x3 := problem.FP16, problem.BF16, problem.TF32, problem.TF32x3
	nhwc, nchw := problem.NHWC, problem.NCHW
	runDgradCases(t, []dgradCase{
		{"N=32,C=64,H=56,W=56,K=64,R=3,S=3,pad=1", []precLayout{{fp16, nhwc}, {bf16, nhwc}, {tf32, nhwc}}},
		{"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1", []precLayout{{fp16, nhwc}, {tf32, nhwc}, {tf32, nchw}}},
		{"N=32,C=64,H=56,W=56,K=256,R=1,S=1", []precLayout{{fp16, nhwc}}},
		{"N=3,C=13,H=9,W=11,K=24,R=3,S=3,pad=1,dilation=2", []precLayout{{fp16, nhwc}, {bf16, nchw}, {tf32, nhwc}, {x3, nchw}}},
		{"N=2,C=6,H=15,W=16,K=20,R=2,S=3,stride=4,pad=1,dilation_h=4,bias=false", []precLayout{{fp16, nhwc}, {tf32, nchw}}},
		{"N=3,C=24,H=19,W=23,K=17,R=3,S=5,stride_h=2,pad_h=1,pad_w=2,dilation_w=2", []precLayout{{bf16, nhwc}, {x3, nhwc}, {fp16, nchw}}},
	}, func(t *testing.T, p problem.Problem) {
		if !tuneFamilyPinned(t, lib, worker, lim, p, "igemm") {
			t.Fatal("no kept igemm dgrad candidate")
		}
	})
}

// precLayout is a precision and a layout a dgrad case runs in.
type precLayout struct {
	prec problem.Precision
	lay  problem.Layout
}

// dgradCase is a shape and the precisions and layouts its dgrad runs in.
type dgradCase struct {
	shape string
	modes []precLayout
}

// runDgradCases runs run as a subtest for the op=dgrad problem of each
// case's shape in each of its modes.
func runDgradCases(t *testing.T, cases []dgradCase, run func(t *testing.T, p problem.Problem)) {
	t.Helper()
	for _, tc := range cases {
		shape, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range tc.modes {
			p := problem.Problem{Shape: shape, Precision: m.prec, Layout: m.lay, Op: problem.OpDgrad}
			t.Run(p.String(), func(t *testing.T) { run(t, p) })
		}
	}
}

// igemmSplit is an igemm configuration (BK 32) whose reduction is split
// over a thread-block cluster of split blocks.
type igemmSplit struct{ bm, bn, warpsM, warpsN, stages, split int }

func (s igemmSplit) config() kernels.Config {
	return kernels.Config{"BM": s.bm, "BN": s.bn, "BK": 32, "WarpsM": s.warpsM, "WarpsN": s.warpsN, "Stages": s.stages, "SplitK": s.split}
}

// TestIGEMMSplitK tunes igemm kernels whose reduction is split over a
// thread-block cluster (SplitK 2, 4 and 8, rendered by the test and
// measured beside the first kept unsplit igemm candidate). dgrad:
// ResNet-50's s4-3x3 at N=32 (one phase, 144 k-tiles) and its stride-2
// twin s4-3x3s2 (4 phases of 1, 2, 2 and 4 taps: uneven k-tile ranges)
// in fp16 and tf32 NHWC, and an odd shape (C=40, K=72: partial pixel and
// channel tiles) at stride 1 (21 k-tiles, 2 to 3 a rank under SplitK 8)
// and stride 2 (the 1-tap phase's 3 k-tiles leave rank 0 of 4 none).
// fprop: s4-3x3 in fp16 NCHW with its bias, and the odd shape in tf32
// with scale_shift,relu and a bf16 output. Every kernel must pass the
// float64 checks within the precision's bound; the medians are logged.
// Needs an sm_90 GPU (clusters); 10 tuning runs, 25 split kernels.
func TestIGEMMSplitK(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	resnet := []igemmSplit{{64, 128, 2, 4, 4, 2}, {64, 128, 2, 4, 4, 4}, {128, 128, 2, 4, 3, 2}, {128, 128, 2, 4, 3, 4}}
	strided := []igemmSplit{{64, 128, 2, 4, 4, 2}, {128, 64, 4, 2, 3, 4}}
	odd := []igemmSplit{{64, 64, 2, 2, 3, 2}, {64, 64, 2, 2, 3, 4}, {128, 64, 4, 2, 3, 8}}
	const (
		s4    = "N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1"
		s4s2  = "N=32,C=512,H=14,W=14,K=512,R=3,S=3,stride=2,pad=1"
		odd1  = "N=3,C=40,H=9,W=11,K=72,R=3,S=3,pad=1"
		odd2  = "N=3,C=40,H=9,W=11,K=72,R=3,S=3,stride=2,pad=1"
		dgrad = problem.OpDgrad
		fprop = problem.OpFprop
	)
	cases := []struct {
		shape    string
		op       problem.Op
		prec     problem.Precision
		lay      problem.Layout
		epilogue string
		out      problem.Storage
		tiles    []igemmSplit
	}{
		{s4, dgrad, problem.FP16, problem.NHWC, "", "", resnet},
		{s4, dgrad, problem.TF32, problem.NHWC, "", "", resnet},
		{s4s2, dgrad, problem.FP16, problem.NHWC, "", "", strided},
		{s4s2, dgrad, problem.TF32, problem.NHWC, "", "", strided},
		{odd1, dgrad, problem.FP16, problem.NHWC, "", "", odd},
		{odd1, dgrad, problem.TF32, problem.NCHW, "", "", odd[:2]},
		{odd2, dgrad, problem.FP16, problem.NHWC, "", "", odd[:2]},
		{odd2, dgrad, problem.BF16, problem.NCHW, "", "", odd[1:2]},
		{s4, fprop, problem.FP16, problem.NCHW, "", "", resnet[:2]},
		// The forward's reduction is 12 k-tiles of 32 taps (C·R·S = 360): at
		// most SplitK 4 keeps each rank the 2 that Render requires.
		{odd1, fprop, problem.TF32, problem.NHWC, "scale_shift,relu", problem.StorageBF16, odd[:2]},
	}
	for _, tc := range cases {
		shape, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		var chain epilogue.Chain
		if tc.epilogue != "" {
			if chain, err = epilogue.Parse(tc.epilogue); err != nil {
				t.Fatal(err)
			}
		}
		p := problem.Problem{Shape: shape, Precision: tc.prec, Layout: tc.lay, Op: tc.op, Epilogue: chain, OutPrecision: tc.out}
		t.Run(p.String(), func(t *testing.T) {
			cands, err := kernels.Enumerate(p, lim)
			if err != nil {
				t.Fatalf("enumerate: %v", err)
			}
			var pin string
			for _, c := range cands {
				if _, split := c.Config["SplitK"]; c.Family == "igemm" && c.Rejected == "" && !split {
					pin = c.ID()
					break
				}
			}
			if pin == "" {
				t.Fatal("no kept unsplit igemm candidate")
			}
			phases := 1
			if tc.op == dgrad {
				phases = shape.StrideH * shape.StrideW
			}
			var extra []kernels.Kernel
			configOf := map[string]string{}
			for _, st := range tc.tiles {
				k, err := kernels.RenderCandidate(p, kernels.Candidate{Family: "igemm", Config: st.config()})
				if err != nil {
					t.Fatalf("render SplitK=%d: %v", st.split, err)
				}
				if k.Grid[2] != phases*st.split {
					t.Fatalf("%s: grid %v, want z = %d phases × %d", k.Config, k.Grid, phases, st.split)
				}
				extra = append(extra, k)
				configOf[k.Family+"/"+k.Name] = k.Config.String()
			}
			res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: worker, Only: []string{pin}, Extra: extra,
				Trials: 0, Runs: 5, Seed: 23, Timeout: 60 * time.Second})
			if err != nil {
				t.Fatalf("tune: %v", err)
			}
			if passed := checkTrials(t, p, res.Trials); passed != len(extra)+1 {
				t.Errorf("%d of %d kernels passed", passed, len(extra)+1)
			}
			for _, tr := range res.Trials {
				cfg := configOf[tr.ID]
				if tr.ID == pin {
					cfg = "unsplit " + tr.ID
				}
				if cfg != "" {
					t.Logf("%s: %s, %.4f ms, error %.2e (sampled %.2e)", cfg, tr.Status, tr.MedianMS, tr.RelError, tr.SampleError)
				}
			}
		})
	}
}

// TestIGEMMDgradFold tunes igemm's folded dgrad (Fold=1: the stride phases
// as the GEMM's columns, B gathered with zeros where a phase meets no tap)
// pinned to two tiles per problem: a flagship-like C=3, 11x11, stride-4
// shape whose H and W are not multiples of the stride, a stride-4 shape
// whose row phases 2 and 3 have no tap (dilation 4; their dX must come out
// zero), an asymmetric one (strides 2 and 3, dilation 2 along W, odd C
// and K) and a ResNet-stem-like 7x7 stride 2. Precisions and layouts
// rotate so that each precision meets both layouts. Every pin must pass
// the float64 checks within the precision's bound. 10 tuning runs.
func TestIGEMMDgradFold(t *testing.T) {
	lib, worker, _ := gpuSetup(t)
	fp16, bf16, tf32, x3 := problem.FP16, problem.BF16, problem.TF32, problem.TF32x3
	nhwc, nchw := problem.NHWC, problem.NCHW
	pins := []string{"igemm/BK=32,BM=128,BN=64,Fold=1,Stages=3,WarpsM=4,WarpsN=2", "igemm/BK=32,BM=64,BN=64,Fold=1,Stages=2,WarpsM=2,WarpsN=2"}
	runDgradCases(t, []dgradCase{
		{"N=2,C=3,H=31,W=29,K=16,R=11,S=11,stride=4,pad=2", []precLayout{{fp16, nhwc}, {tf32, nchw}, {x3, nchw}}},
		{"N=2,C=6,H=15,W=16,K=20,R=2,S=3,stride=4,pad=1,dilation_h=4,bias=false", []precLayout{{bf16, nhwc}, {tf32, nhwc}}},
		{"N=3,C=5,H=19,W=23,K=17,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_w=2", []precLayout{{fp16, nchw}, {x3, nhwc}, {bf16, nchw}}},
		{"N=2,C=3,H=40,W=40,K=64,R=7,S=7,stride=2,pad=3", []precLayout{{fp16, nhwc}, {tf32, nchw}}},
	}, func(t *testing.T, p problem.Problem) {
		res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: worker, Only: pins,
			Trials: 0, Runs: 10, Seed: 29, Timeout: 60 * time.Second})
		if err != nil {
			t.Fatalf("tune: %v", err)
		}
		if passed := checkTrials(t, p, res.Trials); passed != len(pins) {
			t.Errorf("%d of %d folded kernels passed", passed, len(pins))
		}
		for _, tr := range res.Trials {
			if tr.Status != StatusRejected && tr.Status != StatusSkipped {
				t.Logf("%s: %s, %.4f ms, error %.2e", tr.ID, tr.Status, tr.MedianMS, tr.RelError)
			}
		}
	})
}
