package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/tunecache"
)

// fusedFixture is fixture's record tuned for the flagship with chain: the
// key names the chain and the kernel hash is the chained kernel's.
func fusedFixture(t *testing.T, chain epilogue.Chain) tunecache.Record {
	t.Helper()
	rec := fixture(t, h200, 132)
	p := flagshipProblem(t)
	p.Epilogue = chain
	k, err := kernels.RenderCandidate(p, kernels.Candidate{Family: rec.Winner.Family, Config: rec.Winner.Config})
	if err != nil {
		t.Fatal(err)
	}
	rec.Key.Epilogue, rec.KernelSHA256, rec.Kernel, rec.Launch = chain.Key(), kernels.Hash(k), k.Name, k.Launch
	return rec
}

// TestReplayEpilogue: a record tuned with an epilogue chain serves only a
// request with that chain, and a record without one only a request without
// one; the replayed package of a chain documents it.
func TestReplayEpilogue(t *testing.T) {
	needNoGPU(t)
	chain, err := epilogue.Parse("scale_shift,relu")
	if err != nil {
		t.Fatal(err)
	}
	other, err := epilogue.Parse("relu")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		record tunecache.Record
		want   epilogue.Chain // the request's chain
		replay bool
	}{
		{"plain record, plain request", fixture(t, h200, 132), nil, true},
		{"plain record, chain request", fixture(t, h200, 132), chain, false},
		{"chain record, plain request", fusedFixture(t, chain), nil, false},
		{"chain record, chain request", fusedFixture(t, chain), chain, true},
		{"chain record, other chain", fusedFixture(t, chain), other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cache := filepath.Join(dir, "cache.json")
			putRecords(t, cache, tc.record)
			r := testRequest(t, filepath.Join(dir, "alexnet"), cache)
			r.Problem.Epilogue = tc.want
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
			doc, err := os.ReadFile(filepath.Join(dir, "alexnet", "doc.go"))
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(doc), "ForwardEpilogue"); has != (len(tc.want) > 0) {
				t.Errorf("doc.go mentions ForwardEpilogue: %v, want %v", has, len(tc.want) > 0)
			}
		})
	}
}
