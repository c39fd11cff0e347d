//go:build cuda

package autotune

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// TestTuneResidualPrefetch checks on the GPU the early residual reads of
// wgmmarow and wgmmahalf (ResidualPrefetch 1: into registers, 2: into L2
// a tile ahead) against the reference, beside today's read at the store
// (0): for a residual chain on a stride-4 shape whose rows and tiles end
// inside the output (Q=15), each family's first kept candidate of every
// (ResidualPrefetch, Overlap, PredicatedStores) in every precision and
// layout it serves (kept, or pruned only by the soft prefetch rule), pinned. Needs an sm_90 device and NVRTC 12 or newer.
func TestTuneResidualPrefetch(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	if !lim.SM90a {
		t.Skip("wgmmarow and wgmmahalf need sm_90a")
	}
	chain, err := epilogue.Parse("residual(0.5),relu")
	if err != nil {
		t.Fatal(err)
	}
	var fams []kernels.Family
	for _, name := range []string{"wgmmarow", "wgmmahalf"} {
		f, err := kernels.FamilyByName(name)
		if err != nil {
			t.Fatal(err)
		}
		fams = append(fams, f)
	}
	runs := 0
	eachProblem(t, []string{"N=3,C=3,H=64,W=64,K=96,R=11,S=11,stride=4,pad=2"}, nil, func(p problem.Problem) {
		p.Epilogue = chain
		for _, f := range fams {
			if f.Serves(p) != nil {
				continue
			}
			seen := map[string]bool{}
			var pins []string
			for _, c := range family.AdmitSoft(f.Space(p, lim)) {
				key := fmt.Sprintf("%d/%d/%d", c.Config["ResidualPrefetch"], c.Config["Overlap"], c.Config["PredicatedStores"])
				// The prefetch rule prunes the variants measured slower; a
				// pin lifts it.
				if (c.Rejected == "" || c.Rejection.Rule == "prefetch") && !seen[key] {
					seen[key] = true
					pins = append(pins, c.ID())
				}
			}
			for rp := range 3 {
				if !seen[fmt.Sprintf("%d/0/1", rp)] && !seen[fmt.Sprintf("%d/0/0", rp)] {
					t.Errorf("%s %s: no candidate with ResidualPrefetch=%d", f.Name(), p, rp)
				}
			}
			runs++
			start := time.Now()
			res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: worker, Only: pins,
				Trials: 0, Warmup: 1, Runs: 3, Seed: 24, Timeout: 60 * time.Second})
			if err != nil {
				t.Errorf("%s: tune %v: %v", p, pins, err)
				continue
			}
			if passed := checkTrials(t, p, res.Trials); passed != len(pins) {
				t.Errorf("%s: %d of %d pinned candidates passed (%v)", p, passed, len(pins), pins)
			}
			t.Logf("%s %s %s: %d pins passed (%.1fs)", f.Name(), p.Precision, p.Layout, len(pins), time.Since(start).Seconds())
		}
	})
	if runs != 5 {
		t.Errorf("%d problems served, want 5 (wgmmarow tf32 nchw, wgmmahalf fp16 and bf16 in both layouts)", runs)
	}
}
