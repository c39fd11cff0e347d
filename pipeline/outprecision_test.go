package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// outFixture is fixture's record re-pointed at the flagship stored as out:
// its winner generic's first kept candidate rendered for that problem (the
// fixture's direct winner stores only the input's type), no fallback, and
// the key naming the output precision.
func outFixture(t *testing.T, out problem.Storage) tunecache.Record {
	t.Helper()
	rec := fixture(t, h200, 132)
	p := flagshipProblem(t)
	p.OutPrecision = out
	var cand kernels.Candidate
	for _, c := range (kernels.Generic{}).Space(p, kernels.DefaultLimits(90)) {
		if c.Rejected == "" {
			cand = c
			break
		}
	}
	k, err := kernels.RenderCandidate(p, cand)
	if err != nil {
		t.Fatal(err)
	}
	rec.Winner.Family, rec.Winner.Config = cand.Family, cand.Config
	rec.Fallback = nil
	rec.Key.OutPrecision, rec.KernelSHA256, rec.Kernel, rec.Launch = string(out), kernels.Hash(k), k.Name, k.Launch
	return rec
}

// TestReplayOutPrecision: a record tuned with an output precision serves
// only a request for that output type (and the plain record only a plain
// request, or one naming the input's own type); the replayed package and
// report name the output type; a gradient or -torch with an output
// precision is an invalid request.
func TestReplayOutPrecision(t *testing.T) {
	needNoGPU(t)
	for _, tc := range []struct {
		name   string
		record tunecache.Record
		want   problem.Storage // the request's output type
		replay bool
	}{
		{"plain record, plain request", fixture(t, h200, 132), "", true},
		{"plain record, input's own type", fixture(t, h200, 132), problem.StorageFP32, true},
		{"plain record, bf16 request", fixture(t, h200, 132), problem.StorageBF16, false},
		{"bf16 record, plain request", outFixture(t, problem.StorageBF16), "", false},
		{"bf16 record, bf16 request", outFixture(t, problem.StorageBF16), problem.StorageBF16, true},
		{"bf16 record, fp16 request", outFixture(t, problem.StorageBF16), problem.StorageFP16, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cache := filepath.Join(dir, "cache.json")
			putRecords(t, cache, tc.record)
			r := testRequest(t, filepath.Join(dir, "alexnet"), cache)
			r.Problem.OutPrecision = tc.want
			res, err := Run(context.Background(), r)
			if !tc.replay {
				if !errors.Is(err, ErrNoRecord) {
					t.Fatalf("Run: %v, want ErrNoRecord", err)
				}
				return
			}
			if err != nil || res.Outcome != Replayed {
				t.Fatalf("Run: %v, outcome %v: want a replay", err, res.Outcome)
			}
			differs := r.Problem.OutDiffers()
			for file, want := range map[string]string{"shape.go": "OutputElementBytes", "report.json": `"out_precision": "bf16"`, "REPORT.md": "- output precision: bf16"} {
				data, err := os.ReadFile(filepath.Join(dir, "alexnet", file))
				if err != nil {
					t.Fatal(err)
				}
				if has := strings.Contains(string(data), want); has != differs {
					t.Errorf("%s has %q: %v, want %v", file, want, has, differs)
				}
			}
		})
	}
	dir := t.TempDir()
	for _, change := range []func(*Request){
		func(r *Request) { r.Problem.Op = problem.OpDgrad },
		func(r *Request) { r.Torch = filepath.Join(dir, "convtorch") },
	} {
		r := testRequest(t, filepath.Join(dir, "alexnet"), filepath.Join(dir, "cache.json"))
		r.Problem.OutPrecision = problem.StorageBF16
		change(&r)
		if _, err := Run(context.Background(), r); !errors.Is(err, ErrInvalid) {
			t.Errorf("Run(%s, torch %q): %v, want ErrInvalid", r.Problem, r.Torch, err)
		}
	}
}
