//go:build cuda

package autotune

import (
	"slices"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// TestWGMMAIGEMMRelayout tunes 16-bit NCHW forward problems through
// wgmmaigemm alone, relayed out (the blocks copy the input to NHWC,
// channels zero-padded to a multiple of 8, and the filter to KRSC, each
// waiting only on blocks of lower tickets; then the NHWC forward, stored
// NCHW): ResNet-50's 3×3
// and strided 1×1, a 7×7 map, the stem (C=3, padded), odd channel counts
// (C=13, K=11: a padded 1×1 whose filter is copied), strided 1×1s (the
// copy subsampled; one with asymmetric strides), an odd dilated shape
// with asymmetric strides, in fp16 and bf16, with the residual chain and
// an fp32 output; and tf32 with Relayout=1 (the stem, 3×3, strided 1×1,
// the odd shape with a chain). Each problem's first, middle and last kept
// configurations and its first StoreRows twin (staged channel by channel,
// stored along the pixels) must pass the float64 checks: the worker's
// first run launches the kernel alone (its blocks make the copies, the
// fallback of a launcher that knows no prologue), the re-check after the
// timed runs follows prologue launches (the prepared copies).
func TestWGMMAIGEMMRelayout(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	odd := "N=3,C=24,H=19,W=23,K=40,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=2,dilation_h=2"
	for _, tc := range []relayoutCase{
		{"N=8,C=64,H=56,W=56,K=64,R=3,S=3,pad=1", problem.FP16, "", ""},
		{"N=8,C=256,H=56,W=56,K=512,R=1,S=1,stride=2,bias=false", problem.BF16, "", ""},
		{"N=8,C=512,H=7,W=7,K=2048,R=1,S=1", problem.FP16, "", ""},
		{"N=4,C=3,H=64,W=64,K=64,R=7,S=7,stride=2,pad=3", problem.FP16, "", ""},
		{"N=3,C=13,H=9,W=11,K=11,R=1,S=1", problem.BF16, "", ""},
		{"N=3,C=20,H=15,W=17,K=24,R=1,S=1,stride_h=2,stride_w=3", problem.FP16, "", ""},
		{odd, problem.FP16, "", ""},
		{odd, problem.BF16, "residual(0.5),relu", ""},
		{"N=2,C=16,H=10,W=10,K=24,R=3,S=3,pad=1,bias=false", problem.FP16, "", problem.FP32.Storage()},
		{"N=8,C=64,H=56,W=56,K=64,R=3,S=3,pad=1", problem.TF32, "", ""},
		{"N=4,C=3,H=64,W=64,K=64,R=7,S=7,stride=2,pad=3", problem.TF32, "", ""},
		{"N=8,C=256,H=56,W=56,K=512,R=1,S=1,stride=2,bias=false", problem.TF32, "", ""},
		{odd, problem.TF32, "residual(0.5),relu", ""},
	} {
		p := tc.problem(t)
		t.Run(p.String()+" "+tc.chain, func(t *testing.T) {
			// tf32: its Relayout=1 candidates; 16-bit: every relayed-out one.
			tuneKeptPins(t, lib, worker, lim, p, func(c kernels.Candidate) bool {
				return c.Config["PlaneA"] == 0 && (p.Precision != problem.TF32 || c.Config["Relayout"] == 1)
			}, 7)
		})
	}
}

// relayoutCase is a problem of the relayout tests (NCHW, the forward): a
// shape, a precision, an epilogue chain and an output type ("": none).
type relayoutCase struct {
	shape string
	prec  problem.Precision
	chain string
	out   problem.Storage
}

func (c relayoutCase) problem(t *testing.T) problem.Problem {
	t.Helper()
	shape, err := problem.ParseShape(c.shape)
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: shape, Precision: c.prec, Layout: problem.NCHW, OutPrecision: c.out}
	if c.chain != "" {
		if p.Epilogue, err = epilogue.Parse(c.chain); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// tuneKeptPins tunes p pinned to the first, middle and last of
// wgmmaigemm's kept candidates that keep accepts, and the first of them
// with StoreRows (the epilogue through shared memory: along the pixels in
// NCHW, along the channels in NHWC), each once, all of which must pass;
// it logs each kernel's time and errors.
func tuneKeptPins(t *testing.T, lib *nvrtc.Library, worker []string, lim kernels.Limits, p problem.Problem, keep func(kernels.Candidate) bool, seed uint64) {
	t.Helper()
	var kept []kernels.Candidate
	for _, c := range keptOf(t, p, lim, "wgmmaigemm") {
		if keep(c) {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		t.Fatal("no kept wgmmaigemm candidate")
	}
	pins := firstMiddleLast(kept)
	for _, c := range kept {
		if c.Config["StoreRows"] == 1 {
			if !slices.Contains(pins, c.ID()) { // a pin twice is measured once
				pins = append(pins, c.ID())
			}
			break
		}
	}
	res := tunePins(t, lib, worker, p, pins, nil, seed)
	for _, tr := range res.Trials {
		if tr.Status == StatusOK {
			t.Logf("%s: %.4f ms, error %.2e (sampled %.2e)", tr.ID, tr.MedianMS, tr.RelError, tr.SampleError)
		}
	}
}

// TestWGMMAIGEMMPlaneA tunes 16-bit NCHW 1×1 forwards at stride 1 through
// wgmmaigemm's PlaneA candidates alone (A read straight from the channel
// planes, 16 bytes of 8 pixels a copy, MN-major, read transposed; no
// copy): ResNet-50-like 1×1s on 56², 28² and 14² maps (P·Q = 196: 8-byte
// copies of 4 pixels), odd ones (C=24, K=40, 10×12; C=32, K=48, 14²) with
// the residual chain. The first, middle and last kept
// PlaneA configurations and the first PlaneA StoreRows twin must pass the
// float64 checks.
func TestWGMMAIGEMMPlaneA(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	for _, tc := range []relayoutCase{
		{"N=8,C=64,H=56,W=56,K=256,R=1,S=1", problem.FP16, "", ""},
		{"N=4,C=256,H=56,W=56,K=64,R=1,S=1,bias=false", problem.BF16, "", ""},
		{"N=4,C=512,H=28,W=28,K=256,R=1,S=1", problem.FP16, "", ""},
		{"N=3,C=24,H=10,W=12,K=40,R=1,S=1", problem.BF16, "residual(0.5),relu", ""},
		{"N=8,C=1024,H=14,W=14,K=256,R=1,S=1", problem.FP16, "", ""},                // P·Q = 196: 8-byte copies
		{"N=3,C=32,H=14,W=14,K=48,R=1,S=1", problem.BF16, "residual(0.5),relu", ""}, // 8-byte copies, partial tiles
	} {
		p := tc.problem(t)
		t.Run(p.String(), func(t *testing.T) {
			tuneKeptPins(t, lib, worker, lim, p, func(c kernels.Candidate) bool { return c.Config["PlaneA"] == 1 }, 11)
		})
	}
}

// TestWGMMAIGEMMPlaneADgrad tunes 16-bit NCHW 1×1 data gradients at
// stride 1 through wgmmaigemm's PlaneA alone (dY read from its planes, the
// filter MN-major, dX stored NCHW): a ResNet-50-like layer on a 56² map,
// odd channel counts (K = 13) in bf16, a 14² map (8-byte copies). The
// first, middle and last kept PlaneA configurations must pass the float64
// checks.
func TestWGMMAIGEMMPlaneADgrad(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	for _, tc := range []relayoutCase{
		{"N=8,C=64,H=56,W=56,K=256,R=1,S=1,bias=false", problem.FP16, "", ""},
		{"N=3,C=40,H=10,W=12,K=13,R=1,S=1,bias=false", problem.BF16, "", ""},
		{"N=4,C=256,H=14,W=14,K=64,R=1,S=1,bias=false", problem.FP16, "", ""}, // P·Q = 196: 8-byte copies
	} {
		p := tc.problem(t)
		p.Op = problem.OpDgrad
		t.Run(p.String(), func(t *testing.T) {
			tuneKeptPins(t, lib, worker, lim, p, func(c kernels.Candidate) bool { return c.Config["PlaneA"] == 1 }, 13)
		})
	}
}

// TestWGMMAIGEMMRelayoutDgrad tunes 16-bit NCHW data gradients through
// wgmmaigemm alone, relayed out (dY copied to NHWC, K zero-padded to a
// multiple of 8, the filter to KRSC; dX stored NCHW): a ResNet-50-like 3×3
// at stride 1, folded 3×3 and 1×1 (idle phases) at stride 2, K = 13
// padded at strides 2×3, an odd dilated shape. The first, middle and last
// kept configurations must pass the float64 checks.
func TestWGMMAIGEMMRelayoutDgrad(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	cases := []struct {
		shape string
		prec  problem.Precision
	}{
		{"N=8,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,bias=false", problem.FP16},
		{"N=8,C=128,H=28,W=28,K=128,R=3,S=3,stride=2,pad=1,bias=false", problem.BF16},
		{"N=8,C=256,H=28,W=28,K=512,R=1,S=1,stride=2,bias=false", problem.FP16},
		{"N=3,C=16,H=15,W=17,K=13,R=3,S=3,stride_h=2,stride_w=3,pad=1,bias=false", problem.BF16},
		{"N=3,C=24,H=19,W=23,K=40,R=3,S=5,pad_h=1,pad_w=2,dilation_h=2,bias=false", problem.FP16},
	}
	for _, tc := range cases {
		shape, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		p := problem.Problem{Shape: shape, Precision: tc.prec, Layout: problem.NCHW, Op: problem.OpDgrad}
		t.Run(p.String(), func(t *testing.T) {
			if !tuneFamilyPinned(t, lib, worker, lim, p, "wgmmaigemm") {
				t.Fatal("no kept wgmmaigemm candidate")
			}
		})
	}
}
