package pipeline

import (
	"context"
	"errors"
	"os"
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

// TestUntunedGradient: without a GPU or a record, -untuned writes a
// gradient's package from its own family's default configuration: a
// package whose kernel is the op's (BackwardData or BackwardFilter) and
// whose reports name the op.
func TestUntunedGradient(t *testing.T) {
	needNoGPU(t)
	for _, op := range []problem.Op{problem.OpDgrad, problem.OpWgrad} {
		dir := t.TempDir()
		r := testRequest(t, filepath.Join(dir, "out"), filepath.Join(dir, "cache.json"))
		s, err := problem.ParseShape("N=2,C=6,H=15,W=13,K=8,R=3,S=3,stride=2,pad=1,groups=2")
		if err != nil {
			t.Fatal(err)
		}
		r.Problem = problem.Problem{Shape: s, Precision: problem.FP16, Layout: problem.NHWC, Op: op}
		r.Pkg, r.Untuned = "grad", true
		res, err := Run(context.Background(), r)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if res.Outcome != Untuned {
			t.Errorf("%s: outcome %v", op, res.Outcome)
		}
		kernel, err := os.ReadFile(filepath.Join(r.Out, "kernel.go"))
		if err != nil {
			t.Fatal(err)
		}
		report, err := os.ReadFile(filepath.Join(r.Out, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		method := map[problem.Op]string{problem.OpDgrad: "BackwardData", problem.OpWgrad: "BackwardFilter"}[op]
		if !strings.Contains(string(kernel), "convgen_"+op.String()+"_") || !strings.Contains(string(kernel), method) ||
			!strings.Contains(string(report), `"op": "`+op.String()+`"`) {
			t.Errorf("%s: the package's kernel.go or report.json does not show the op", op)
		}
	}
}
