package kernels

import (
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// TestWGMMABufferRelease checks, in the PTX of wgmma kernels with a producer
// warpgroup, that a computing warpgroup hands a patch buffer back to the
// producer (bar.arrive on the buffer's "empty" barrier) only when no wgmma
// it issued can still be in flight: a wgmma.wait_group 0 lies between its
// last wgmma.mma_async and the bar.arrive. With RegisterA the wgmmas take A
// from registers loaded (ld.shared) from the buffer, so every such load has
// been used, and thus performed, by then too. Issue 22: compute-sanitizer's
// racecheck reported 109,548 WAR hazards on the 3xtf32 flagship winner
// (RegisterA), whose warpgroups arrived before their last wgmma group.
func TestWGMMABufferRelease(t *testing.T) {
	lib := nvrtctest.Open(t)
	lim := DefaultLimits(90)
	lim.SM90a = true
	x3 := flagship(t, problem.TF32x3, problem.NCHW)
	tf32 := flagship(t, problem.TF32, problem.NCHW)
	_, tf32RA := tf32RegisterA(t, tf32, lim)
	for _, tc := range []struct {
		p   problem.Problem
		cfg Config
	}{
		// The 3xtf32 NCHW flagship winner (examples/alexnet/convgen-cache.json).
		{x3, Config{"AGroup": 1, "Overlap": 0, "PredicatedStores": 0, "Producer": 1, "RegisterA": 1, "RoundInput": 1, "Stages": 3,
			"TileK": 48, "TileP": 8, "TileQ": 8, "TilesPerWarpgroup": 64, "VecStage": 0, "Warpgroups": 3}},
		// RegisterA with three fragment groups and register staging.
		{x3, Config{"AGroup": 3, "Overlap": 0, "PredicatedStores": 1, "Producer": 1, "RegisterA": 1, "RoundInput": 1, "Stages": 4,
			"TileK": 48, "TileP": 8, "TileQ": 8, "TilesPerWarpgroup": 16, "VecStage": 1, "Warpgroups": 2}},
		{tf32, tf32RA},
		// A from shared memory: the tf32 NHWC flagship winner, and Overlap.
		{flagship(t, problem.TF32, problem.NHWC), Config{"Overlap": 0, "PredicatedStores": 1, "Producer": 2, "RoundInput": 1, "Stages": 2,
			"TileK": 96, "TileP": 8, "TileQ": 8, "TilesPerWarpgroup": 48, "VecStage": 1, "Warpgroups": 2}},
		{tf32, Config{"Overlap": 1, "PredicatedStores": 1, "Producer": 1, "RoundInput": 1, "Stages": 2,
			"TileK": 96, "TileP": 8, "TileQ": 8, "TilesPerWarpgroup": 16, "VecStage": 0, "Warpgroups": 2}},
	} {
		k, err := (WGMMA{}).Render(tc.p, tc.cfg)
		if err != nil {
			t.Fatalf("%s: %v", tc.cfg, err)
		}
		res, err := lib.CompilePTX(k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90" + k.ArchSuffix})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.p.Precision, tc.cfg, err)
		}
		inFlight, wgmmas, arrives := 0, 0, 0 // line of a wgmma not yet waited for
		for i, line := range strings.Split(res.PTX, "\n") {
			switch {
			case strings.Contains(line, "wgmma.mma_async"):
				inFlight = i + 1
				wgmmas++
			case strings.Contains(line, "wgmma.wait_group.sync.aligned 0;"):
				inFlight = 0
			case strings.Contains(line, "bar.arrive"):
				arrives++
				if inFlight > 0 {
					t.Errorf("%s %s: PTX line %d %q: a buffer handed over with the wgmma of line %d in flight",
						tc.p.Precision, tc.cfg, i+1, strings.TrimSpace(line), inFlight)
				}
			}
		}
		if wgmmas == 0 || arrives == 0 {
			t.Errorf("%s %s: %d wgmma.mma_async and %d bar.arrive in the PTX", tc.p.Precision, tc.cfg, wgmmas, arrives)
		}
	}
}
