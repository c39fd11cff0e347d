//go:build cuda

package autotune

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// gpuSetup opens NVRTC and returns it with the argv that starts this test
// binary as a worker and the limits of the sm_90 GPU the tests run on
// (sm_90a families included when this NVRTC can target them).
func gpuSetup(t *testing.T) (*nvrtc.Library, []string, kernels.Limits) {
	t.Helper()
	lib, err := nvrtc.Open()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	lim := kernels.DefaultLimits(90)
	lim.SM90a = lib.SupportsArch("sm_90a")
	return lib, []string{"env", "CONVGEN_TEST_WORKER=1", exe}, lim
}

// eachProblem calls f with every problem of each shape in the precisions
// given (every precision when none) and both layouts.
func eachProblem(t *testing.T, shapes []string, precs []problem.Precision, f func(p problem.Problem)) {
	t.Helper()
	if len(precs) == 0 {
		precs = problem.Precisions
	}
	for _, text := range shapes {
		shape, err := problem.ParseShape(text)
		if err != nil {
			t.Fatal(err)
		}
		for _, prec := range precs {
			for _, lay := range problem.Layouts {
				f(problem.Problem{Shape: shape, Precision: prec, Layout: lay})
			}
		}
	}
}

// checkTrials reports every trial that failed (a status other than OK,
// rejected or skipped) or passed with an error over p's bound, and returns
// how many passed.
func checkTrials(t *testing.T, p problem.Problem, trials []Trial) (passed int) {
	t.Helper()
	bound := p.ErrorBound()
	for _, tr := range trials {
		switch tr.Status {
		case StatusOK:
			passed++
			if tr.RelError > bound || tr.SampleError > bound {
				t.Errorf("%s passed with error %.2e/%.2e over the bound %.0e", tr.ID, tr.RelError, tr.SampleError, bound)
			}
		case StatusRejected, StatusSkipped:
		default:
			t.Errorf("%s: %s: %s", tr.ID, tr.Status, tr.Reason)
		}
	}
	return passed
}

// tunePins tunes p over the pinned candidate IDs and the extra kernels
// alone (10 timed runs each, seed as given) and requires every one of them
// to pass the float64 checks within p's bound.
func tunePins(t *testing.T, lib *nvrtc.Library, worker []string, p problem.Problem, pins []string, extra []kernels.Kernel, seed uint64) *Result {
	t.Helper()
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: worker, Only: pins, Extra: extra,
		Trials: 0, Runs: 10, Seed: seed, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	if passed := checkTrials(t, p, res.Trials); passed != len(pins)+len(extra) {
		t.Errorf("%d of %d kernels passed", passed, len(pins)+len(extra))
	}
	return res
}

// tuneFamilyPinned tunes p through one family alone, pinned to three of its
// kept configurations (the first, middle and last): every pin must pass
// the float64 checks within p's bound and the winner must be the family's.
// It reports whether the family kept a candidate for p (false: nothing
// was tuned).
func tuneFamilyPinned(t *testing.T, lib *nvrtc.Library, worker []string, lim kernels.Limits, p problem.Problem, fam string) bool {
	t.Helper()
	kept := keptOf(t, p, lim, fam)
	if len(kept) == 0 {
		return false
	}
	pins := firstMiddleLast(kept)
	res, err := Tune(context.Background(), lib, Options{Problem: p,
		Worker: worker, Only: pins, Trials: 0, Runs: 10, Seed: 5, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	if passed := checkTrials(t, p, res.Trials); passed != len(pins) {
		t.Errorf("%d of %d pinned %s candidates passed", passed, len(pins), fam)
	}
	if res.Winner == nil || !strings.HasPrefix(res.Winner.ID, fam+"/") {
		t.Fatalf("winner %v, want a %s candidate", res.Winner, fam)
	}
	return true
}

// sm90aSetup is gpuSetup for the wgmmaigemm tests: it skips the test
// where the device or NVRTC cannot run sm_90a kernels.
func sm90aSetup(t *testing.T) (*nvrtc.Library, []string, kernels.Limits) {
	t.Helper()
	lib, worker, lim := gpuSetup(t)
	if !lim.SM90a {
		t.Skip("wgmmaigemm needs sm_90a (an sm_90 device and NVRTC 12 or newer)")
	}
	return lib, worker, lim
}

// firstMiddleLast is the IDs of kept's first, middle and last candidates
// (fewer where they coincide).
func firstMiddleLast(kept []kernels.Candidate) []string {
	pins := []string{kept[0].ID()}
	for _, c := range []kernels.Candidate{kept[len(kept)/2], kept[len(kept)-1]} {
		if c.ID() != pins[len(pins)-1] {
			pins = append(pins, c.ID())
		}
	}
	return pins
}

// tuneFoldedPins tunes p pinned to pins (which must all be folded, Fold=1
// or 2) and the extra kernels through tunePins, and logs each wgmmaigemm
// kernel's status, time and errors.
func tuneFoldedPins(t *testing.T, lib *nvrtc.Library, worker []string, p problem.Problem, pins []string, extra []kernels.Kernel, seed uint64) {
	t.Helper()
	for _, id := range pins {
		if !strings.Contains(id, "Fold=1") && !strings.Contains(id, "Fold=2") {
			t.Fatalf("kept candidate %s is not folded", id)
		}
	}
	res := tunePins(t, lib, worker, p, pins, extra, seed)
	for _, tr := range res.Trials {
		if tr.Family == "wgmmaigemm" && tr.Status != StatusRejected && tr.Status != StatusSkipped {
			t.Logf("%s: %s, %.4f ms, error %.2e (sampled %.2e)", tr.ID, tr.Status, tr.MedianMS, tr.RelError, tr.SampleError)
		}
	}
}

// checkPinnedOK checks that each of the n kernels named in want (family/name
// IDs, rendered by the test and passed as Options.Extra) was measured and
// passed its checks, and logs each one's time, error and resources.
func checkPinnedOK(t *testing.T, trials []Trial, want map[string]bool, n int) {
	t.Helper()
	seen := 0
	for _, tr := range trials {
		if !want[tr.ID] {
			continue
		}
		seen++
		if tr.Status != StatusOK {
			t.Errorf("%s %s: %s (%s), want ok", tr.ID, tr.Config.String(), tr.Status, tr.Reason)
			continue
		}
		t.Logf("%s: %.4f ms, error %.2e (sampled %.2e), %d registers, %d B spilled, %d B shared",
			tr.Config.String(), tr.MedianMS, tr.RelError, tr.SampleError, tr.Registers, tr.SpillStores, tr.SharedBytes)
	}
	if seen != n {
		t.Errorf("%d of the %d pinned kernels measured", seen, n)
	}
}

// keptOf returns family fam's candidates for p that no rule rejects, in
// enumeration order.
func keptOf(t *testing.T, p problem.Problem, lim kernels.Limits, fam string) []kernels.Candidate {
	t.Helper()
	cands, err := kernels.Enumerate(p, lim)
	if err != nil {
		t.Fatalf("enumerate: %v", err)
	}
	var kept []kernels.Candidate
	for _, c := range cands {
		if c.Family == fam && c.Rejected == "" {
			kept = append(kept, c)
		}
	}
	return kept
}
