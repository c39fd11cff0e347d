//go:build cuda

package autotune

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// elementSpecs is one chain per epilogue element (residual twice: plain
// and scaled), each alone.
var elementSpecs = []string{"scale_shift", "residual", "residual(0.5)", "relu", "relu6", "leaky_relu(0.1)",
	"clamp(-1,2)", "sigmoid", "tanh", "gelu", "gelu_tanh", "silu", "hardswish", "mish"}

// elementShapes are small shapes that together reach every forward
// family: an AlexNet-like 11×11 stride 4 (direct, winograd, mma, mmahalf,
// wgmma, wgmmahalf, wgmmarow, igemm, generic), a channel-heavy 3×3
// (wgmmaigemm, NHWC) and a depthwise 3×3 (depthwise).
var elementShapes = []string{
	"N=2,C=3,H=64,W=64,K=64,R=11,S=11,stride=4,pad=2",
	"N=2,C=64,H=16,W=16,K=64,R=3,S=3,pad=1",
	"N=2,C=32,H=16,W=16,K=32,R=3,S=3,pad=1,groups=32",
}

// elementFamilies are the forward families the shapes must reach for each
// element; the sm_90a ones only where this NVRTC targets sm_90a.
var elementFamilies = []string{"direct", "winograd", "mma", "mmahalf", "wgmma", "wgmmahalf", "wgmmarow",
	"wgmmaigemm", "igemm", "depthwise", "generic"}

// elementRun is one pinned tuning run of the plan: a problem and one kept
// candidate of each family it covers.
type elementRun struct {
	p    problem.Problem
	pins []string
	fams []string
}

// planElement covers every family for chain c, greedily: it walks the
// (precision, layout) pairs starting at the rotation-th (so that the
// elements between them run every precision and layout), each over the
// shapes, and pins the first kept candidate of each family not yet
// covered. It returns the runs and the families covered.
func planElement(t *testing.T, c epilogue.Chain, rotation int, shapes []problem.Shape, lim kernels.Limits) ([]elementRun, map[string]bool) {
	t.Helper()
	type pl struct {
		prec problem.Precision
		lay  problem.Layout
	}
	var pairs []pl
	for _, prec := range problem.Precisions {
		for _, lay := range problem.Layouts {
			pairs = append(pairs, pl{prec, lay})
		}
	}
	covered := map[string]bool{}
	var runs []elementRun
	for i := range pairs {
		pair := pairs[(rotation+i)%len(pairs)]
		for _, sh := range shapes {
			p := problem.Problem{Shape: sh, Precision: pair.prec, Layout: pair.lay, Epilogue: c}
			if kernels.Serves(p) != nil {
				continue
			}
			cands, err := kernels.Enumerate(p, lim)
			if err != nil {
				continue
			}
			run := elementRun{p: p}
			for _, f := range kernels.Families() {
				if covered[f.Name()] {
					continue
				}
				var mine []kernels.Candidate
				for _, cand := range cands {
					if cand.Family == f.Name() {
						mine = append(mine, cand)
					}
				}
				for _, cand := range family.AdmitSoft(mine) {
					if cand.Rejected == "" {
						run.pins = append(run.pins, cand.ID())
						run.fams = append(run.fams, f.Name())
						covered[f.Name()] = true
						break
					}
				}
			}
			if len(run.pins) > 0 {
				runs = append(runs, run)
			}
		}
	}
	return runs, covered
}

// TestTuneEpilogueElements is the per-element GPU check of the epilogue
// chains: for each element alone (scale_shift, residual, residual(0.5) and
// every activation), every forward family runs it once, pinned to its
// first kept configuration on one of three small shapes, in a precision
// and layout that rotates over the elements (so that the elements between
// them meet every precision and layout), and must pass the float64 checks
// (the GPU reference and the sampled CPU one, both applying the chain)
// within the precision's usual bound; each run must have a verified
// winner. The elements run in parallel (-test.parallel, default GOMAXPROCS;
// each runs its plans one after another): about 14 × 5 pinned runs.
func TestTuneEpilogueElements(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	var shapes []problem.Shape
	for _, text := range elementShapes {
		sh, err := problem.ParseShape(text)
		if err != nil {
			t.Fatal(err)
		}
		shapes = append(shapes, sh)
	}
	want := slices.DeleteFunc(slices.Clone(elementFamilies), func(name string) bool {
		return !lim.SM90a && strings.HasPrefix(name, "wgmma")
	})
	for i, spec := range elementSpecs {
		c, err := epilogue.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		runs, covered := planElement(t, c, i, shapes, lim)
		for _, name := range want {
			if !covered[name] {
				t.Errorf("%s: family %s serves none of the shapes in any precision and layout", spec, name)
			}
		}
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			for _, run := range runs {
				start := time.Now()
				res, err := Tune(context.Background(), lib, Options{Problem: run.p, Worker: worker, Only: run.pins,
					Trials: 0, Warmup: 1, Runs: 3, Seed: uint64(17 + i), Timeout: 60 * time.Second})
				if err != nil {
					t.Errorf("%s: tune %v: %v", run.p, run.fams, err)
					continue
				}
				passed := checkTrials(t, run.p, res.Trials)
				if passed != len(run.pins) || res.Winner == nil || res.Winner.Status != StatusOK {
					t.Errorf("%s: %d of %d pinned candidates passed (%v), winner %v", run.p, passed, len(run.pins), run.pins, res.Winner)
				}
				t.Logf("%s %s: %s passed (%.1fs)", run.p.Precision, run.p.Layout, strings.Join(run.fams, " "), time.Since(start).Seconds())
			}
		})
	}
}

// TestEpilogueElementsPlan says, without running anything, what
// TestTuneEpilogueElements runs (with -test.v).
func TestEpilogueElementsPlan(t *testing.T) {
	_, _, lim := gpuSetup(t)
	total := 0
	for i, spec := range elementSpecs {
		c, err := epilogue.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		var shapes []problem.Shape
		for _, text := range elementShapes {
			sh, err := problem.ParseShape(text)
			if err != nil {
				t.Fatal(err)
			}
			shapes = append(shapes, sh)
		}
		runs, _ := planElement(t, c, i, shapes, lim)
		var lines []string
		for _, r := range runs {
			lines = append(lines, fmt.Sprintf("%s/%s C=%d: %s", r.p.Precision, r.p.Layout, r.p.Shape.C, strings.Join(r.fams, ",")))
		}
		total += len(runs)
		t.Logf("%s: %s", spec, strings.Join(lines, "; "))
	}
	t.Logf("%d pinned runs", total)
}
