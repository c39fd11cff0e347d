package pipeline

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convgen/convgen/tunecache"
)

// TestReplayRefusesRecordNotMatchingItsKernel: a record whose kernel hash
// is current but whose kernel name, launch geometry or architecture suffix
// (the fields the package is written from) differ from the rendered
// kernel's is not replayed, for the package would launch the CUBIN wrongly;
// the record as tuned is.
func TestReplayRefusesRecordNotMatchingItsKernel(t *testing.T) {
	needNoGPU(t)
	tests := []struct {
		name string
		edit func(*tunecache.Record)
		want string // in the error; "" for a replay
	}{
		{"as tuned", func(*tunecache.Record) {}, ""},
		{"grid", func(r *tunecache.Record) { r.Grid[0]++ }, "launch"},
		{"shared bytes", func(r *tunecache.Record) { r.SharedBytes += 16 }, "launch"},
		{"kernel name", func(r *tunecache.Record) { r.Kernel = "other_kernel" }, `recorded "other_kernel"`},
		{"arch suffix", func(r *tunecache.Record) { r.Arch = "sm_90a" }, "architecture suffix"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rec := fixture(t, h200, 132)
			tc.edit(&rec)
			cache := filepath.Join(dir, "cache.json")
			putRecords(t, cache, rec)
			res, err := Run(context.Background(), testRequest(t, filepath.Join(dir, "alexnet"), cache))
			if tc.want == "" {
				if err != nil || res.Outcome != Replayed {
					t.Fatalf("Run: %v, outcome %v: want a replay", err, res.Outcome)
				}
				return
			}
			if !errors.Is(err, ErrNoRecord) {
				t.Fatalf("Run: %v: want ErrNoRecord (a record inconsistent with its kernel is not current)", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: %v: does not say %q", err, tc.want)
			}
		})
	}
}
