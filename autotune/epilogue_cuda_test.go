//go:build cuda

package autotune

import (
	"context"
	"testing"
	"time"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// TestTuneEpilogue tunes a small AlexNet-like shape (11x11, stride 4, served by every family) with the epilogue chains
// scale_shift,relu and residual(0.5),relu (and a chain without arrays,
// gelu_tanh,leaky_relu(0.1)) in every precision and both layouts, pinned to
// the first kept configuration of every family that serves the problem:
// each pinned candidate must pass the float64 checks (the GPU reference
// and the sampled CPU one, both applying the chain) within the precision's
// usual bound. Each of the nine families this shape suits (all but the
// depthwise and channel-heavy ones) must be measured at least once.
func TestTuneEpilogue(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	shape, err := problem.ParseShape("N=2,C=3,H=64,W=64,K=64,R=11,S=11,stride=4,pad=2")
	if err != nil {
		t.Fatal(err)
	}
	chains := []string{"scale_shift,relu", "residual(0.5),relu", "gelu_tanh,leaky_relu(0.1)"}
	measured := map[string]bool{}
	for i, prec := range problem.Precisions {
		for j, lay := range problem.Layouts {
			for _, spec := range []string{chains[(i+j)%2], chains[2]} {
				if spec == chains[2] && j == 1 {
					continue // the array-free chain once per precision
				}
				c, err := epilogue.Parse(spec)
				if err != nil {
					t.Fatal(err)
				}
				p := problem.Problem{Shape: shape, Precision: prec, Layout: lay, Epilogue: c}
				t.Run(p.String(), func(t *testing.T) {
					cands, err := kernels.Enumerate(p, lim)
					if err != nil {
						t.Fatalf("enumerate: %v", err)
					}
					var pins []string
					for _, f := range kernels.Families() {
						var mine []kernels.Candidate
						for _, c := range cands {
							if c.Family == f.Name() {
								mine = append(mine, c)
							}
						}
						for _, c := range family.AdmitSoft(mine) {
							if c.Rejected == "" {
								pins = append(pins, c.ID())
								measured[f.Name()] = true
								break
							}
						}
					}
					if len(pins) == 0 {
						t.Fatal("no family serves the problem with its chain")
					}
					res, err := Tune(context.Background(), lib, Options{Problem: p,
						Worker: worker, Only: pins, Trials: 0, Runs: 10, Seed: 11, Timeout: 60 * time.Second})
					if err != nil {
						t.Fatalf("tune: %v", err)
					}
					if passed := checkTrials(t, p, res.Trials); passed != len(pins) {
						t.Errorf("%d of %d pinned candidates passed (%v)", passed, len(pins), pins)
					}
				})
			}
		}
	}
	// The families this shape is for (depthwise and channel-heavy families
	// have shapes of their own in their tests).
	for _, name := range []string{"direct", "winograd", "mma", "mmahalf", "wgmma", "wgmmahalf", "wgmmarow", "igemm", "generic"} {
		if !measured[name] {
			t.Errorf("family %s served none of the problems with a chain", name)
		}
	}
}
