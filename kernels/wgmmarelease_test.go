package kernels

import (
	"fmt"
	"regexp"
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
// been used, and thus performed, by then too.
//
// With RegisterA it also checks how the buffer goes back (issue 22:
// compute-sanitizer's racecheck reported 109,548 WAR hazards, the
// consumers' ld.shared against the producer's refill, on the 3xtf32
// flagship winners, before and after the bar.arrive moved past the last
// wgmma group; the bar.arrive / bar.sync hand-over is ordered in the PTX
// memory model, but racecheck does not see it): through the buffer's
// mbarrier, which racecheck tracks thread by thread (see
// checkRegisterAHandover).
func TestWGMMABufferRelease(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
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
		// The 3xtf32 NCHW flagship winner re-tuned on an H100 (5192d29),
		// then the one before it (examples/alexnet/convgen-cache.json).
		{x3, Config{"AGroup": 2, "Overlap": 0, "PredicatedStores": 0, "Producer": 1, "RegisterA": 1, "RoundInput": 1, "Stages": 2,
			"TileK": 48, "TileP": 8, "TileQ": 8, "TilesPerWarpgroup": 96, "VecStage": 0, "Warpgroups": 2}},
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
		res, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90" + k.ArchSuffix})
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
			case strings.Contains(line, "bar.arrive"), strings.Contains(line, "mbarrier.arrive"):
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
		if tc.cfg["RegisterA"] == 1 {
			for _, e := range checkRegisterAHandover(res.PTX) {
				t.Errorf("%s %s: %s", tc.p.Precision, tc.cfg, e)
			}
		}
	}
}

// checkRegisterAHandover checks, in the PTX of a RegisterA kernel, that a
// patch buffer goes back to the producers through an mbarrier, not a named
// barrier, and returns what it finds amiss. Walking the PTX in order, with
// "sync" for any barrier instruction (bar, barrier, mbarrier):
//   - the first sync after each wgmma.wait_group 0 (a consumer done with a
//     tile) is an mbarrier.arrive: each consumer thread releases its own
//     ld.shared loads of the buffer;
//   - the first access to shared memory after a bar.sync with a thread
//     count (a named barrier's wait, as opposed to __syncthreads) is never
//     a write: only a consumer waits on one (the "full" hand-over, then
//     it loads the patch), no producer waits on one before refilling a
//     buffer;
//   - each mbarrier.try_wait.parity (a producer waiting for the consumer)
//     is followed by the refill, shared-memory writes, before the next
//     sync.
//
// Racecheck reads the mbarrier hand-over as the PTX memory model does
// (mbarrier.arrive releases, a try_wait that sees the phase complete
// acquires): compute-sanitizer added racecheck support for cuda::barrier
// (mbarrier) in 2021.2. It reported the named-barrier hand-over (a
// consumer's bar.arrive, the producer's bar.sync) as WAR hazards.
func checkRegisterAHandover(ptx string) []string {
	var errs []string
	counted := regexp.MustCompile(`^\s*bar(rier)?(\.cta)?\.sync(\.aligned)?\s+[^,;]+,\s*[^;]+;`)
	isSync := func(l string) bool {
		return strings.Contains(l, "bar.") || strings.Contains(l, "barrier.")
	}
	isWrite := func(l string) bool {
		return strings.Contains(l, "st.shared") || (strings.Contains(l, "cp.async.") && strings.Contains(l, ".shared"))
	}
	const (
		none = iota
		afterWait0
		afterNamed
		afterTryWait
	)
	state, from, inits, arrives, waits := none, 0, 0, 0, 0
	for i, line := range strings.Split(ptx, "\n") {
		l := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(l, "mbarrier.init"):
			inits++
		case strings.HasPrefix(l, "mbarrier.arrive"):
			arrives++
		case strings.HasPrefix(l, "mbarrier.try_wait"):
			waits++
		}
		switch state {
		case afterWait0:
			if isSync(l) {
				if !strings.HasPrefix(l, "mbarrier.arrive") {
					errs = append(errs, fmt.Sprintf("PTX line %d %q: a consumer done with a tile (wgmma.wait_group 0, line %d) hands its buffer back without mbarrier.arrive", i+1, l, from))
				}
				state = none
			}
		case afterNamed:
			if isWrite(l) {
				errs = append(errs, fmt.Sprintf("PTX line %d %q: a shared-memory write after the named barrier of line %d (a producer refilling a buffer behind a named barrier)", i+1, l, from))
				state = none
			} else if strings.Contains(l, "ld.shared") || isSync(l) {
				state = none
			}
		case afterTryWait:
			if isWrite(l) {
				state = none
			} else if isSync(l) {
				errs = append(errs, fmt.Sprintf("PTX line %d %q: the mbarrier.try_wait.parity of line %d guards no shared-memory write", i+1, l, from))
				state = none
			}
		}
		switch {
		case strings.Contains(l, "wgmma.wait_group.sync.aligned 0;"):
			state, from = afterWait0, i+1
		case counted.MatchString(l):
			state, from = afterNamed, i+1
		case strings.HasPrefix(l, "mbarrier.try_wait"):
			state, from = afterTryWait, i+1
		}
	}
	if inits == 0 || arrives == 0 || waits == 0 {
		errs = append(errs, fmt.Sprintf("%d mbarrier.init, %d mbarrier.arrive and %d mbarrier.try_wait in the PTX", inits, arrives, waits))
	}
	return errs
}
