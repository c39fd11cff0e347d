package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/convgen/convgen/pipeline"
	"github.com/convgen/convgen/problem"
)

// TestExitCode: each kind of failure has its exit status, also when
// wrapped (as -config wraps each package's error).
func TestExitCode(t *testing.T) {
	unsupported := pipeline.Served(problem.Problem{}) // a problem no family serves
	if unsupported == nil {
		t.Fatal("the zero problem is served")
	}
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, 0},
		{"other failure", errors.New("write package: permission denied"), 1},
		{"usage", usageError{errors.New("-shape is required")}, 2},
		{"invalid request", fmt.Errorf("x: %w", pipeline.ErrInvalid), 2},
		{"no record", fmt.Errorf("x: %w", pipeline.ErrNoRecord), 3},
		{"unsupported", unsupported, 4},
		{"no candidate", fmt.Errorf("tune: %w", pipeline.ErrNoCandidate), 5},
		{"interrupted", fmt.Errorf("tune: tuning interrupted after 3 candidates: %w", context.Canceled), 130},
	}
	for _, tt := range tests {
		for _, err := range []error{tt.err, wrapConfig(tt.err)} {
			if got := exitCode(err); got != tt.want {
				t.Errorf("%s: exitCode(%v) = %d, want %d", tt.name, err, got, tt.want)
			}
		}
	}
}

// wrapConfig wraps err as runConfig wraps a package's error.
func wrapConfig(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("-config c.json: packages[0] (conv): %w", err)
}

// TestExitNoRecordWithConfig: -config keeps a package's exit status (3:
// no record to replay) and names the package.
func TestExitNoRecordWithConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "convgen.json")
	if err := os.WriteFile(path, []byte(`{"packages": [{"shape": "`+flagship+`", "out": "conv"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runConvgen(t, "-config", path)
	if r.code != 3 {
		t.Errorf("exit code %d, want 3 (stderr %q)", r.code, r.stderr)
	}
	oneErrorLine(t, r, "packages[0] (conv)", "no record")
}
