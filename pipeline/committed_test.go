package pipeline

import (
	"path/filepath"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// TestCommittedRecordsCurrent: every record of the tuning caches committed
// in the repository (the benchmarks' and the examples') is current: its
// winner and fallback render today as they were tuned (currentKernels).
// A template change that alters a cached kernel's code (not only its
// comments) fails here, on the CPU, before a replay would: re-tune the
// records on a GPU or keep the old rendering.
func TestCommittedRecordsCurrent(t *testing.T) {
	paths, err := filepath.Glob("../bench/*cache*.json")
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob("../examples/*/convgen-cache.json")
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, examples...)
	if len(paths) < 4 {
		t.Fatalf("found the caches %v, want the suite's, the gradients', the epilogues' and the examples'", paths)
	}
	for _, path := range paths {
		c, err := tunecache.Load(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		stale := 0
		for _, rec := range c.Records() {
			p, err := problemOf(rec.Key)
			if err != nil {
				t.Errorf("%s: record %s: %v", path, rec.Key.Shape, err)
				continue
			}
			if err := currentKernels(p, rec); err != nil {
				stale++
				t.Errorf("%s: %s on %s (%s): %v", path, p, rec.Key.Device, rec.Winner.Family, err)
			}
		}
		t.Logf("%s: %d records, %d stale", path, len(c.Records()), stale)
	}
}

// problemOf is the problem a cache key was tuned for.
func problemOf(k tunecache.Key) (problem.Problem, error) {
	var p problem.Problem
	var err error
	if p.Shape, err = problem.ParseShape(k.Shape); err != nil {
		return p, err
	}
	if p.Precision, err = problem.ParsePrecision(k.Precision); err != nil {
		return p, err
	}
	if p.Layout, err = problem.ParseLayout(k.Layout); err != nil {
		return p, err
	}
	if k.Op != "" {
		if p.Op, err = problem.ParseOp(k.Op); err != nil {
			return p, err
		}
	}
	if k.Epilogue != "" {
		if p.Epilogue, err = epilogue.Parse(k.Epilogue); err != nil {
			return p, err
		}
	}
	if k.OutPrecision != "" {
		if p.OutPrecision, err = problem.ParseStorage(k.OutPrecision); err != nil {
			return p, err
		}
	}
	return p, nil
}
