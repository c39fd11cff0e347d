//go:build cuda

package autotune

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// gradShapes are odd shapes for the gradient families: grouped and
// depthwise, per-axis stride, pad and dilation, odd channel counts, N = 1,
// a 1x1, no bias, and the flagship's first layer at a small batch.
var gradShapes = []string{
	"N=3,C=5,H=37,W=41,K=24,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=2,dilation_w=2,bias=false",
	"N=2,C=12,H=15,W=17,K=18,R=3,S=3,stride_h=2,pad=1,dilation_w=2,groups=3",
	"N=3,C=32,H=14,W=13,K=32,R=3,S=3,stride=2,pad=1,groups=32,bias=false",
	"N=1,C=13,H=19,W=23,K=11,R=3,S=3,pad=1",
	"N=4,C=45,H=7,W=7,K=70,R=1,S=1",
	"N=2,C=3,H=61,W=67,K=24,R=11,S=11,stride=4,pad=2",
}

// TestGradShapes tunes dgrad and wgrad on gradShapes, each shape in both
// layouts, the precision rotating so that each op meets every precision in
// each layout (every precision of every shape under CONVGEN_FULL_SWEEP=1),
// pinned to a covering set of each family's kept configurations
// (pinsCovering, per serving family): every measured candidate passes the float64 checks (for
// wgrad with a bias, dW and dBias both), and each run has a winner and a
// fallback. About 24 tuning runs.
func TestGradShapes(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	full := os.Getenv("CONVGEN_FULL_SWEEP") == "1"
	for o, op := range []problem.Op{problem.OpDgrad, problem.OpWgrad} {
		i := 0
		eachProblem(t, gradShapes, nil, func(p problem.Problem) {
			pi := slices.Index(problem.Precisions, p.Precision)
			li := slices.Index(problem.Layouts, p.Layout)
			shape := i / (len(problem.Precisions) * len(problem.Layouts))
			i++
			if !full && pi != (2*shape+li+o)%len(problem.Precisions) {
				return
			}
			p.Op = op
			cands, err := kernels.Enumerate(p, lim)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				return
			}
			// A covering set of each serving family's kept configurations
			// (wgrad and wgradmma, ...), measured in one run.
			byFamily := map[string][]kernels.Candidate{}
			var families []string
			for _, c := range cands {
				if c.Rejected == "" {
					if byFamily[c.Family] == nil {
						families = append(families, c.Family)
					}
					byFamily[c.Family] = append(byFamily[c.Family], c)
				}
			}
			var pins []string
			for _, f := range families {
				pins = append(pins, pinsCovering(byFamily[f])...)
			}
			t.Run(p.String(), func(t *testing.T) {
				res, err := Tune(context.Background(), lib, Options{Problem: p,
					Worker: worker, Only: pins, Trials: 0, Runs: 10, Seed: 3, Timeout: 60 * time.Second})
				if err != nil {
					t.Fatalf("tune: %v", err)
				}
				checkTrials(t, p, res.Trials)
				if res.Winner == nil {
					t.Fatal("no winner")
				}
				if !strings.HasPrefix(res.Winner.Family, op.String()) && (op != problem.OpDgrad || (res.Winner.Family != "igemm" && res.Winner.Family != "wgmmaigemm")) { // wgrad or wgradmma; igemm and wgmmaigemm serve dgrad too
					t.Errorf("winner %s of family %s", res.Winner.ID, res.Winner.Family)
				}
				t.Logf("winner %s: %.4f ms, error %.2e (sampled %.2e)", res.Winner.ID, res.Winner.MedianMS, res.Winner.RelError, res.Winner.SampleError)
				if res.Fallback == nil {
					t.Errorf("no fallback: %s", res.FallbackNote)
				}
			})
		})
	}
}

// TestGradPlanted: the checks of a gradient catch a candidate that writes
// only part of its outputs: a wgrad kernel that never stores dBias, or
// dW, and a dgrad kernel that skips the last tap, are wrong; the real
// kernels pass.
func TestGradPlanted(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	shape, err := problem.ParseShape("N=2,C=6,H=20,W=18,K=8,R=3,S=3,stride=2,pad=1,groups=2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		op         problem.Op
		name       string
		find, with string
	}{
		{problem.OpWgrad, "no_dbias", "if (k < K) dbias[k] = v;", ";"},
		{problem.OpWgrad, "no_dw", "if (f < DW_TOTAL) dw[f] = from_float(v);", ";"},
		{problem.OpDgrad, "short_taps", "for (int s = 0; s < S; ++s) {", "for (int s = 0; s < S - 1; ++s) {"},
	} {
		p := problem.Problem{Shape: shape, Precision: problem.FP16, Layout: problem.NHWC, Op: tc.op}
		t.Run(tc.name, func(t *testing.T) {
			cands, err := kernels.Enumerate(p, lim)
			if err != nil {
				t.Fatal(err)
			}
			var pin kernels.Candidate
			for _, c := range cands {
				if c.Rejected == "" && c.Family == tc.op.String() { // the planted edits are of dgrad's and wgrad's source
					pin = c
					break
				}
			}
			k, err := kernels.RenderCandidate(p, pin)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(k.Source, tc.find) {
				t.Fatalf("%s: the source lacks %q", pin.ID(), tc.find)
			}
			k.Source = strings.Replace(k.Source, tc.find, tc.with, 1)
			k.Family = "planted"
			res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: worker, Only: []string{pin.ID()},
				Extra: []kernels.Kernel{k}, Runs: 5, Seed: 9, Timeout: 30 * time.Second})
			if err != nil {
				t.Fatalf("tune: %v", err)
			}
			for _, tr := range res.Trials {
				switch {
				case tr.ID == pin.ID() && tr.Status != StatusOK:
					t.Errorf("%s: %s (%s), want ok", tr.ID, tr.Status, tr.Reason)
				case tr.Family == "planted" && tr.Status != StatusWrong:
					t.Errorf("%s: %s (%s), want wrong", tr.ID, tr.Status, tr.Reason)
				}
			}
		})
	}
}

// TestWGradMMA3xTF32: wgradmma's 3xtf32 kernels (each k step's three mma
// summed from zero, added in FP32) hold 3xtf32's 1e-5 bound on the
// ungrouped gradShapes and on two long reductions (200 704 and 802 816
// pixels: Stage 2 and Stage 3), both layouts, pinned to a covering set of
// the family's kept configurations; each is checked against float64 and
// the largest error is logged. Before the step sums the tensor core's
// truncating accumulation gave 1.3–1.5e-5 on a 4 000-pixel shape.
func TestWGradMMA3xTF32(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	shapes := append(slices.Clone(gradShapes),
		"N=64,C=16,H=56,W=56,K=40,R=3,S=3,pad=1",
		"N=256,C=3,H=112,W=112,K=24,R=7,S=7,stride=2,pad=3")
	eachProblem(t, shapes, []problem.Precision{problem.TF32x3}, func(p problem.Problem) {
		p.Op = problem.OpWgrad
		if p.Shape.Groups > 1 {
			return // wgradmma serves groups=1
		}
		cands, err := kernels.Enumerate(p, lim)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		var mma []kernels.Candidate
		for _, c := range cands {
			if c.Rejected == "" && c.Family == "wgradmma" {
				mma = append(mma, c)
			}
		}
		if len(mma) == 0 {
			t.Errorf("%s: no wgradmma candidate kept", p)
			return
		}
		t.Run(p.String(), func(t *testing.T) {
			res, err := Tune(context.Background(), lib, Options{Problem: p,
				Worker: worker, Only: pinsCovering(mma), Trials: 0, Runs: 5, Seed: 5, Timeout: 120 * time.Second})
			if err != nil {
				t.Fatalf("tune: %v", err)
			}
			if checkTrials(t, p, res.Trials) == 0 {
				t.Fatal("no candidate passed")
			}
			worst := 0.0
			for _, tr := range res.Trials {
				if tr.Status == StatusOK {
					worst = max(worst, tr.RelError, tr.SampleError)
				}
			}
			t.Logf("%d measured, largest error %.2e; winner %s %.4f ms", len(res.Trials), worst, res.Winner.ID, res.Winner.MedianMS)
		})
	})
}
