package pipeline

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

// TestOpRecords: a forward record never serves a gradient request (nor
// shows among its near misses), and a gradient with an epilogue chain or
// with -torch is an invalid request, refused before anything is read or
// written.
func TestOpRecords(t *testing.T) {
	needNoGPU(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.json")
	putRecords(t, cache, fixture(t, "NVIDIA H200", 132))
	for _, op := range []problem.Op{problem.OpDgrad, problem.OpWgrad} {
		r := testRequest(t, filepath.Join(dir, "out"), cache)
		r.Problem.Op = op
		_, err := Run(context.Background(), r)
		if !errors.Is(err, ErrNoRecord) || strings.Contains(err.Error(), "H200") {
			t.Errorf("%s against a forward record: %v, want ErrNoRecord naming no record", op, err)
		}
		chain, perr := epilogue.Parse("relu")
		if perr != nil {
			t.Fatal(perr)
		}
		r.Problem.Epilogue = chain
		if _, err := Run(context.Background(), r); !errors.Is(err, ErrInvalid) || !errors.Is(err, problem.ErrEpilogueOp) {
			t.Errorf("%s with a chain: %v, want ErrInvalid", op, err)
		}
		if err := CompileOnly(context.Background(), CompileRequest{Problem: r.Problem}); !errors.Is(err, ErrInvalid) {
			t.Errorf("-compile-only %s with a chain: %v, want ErrInvalid", op, err)
		}
		r.Problem.Epilogue = nil
		r.Torch = filepath.Join(dir, "conv_torch")
		if _, err := Run(context.Background(), r); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s with -torch: %v, want ErrInvalid", op, err)
		}
	}
}
