package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/problem"
)

// kinds are the kinds of failure, each matched by at most one error.
var kinds = []error{ErrInvalid, ErrNoRecord, ErrUnsupported, ErrNoCandidate}

// kindOf returns the kind err matches, failing the test when it matches
// several; nil for none.
func kindOf(t *testing.T, err error) error {
	t.Helper()
	var got []error
	for _, k := range kinds {
		if errors.Is(err, k) {
			got = append(got, k)
		}
	}
	if len(got) > 1 {
		t.Errorf("%v matches %v: want one kind at most", err, got)
	}
	if len(got) == 0 {
		return nil
	}
	return got[0]
}

// TestTuneError: a search whose every candidate was rejected statically
// is unsupported; one that measured candidates and kept none found no
// candidate; an error before any search keeps its own kind (none).
func TestTuneError(t *testing.T) {
	failed := errors.New("no candidate passed verification (2 rejected)")
	trials := func(s ...autotune.Status) *autotune.Result {
		res := &autotune.Result{}
		for _, st := range s {
			res.Trials = append(res.Trials, autotune.Trial{Status: st})
		}
		return res
	}
	tests := []struct {
		name string
		res  *autotune.Result
		want error
	}{
		{"no search", nil, nil},
		{"every candidate rejected", trials(autotune.StatusRejected, autotune.StatusSkipped), ErrUnsupported},
		{"one wrong", trials(autotune.StatusRejected, autotune.StatusWrong), ErrNoCandidate},
		{"compile failures", trials(autotune.StatusCompile, autotune.StatusCompile), ErrNoCandidate},
		{"finalists failed", trials(autotune.StatusOK, autotune.StatusFault), ErrNoCandidate},
	}
	for _, tt := range tests {
		err := tuneError(tt.res, failed)
		if got := kindOf(t, err); got != tt.want {
			t.Errorf("%s: kind %v, want %v", tt.name, got, tt.want)
		}
		if !errors.Is(err, failed) || err.Error() != "tune: "+failed.Error() {
			t.Errorf("%s: error %q does not wrap the tuner's", tt.name, err)
		}
	}
	// The budget ran out with every candidate unmeasured: no candidate
	// passed (exit 5), not "no kernel serves" (exit 4).
	budget := fmt.Errorf("%w (-time 12s)", autotune.ErrBudget)
	if err := tuneError(trials(autotune.StatusRejected, autotune.StatusSkipped), budget); kindOf(t, err) != ErrNoCandidate || !errors.Is(err, autotune.ErrBudget) {
		t.Errorf("budget ran out: %v, kind %v, want ErrNoCandidate", err, kindOf(t, err))
	}
	interrupted := tuneError(nil, context.Canceled)
	if !errors.Is(interrupted, context.Canceled) || kindOf(t, interrupted) != nil {
		t.Errorf("an interrupted search: %v", interrupted)
	}
}

// TestServed: a problem no family serves is ErrUnsupported, with the
// families' reasons; the flagship is served.
func TestServed(t *testing.T) {
	if err := Served(flagshipProblem(t)); err != nil {
		t.Errorf("the flagship: %v", err)
	}
	p := flagshipProblem(t)
	p.Precision = problem.Precision("fp64")
	err := Served(p)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("fp64: %v, want ErrUnsupported saying it is not supported", err)
	}
	r := testRequest(t, filepath.Join(t.TempDir(), "x"), filepath.Join(t.TempDir(), "c.json"))
	r.Problem = p
	if _, err := Run(context.Background(), r); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Run of fp64: %v, want ErrUnsupported", err)
	}
}

// TestRunKinds: Run's failures without a GPU carry their kind, with the
// messages of before; a replay says what it did.
func TestRunKinds(t *testing.T) {
	needNoGPU(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "alexnet")

	// No record: ErrNoRecord, and still gpu.ErrNoCUDA's message.
	_, err := Run(context.Background(), testRequest(t, out, filepath.Join(dir, "none.json")))
	if kindOf(t, err) != ErrNoRecord || !errors.Is(err, gpu.ErrNoCUDA) || !strings.HasPrefix(err.Error(), gpu.ErrNoCUDA.Error()+"; no record in ") {
		t.Errorf("no record: %v, want ErrNoRecord wrapping gpu.ErrNoCUDA", err)
	}

	// Two device models: ErrInvalid until Device picks one.
	cache := filepath.Join(dir, "cache.json")
	putRecords(t, cache, fixture(t, h200, 132), fixture(t, "NVIDIA H100 80GB HBM3", 132))
	_, err = Run(context.Background(), testRequest(t, out, cache))
	if kindOf(t, err) != ErrInvalid || !strings.Contains(err.Error(), "pick one with -device") {
		t.Errorf("two devices: %v, want ErrInvalid", err)
	}
	r := testRequest(t, out, cache)
	r.Device = h200
	res, err := Run(context.Background(), r)
	if err != nil || res.Outcome != Replayed || res.Record.Key.Device != h200 || !slices.Contains(res.Files, "doc.go") {
		t.Errorf("replay with Device: %v, %+v", err, res)
	}

	// A corrupt cache: a failure of no kind.
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), testRequest(t, out, bad)); err == nil || kindOf(t, err) != nil {
		t.Errorf("corrupt cache: %v, want an error of no kind", err)
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{Replayed: "replayed", Reused: "reused", Tuned: "tuned", Pinned: "pinned", Untuned: "untuned", 0: "Outcome(0)"} {
		if got := o.String(); got != want {
			t.Errorf("Outcome %d = %q, want %q", int(o), got, want)
		}
	}
}
