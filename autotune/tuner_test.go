//go:build !cuda

package autotune

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

func fakeWorkerArgv(t *testing.T) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"env", "CONVGEN_FAKE_WORKER=1", exe}
}

// TestTuneRecordsFailuresAndGoesOn runs the tuner against the fake worker:
// a crashing candidate is a fault, a silent one a timeout, a lazy one wrong,
// a broken one a compile failure, each worker death is followed by a fresh
// worker, and the fastest correct candidate wins.
func TestTuneRecordsFailuresAndGoesOn(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallFP32Problem(t)
	extra := []kernels.Kernel{
		plantedKernel("planted_crash", ""),
		plantedKernel("planted_hang", ""),
		plantedKernel("planted_lazy", ""),
		plantedKernel("planted_broken", "this is not CUDA;"),
		plantedKernel("planted_good_a", "out[0] = 1.0f;"),
		plantedKernel("planted_good_b", "out[0] = 2.0f;"),
	}
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t),
		Only: []string{"none/such"}, Extra: extra, Timeout: 2 * time.Second, Runs: 20, Seed: 5})
	if err == nil || res != nil {
		// Only names no candidate of the space: the run must refuse.
		t.Fatalf("tune with an unknown pinned ID: got %v, %v; want an error", res, err)
	}
	// Pin one real candidate so that the space part is non-empty.
	pin := firstKept(t, p)
	res, err = Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t),
		Only: []string{pin}, Extra: extra, Timeout: 2 * time.Second, Runs: 20, Seed: 5})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	want := map[string]Status{
		"planted/planted_crash": StatusFault, "planted/planted_hang": StatusTimeout,
		"planted/planted_lazy": StatusWrong, "planted/planted_broken": StatusCompile,
		"planted/planted_good_a": StatusOK, "planted/planted_good_b": StatusOK, pin: StatusOK,
	}
	checkStatuses(t, res.Trials, want)
	best := ""
	bestMS := 0.0
	for _, tr := range res.Trials {
		if _, ok := want[tr.ID]; ok && tr.Status == StatusOK {
			if tr.MedianMS <= 0 || tr.Runs < 20 {
				t.Errorf("%s: median %.3f over %d runs", tr.ID, tr.MedianMS, tr.Runs)
			}
			if best == "" || tr.MedianMS < bestMS {
				best, bestMS = tr.ID, tr.MedianMS
			}
		}
	}
	if res.Winner == nil || res.Winner.ID != best {
		t.Errorf("winner %v, want the fastest correct candidate %s", res.Winner, best)
	}
	if res.Device.Name != "Fake GPU" || len(res.CUBIN) == 0 {
		t.Errorf("device %q, winner cubin %d bytes", res.Device.Name, len(res.CUBIN))
	}
}

// TestTuneBudget: with more candidates than -trials, the tuner measures
// exactly the budget, skips the rest, and is deterministic for a seed.
func TestTuneBudget(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallTF32Problem(t)
	run := func() *Result {
		res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t),
			Trials: 5, Runs: 20, Seed: 11, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("tune: %v", err)
		}
		return res
	}
	a, b := run(), run()
	measured, skipped := 0, 0
	for _, tr := range a.Trials {
		switch tr.Status {
		case StatusOK:
			measured++
		case StatusSkipped:
			skipped++
		}
	}
	if measured != 5 || skipped == 0 {
		t.Errorf("measured %d (want 5), skipped %d (want > 0)", measured, skipped)
	}
	if a.Winner == nil || b.Winner == nil || a.Winner.ID != b.Winner.ID {
		t.Errorf("same seed, different winners: %v vs %v", a.Winner, b.Winner)
	}
}

// smallTF32Problem is a small tf32 NCHW problem with a few dozen candidates.
func smallTF32Problem(t *testing.T) problem.Problem {
	return smallProblem(t, "N=2,C=3,H=32,W=32,K=32,R=3,S=3,pad=1", problem.TF32)
}

// stuckCompiler wraps NVRTC so that sources naming planted_stuck never
// finish compiling (until the test ends).
func stuckCompiler(t *testing.T, lib *nvrtc.Library) func(string, nvrtc.Options) (*nvrtc.Result, error) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return func(src string, o nvrtc.Options) (*nvrtc.Result, error) {
		if strings.Contains(src, "planted_stuck") {
			<-release
		}
		return lib.Compile(src, o)
	}
}

// firstKept is the ID of the first candidate of p that passes the static checks.
func firstKept(t *testing.T, p problem.Problem) string {
	t.Helper()
	cands, err := kernels.Enumerate(p, kernels.DefaultLimits(80))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		if c.Rejected == "" {
			return c.ID()
		}
	}
	t.Fatalf("no candidate of %s passes the static checks", p)
	return ""
}

// TestTuneCompileTimeout: a candidate whose compile does not finish is
// recorded as a compile failure after CompileTimeout, and the others are
// still measured.
func TestTuneCompileTimeout(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallFP32Problem(t)
	pin := firstKept(t, p)
	extra := []kernels.Kernel{plantedKernel("planted_stuck", "out[0] = 1.0f;"), plantedKernel("planted_good", "out[0] = 2.0f;")}
	start := time.Now()
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t), Only: []string{pin}, Extra: extra,
		Timeout: 10 * time.Second, CompileTimeout: 2 * time.Second, Runs: 20, Seed: 3, compiler: stuckCompiler(t, lib)})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("tuning took %s with a 2 s compile timeout", d)
	}
	checkStatuses(t, res.Trials, map[string]Status{"planted/planted_stuck": StatusCompile, "planted/planted_good": StatusOK, pin: StatusOK})
	for _, tr := range res.Trials {
		if tr.ID == "planted/planted_stuck" && !strings.Contains(tr.Reason, "had not finished after 2s") {
			t.Errorf("stuck compile's reason %q does not say it timed out", tr.Reason)
		}
	}
}

// checkStatuses checks that each trial named in want is in trials with
// its status.
func checkStatuses(t *testing.T, trials []Trial, want map[string]Status) {
	t.Helper()
	seen := map[string]bool{}
	for _, tr := range trials {
		st, ok := want[tr.ID]
		if !ok {
			continue
		}
		seen[tr.ID] = true
		if tr.Status != st {
			t.Errorf("%s: status %s (%s), want %s", tr.ID, tr.Status, tr.Reason, st)
		}
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("trial %s missing from the result", id)
		}
	}
}

// TestTuneBudgetBoundsCompiles: the time budget also bounds the wait for
// compiles: a stuck compile (with no compile timeout to speak of) ends the
// run at the budget, leaving it unmeasured, and does not hold back the
// candidate compiled after it, which is measured once the stuck compile
// has run past compilePatience (a 25 s compile of one candidate had left
// a MobileNetV2 layer with one measured candidate at -time 8s).
func TestTuneBudgetBoundsCompiles(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallFP32Problem(t)
	pin := firstKept(t, p)
	extra := []kernels.Kernel{plantedKernel("planted_stuck", "out[0] = 1.0f;"), plantedKernel("planted_good", "out[0] = 2.0f;")}
	const budget = 8 * time.Second
	start := time.Now()
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t), Only: []string{pin}, Extra: extra,
		Time: budget, Timeout: 10 * time.Second, CompileTimeout: time.Hour, Runs: 20, Seed: 3, compiler: stuckCompiler(t, lib)})
	if d := time.Since(start); d > budget+15*time.Second {
		t.Fatalf("tuning took %s with a %s budget", d, budget)
	}
	if res == nil {
		t.Fatalf("tune: no result (%v)", err)
	}
	for _, tr := range res.Trials {
		switch tr.ID {
		case "planted/planted_stuck":
			if tr.Status != StatusSkipped {
				t.Errorf("%s: status %s (%s), want %s: the budget ran out waiting for the stuck compile", tr.ID, tr.Status, tr.Reason, StatusSkipped)
			}
		case "planted/planted_good":
			if tr.Status != StatusOK {
				t.Errorf("%s: status %s (%s), want %s: compiled behind the stuck compile, it is measured when its compile is done", tr.ID, tr.Status, tr.Reason, StatusOK)
			}
		case pin:
			if tr.Status != StatusOK || res.Winner == nil || res.Winner.Status != StatusOK {
				t.Errorf("%s: status %s (%s), winner %v; want it measured and a verified winner", tr.ID, tr.Status, tr.Reason, res.Winner)
			}
		}
	}
}

// TestTuneBudgetWaitsForAPass: a time budget that runs out before the
// first compile finishes does not end the search empty-handed: the tuner
// measures on until a candidate passes (the suite saw "no candidate passed
// verification" with every candidate skipped at -time 12s).
func TestTuneBudgetWaitsForAPass(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallFP32Problem(t)
	slow := func(src string, o nvrtc.Options) (*nvrtc.Result, error) {
		time.Sleep(1500 * time.Millisecond)
		return lib.Compile(src, o)
	}
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t), Trials: 3,
		Time: 200 * time.Millisecond, Timeout: 10 * time.Second, Runs: 20, Seed: 5, compiler: slow})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	if res.Winner == nil || res.Winner.Status != StatusOK {
		t.Fatalf("no winner after the budget ran out before the first compile: %+v", res.Winner)
	}
	measured := 0
	for _, tr := range res.Trials {
		if tr.Status != StatusSkipped && tr.Status != StatusRejected {
			measured++
		}
	}
	if measured == 0 || measured > 3 {
		t.Errorf("measured %d candidates, want at least 1 and at most the -trials 3", measured)
	}
}

// TestTuneBudgetEndsAfterTheFirstPass: once the budget has run out before
// the first pass, the search ends with that pass, not after waiting for the
// next compile (the budget's timer had fired, so only the check after that
// compile ended it).
func TestTuneBudgetEndsAfterTheFirstPass(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallFP32Problem(t)
	slow := func(src string, o nvrtc.Options) (*nvrtc.Result, error) {
		if strings.Contains(src, "planted_good") {
			time.Sleep(10 * time.Second) // far past what a busy machine's real compile of the pin takes
		} else {
			time.Sleep(400 * time.Millisecond) // the pinned candidate: past the 100 ms budget
		}
		return lib.Compile(src, o)
	}
	start := time.Now()
	// No trial limit: one batch, a pinned candidate and two planted ones
	// (all of which pass), compiled at once; the pinned one is first.
	extra := []kernels.Kernel{plantedKernel("planted_good_a", "out[0] = 1.0f;"), plantedKernel("planted_good_b", "out[0] = 2.0f;")}
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t), Jobs: 3,
		Only: []string{firstKept(t, p)}, Extra: extra, Time: 100 * time.Millisecond, Timeout: 10 * time.Second, Runs: 20, Seed: 5, compiler: slow})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	if res.Winner == nil || res.Winner.Status != StatusOK {
		t.Fatalf("no winner: %+v", res.Winner)
	}
	if d := time.Since(start); d > 7*time.Second {
		t.Errorf("the search took %v: it waited for a compile after the first pass, past the budget", d)
	}
}

// TestLimitsSM90a: the sm_90a families are offered only on an sm_90 device
// with NVRTC 12 or newer; the device's shared-memory limit and SM count
// replace the defaults.
func TestLimitsSM90a(t *testing.T) {
	h200 := gpu.Info{Arch: "sm_90", SMs: 132, SharedOptin: 232448}
	for _, tc := range []struct {
		info  gpu.Info
		nvrtc string
		want  bool
	}{
		{h200, "13.0", true},
		{h200, "12.4", true},
		{h200, "11.8", false},
		{h200, "", false},
		{gpu.Info{Arch: "sm_80", SMs: 108, SharedOptin: 166912}, "13.0", false},
		{gpu.Info{Arch: "sm_100", SMs: 148}, "13.0", false},
	} {
		lim := Limits(tc.info, tc.nvrtc)
		if lim.SM90a != tc.want {
			t.Errorf("Limits(%s, NVRTC %q).SM90a = %v, want %v", tc.info.Arch, tc.nvrtc, lim.SM90a, tc.want)
		}
		if lim.SMs != tc.info.SMs {
			t.Errorf("Limits(%s).SMs = %d, want %d", tc.info.Arch, lim.SMs, tc.info.SMs)
		}
		if tc.info.SharedOptin > 0 && lim.MaxSharedPerBlock != tc.info.SharedOptin {
			t.Errorf("Limits(%s).MaxSharedPerBlock = %d, want %d", tc.info.Arch, lim.MaxSharedPerBlock, tc.info.SharedOptin)
		}
	}
}

// TestPinsMustNameCandidates: a pinned ID that names no candidate, or a
// rejected one, fails the run with the ID (and the reason) in the error,
// even beside a valid pin; before, such pins were dropped silently.
func TestPinsMustNameCandidates(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallFP32Problem(t)
	cands, err := kernels.Enumerate(p, kernels.DefaultLimits(80))
	if err != nil {
		t.Fatal(err)
	}
	var good, rejected, soft kernels.Candidate
	for _, c := range cands {
		switch {
		case c.Rejected == "" && good.Family == "":
			good = c
		case c.Rejected != "" && !c.Rejection.Soft && rejected.Family == "":
			rejected = c
		case c.Rejection.Soft && soft.Family == "":
			soft = c
		}
	}
	if good.Family == "" || rejected.Family == "" || soft.Family == "" {
		t.Fatal("the space has no kept, no hard-rejected or no soft-rejected candidate")
	}
	for _, tc := range []struct {
		pins []string
		want string
	}{
		{[]string{good.ID(), "direct/TileK=8"}, `"direct/TileK=8" is no candidate`},
		{[]string{rejected.ID(), good.ID()}, rejected.Rejected},
	} {
		res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t),
			Only: tc.pins, Timeout: 2 * time.Second, Runs: 20, Seed: 5})
		if err == nil || res != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("pins %v: got %v, %v; want an error saying %q", tc.pins, res, err, tc.want)
		}
	}
	// A pin lifts a soft (pruning) rule: the candidate is measured.
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t),
		Only: []string{soft.ID()}, Timeout: 10 * time.Second, Runs: 20, Seed: 5})
	if err != nil {
		t.Fatalf("pin %s (soft: %s): %v", soft.ID(), soft.Rejected, err)
	}
	for _, tr := range res.Trials {
		if tr.ID == soft.ID() && (tr.Status == StatusRejected || tr.Status == StatusSkipped) {
			t.Errorf("pinned soft-rejected %s: status %s (%s), want it measured", tr.ID, tr.Status, tr.Reason)
		}
	}
}

// smallFP32Problem is a small strict-FP32 NCHW problem whose space is quick
// to enumerate, compile and measure.
func smallFP32Problem(t *testing.T) problem.Problem {
	return smallProblem(t, "N=2,C=3,H=32,W=32,K=16,R=3,S=3,pad=1", problem.FP32)
}

// smallProblem is shape's NCHW problem in prec.
func smallProblem(t *testing.T, shape string, prec problem.Precision) problem.Problem {
	t.Helper()
	s, err := problem.ParseShape(shape)
	if err != nil {
		t.Fatal(err)
	}
	return problem.Problem{Shape: s, Precision: prec, Layout: problem.NCHW}
}

// TestTuneFallback: the fallback is the fastest verified candidate that fits
// FallbackSharedLimit, even when a faster one that does not fit wins, and
// it comes as PTX for FallbackArch.
func TestTuneFallback(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallFP32Problem(t)
	big := plantedKernel("planted_big_58", "out[0] = 1.0f;") // the fake worker times it fastest
	big.SharedBytes = FallbackSharedLimit + 1024
	extra := []kernels.Kernel{big, plantedKernel("planted_small_a", "out[0] = 2.0f;"), plantedKernel("planted_small_b", "out[0] = 3.0f;")}
	pin := firstKept(t, p)
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t),
		Only: []string{pin}, Extra: extra, Timeout: 2 * time.Second, Runs: 20, Seed: 5})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	if res.Winner == nil || res.Winner.ID != "planted/planted_big_58" {
		t.Fatalf("winner %v, want planted/planted_big_58", res.Winner)
	}
	var want *Trial
	for i := range res.Trials {
		tr := &res.Trials[i]
		if tr.Status == StatusOK && tr.SharedBytes <= FallbackSharedLimit && (want == nil || tr.MedianMS < want.MedianMS) {
			want = tr
		}
	}
	if want == nil {
		t.Fatal("no candidate fits the fallback's shared memory")
	}
	fb := res.Fallback
	if fb == nil {
		t.Fatalf("no fallback: %s", res.FallbackNote)
	}
	if fb.Trial.ID != want.ID || fb.Arch != FallbackArch {
		t.Errorf("fallback %s for %s, want %s for %s", fb.Trial.ID, fb.Arch, want.ID, FallbackArch)
	}
	if !strings.Contains(fb.PTX, ".target sm_80") || !strings.Contains(fb.PTX, ".entry "+fb.Trial.kernel.Name) {
		t.Errorf("fallback PTX lacks .target sm_80 or the entry %s:\n%.300s", fb.Trial.kernel.Name, fb.PTX)
	}
}

// TestTuneBudgetHardDeadline: a search with nothing verified goes on past
// -time only up to its hard deadline, then ends with ErrBudget (here every
// compile outlasts it).
func TestTuneBudgetHardDeadline(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallFP32Problem(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stuck := func(src string, o nvrtc.Options) (*nvrtc.Result, error) {
		<-release
		return lib.Compile(src, o)
	}
	start := time.Now()
	_, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t), Trials: 3,
		Time: 200 * time.Millisecond, grace: 800 * time.Millisecond, CompileTimeout: time.Hour,
		Timeout: 10 * time.Second, Runs: 20, Seed: 5, compiler: stuck})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the search took %s with -time 200ms and 800ms of grace", d)
	}
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("error %v, want ErrBudget", err)
	}
}

// TestTuneFirst: Options.First is measured before the search (with
// -trials 1, the one candidate measured is the first named kept one;
// an ID that is no candidate is ignored).
func TestTuneFirst(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallTF32Problem(t)
	cands, err := kernels.Enumerate(p, kernels.DefaultLimits(80))
	if err != nil {
		t.Fatal(err)
	}
	last := ""
	for _, c := range cands {
		if c.Rejected == "" {
			last = c.ID()
		}
	}
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t), First: []string{"nosuch/X=1", last},
		Trials: 1, Runs: 20, Seed: 11, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	var measured []string
	for _, tr := range res.Trials {
		if tr.Status != StatusSkipped && tr.Status != StatusRejected {
			measured = append(measured, tr.ID)
		}
	}
	if len(measured) != 1 || measured[0] != last {
		t.Errorf("measured %v, want only the First candidate %s", measured, last)
	}
}

// TestTuneMeasuresInOrder: candidates are measured in the search's order
// while their compiles take less than compilePatience: a planted kernel
// compiling 1.5 s is measured before the one listed after it that
// compiles at once (the progress lines come in measuring order). Measuring
// in the order compiles finish had left fast-compiling FFMA kernels to
// eat the budget of ResNet-50's wgrad tunes.
func TestTuneMeasuresInOrder(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallFP32Problem(t)
	pin := firstKept(t, p)
	extra := []kernels.Kernel{plantedKernel("planted_slow", "out[0] = 1.0f;"), plantedKernel("planted_fast", "out[0] = 2.0f;")}
	slow := func(src string, o nvrtc.Options) (*nvrtc.Result, error) {
		if strings.Contains(src, "planted_slow") {
			time.Sleep(1500 * time.Millisecond)
		}
		return lib.Compile(src, o)
	}
	var progress bytes.Buffer
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t), Only: []string{pin}, Extra: extra,
		Trials: 0, Timeout: 10 * time.Second, Runs: 20, Seed: 3, Jobs: 3, compiler: slow, Progress: &progress})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	checkStatuses(t, res.Trials, map[string]Status{pin: StatusOK, "planted/planted_slow": StatusOK, "planted/planted_fast": StatusOK})
	wantMeasuredBefore(t, progress.String(), "planted_slow", "planted_fast")
}

// TestTuneCutoff: once a candidate has passed, one whose first runs are all
// over cutoffFactor times the best median stops after cutoffRuns timed runs
// (the worker ends them; the fake worker does as the real one), while the
// others get every run.
func TestTuneCutoff(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallFP32Problem(t)
	pin := firstKept(t, p)
	extra := []kernels.Kernel{plantedKernel("planted_sluggish", "out[0] = 1.0f;")}
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t), Only: []string{pin}, Extra: extra,
		Trials: 0, Timeout: 10 * time.Second, Runs: 20, Seed: 3, Jobs: 1})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	for _, tr := range res.Trials {
		switch tr.ID {
		case pin:
			if tr.Status != StatusOK || tr.Runs < 20 {
				t.Errorf("%s: %s with %d runs, want ok with 20 or more", tr.ID, tr.Status, tr.Runs)
			}
		case "planted/planted_sluggish":
			if tr.Status != StatusOK || tr.Runs != cutoffRuns {
				t.Errorf("%s: %s with %d runs, want ok with the cutoff's %d", tr.ID, tr.Status, tr.Runs, cutoffRuns)
			}
		}
	}
}

// TestTunePatienceFromTheHead: the patience for a slow compile at the head
// of the order runs from when the head was first waited for, however many
// compiles behind it finish meanwhile: with a 500 ms patience, a 3 s head
// compile and 24 compiles of 100 ms finishing one after another behind it
// (for longer than the head takes), those are measured before the head (a
// timer restarted at every finished compile never fired).
func TestTunePatienceFromTheHead(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallFP32Problem(t)
	pin := firstKept(t, p)
	extra := []kernels.Kernel{plantedKernel("planted_slow", "out[0] = 1.0f;")}
	for i := range 24 {
		extra = append(extra, plantedKernel(fmt.Sprintf("planted_quick%d", i), fmt.Sprintf("out[0] = %d.0f;", i+2)))
	}
	compile := func(src string, o nvrtc.Options) (*nvrtc.Result, error) {
		switch {
		case strings.Contains(src, "planted_slow"):
			time.Sleep(3 * time.Second)
		case strings.Contains(src, "planted_quick"):
			time.Sleep(100 * time.Millisecond)
		}
		return lib.Compile(src, o)
	}
	var progress bytes.Buffer
	_, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t), Only: []string{pin}, Extra: extra,
		Trials: 0, Timeout: 10 * time.Second, Runs: 20, Seed: 3, Jobs: 2, compiler: compile, patience: 500 * time.Millisecond, Progress: &progress})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	wantMeasuredBefore(t, progress.String(), "planted_quick", "planted_slow")
}

// TestTuneBudgetCutoff: with a time budget, a candidate whose runs are all
// slower than budgetCutoffMS stops after cutoffRuns timed runs even when it
// is measured first (no best yet), so that the fast candidate after it wins
// with every run.
func TestTuneBudgetCutoff(t *testing.T) {
	lib := nvrtctest.Open(t)
	p := smallFP32Problem(t)
	pin := firstKept(t, p)
	sluggish := "planted/planted_sluggish"
	extra := []kernels.Kernel{plantedKernel("planted_sluggish", "out[0] = 1.0f;")}
	// 10 s over 8·20 runs: runs over 62.5 ms are cut; the fake worker's
	// sluggish kernel reports 1000 ms, the others 1–11 ms. (A budget of 2
	// s left the pin short of its runs when the machine was busy.)
	var progress bytes.Buffer
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t), Only: []string{pin}, Extra: extra,
		First: []string{sluggish}, Trials: 0, Time: 10 * time.Second, Timeout: 10 * time.Second, Runs: 20, Seed: 3, Jobs: 1, Progress: &progress})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	wantMeasuredBefore(t, progress.String(), sluggish, pin)
	seen := false
	for _, tr := range res.Trials {
		if tr.ID == sluggish {
			seen = true
			if tr.Status != StatusOK || tr.Runs != cutoffRuns {
				t.Errorf("%s measured first: %s with %d runs, want ok with the cutoff's %d", tr.ID, tr.Status, tr.Runs, cutoffRuns)
			}
		}
	}
	if !seen {
		t.Errorf("%s was not measured", sluggish)
	}
	if res.Winner == nil || res.Winner.ID != pin || res.Winner.Runs < 20 {
		t.Errorf("winner %v, want %s with every run", res.Winner, pin)
	}
}

// wantMeasuredBefore checks that the tuner's progress output names first
// (its first occurrence) before second: the one was measured before the
// other.
func wantMeasuredBefore(t *testing.T, progress, first, second string) {
	t.Helper()
	if a, b := strings.Index(progress, first), strings.Index(progress, second); a < 0 || b < 0 || a > b {
		t.Errorf("%s not measured before %s (or either missing) in the progress:\n%s", first, second, progress)
	}
}

// TestLimitsClusterSMs: a 132-SM GPU keeps the H100's measured 120 SMs
// for clusters of 4 or more (DefaultLimits); a GPU of another SM count has
// them unknown (0: read as all its SMs), so that its waves are not
// counted by the H100's grouping.
func TestLimitsClusterSMs(t *testing.T) {
	for _, c := range []struct {
		sms, want int
	}{{132, 120}, {114, 0}, {108, 0}} {
		lim := Limits(gpu.Info{Arch: "sm_90", SMs: c.sms, SharedOptin: 232448}, "13.0")
		if lim.ClusterSMs != c.want {
			t.Errorf("Limits(%d SMs).ClusterSMs = %d, want %d", c.sms, lim.ClusterSMs, c.want)
		}
		want := c.sms / 8 * 8 // whole clusters of 8 on every SM
		if c.want > 0 {
			want = c.want
		}
		if got := lim.BlockSlots(8, 1); got != want {
			t.Errorf("Limits(%d SMs).BlockSlots(8, 1) = %d, want %d", c.sms, got, want)
		}
	}
}
