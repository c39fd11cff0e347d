package pipeline

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/autotune"
)

// TestReplayNotesOlderSearch: replaying a record that an older search
// tuned (no revision: revision 1) notes that -retune may find a faster
// kernel, and still writes the package; a record of the current search
// replays without the note.
func TestReplayNotesOlderSearch(t *testing.T) {
	needNoGPU(t)
	dir := t.TempDir()
	out, cache := filepath.Join(dir, "alexnet"), filepath.Join(dir, "cache.json")
	for _, tc := range []struct {
		revision int
		note     bool
	}{{0, true}, {autotune.SearchRevision - 1, true}, {autotune.SearchRevision, false}} {
		rec := fixture(t, h200, 132)
		rec.Summary.SearchRevision = tc.revision
		putRecords(t, cache, rec)
		var log strings.Builder
		r := testRequest(t, out, cache)
		r.Log = &log
		res, err := Run(context.Background(), r)
		if err != nil || res.Outcome != Replayed {
			t.Fatalf("revision %d: replay %v, %v", tc.revision, res.Outcome, err)
		}
		got := strings.Contains(log.String(), "tuned by an older search") && strings.Contains(log.String(), "-retune")
		if got != tc.note {
			t.Errorf("record of search revision %d: note %v, want %v; log:\n%s", tc.revision, got, tc.note, log.String())
		}
	}
}

// TestNewRecordKeepsSearchRevision: a record made from a search carries
// the search's revision, which later replays compare.
func TestNewRecordKeepsSearchRevision(t *testing.T) {
	w := autotune.Trial{ID: "direct/X=1", Family: "direct", Config: map[string]int{"X": 1}, Status: autotune.StatusOK, MedianMS: 1}
	res := &autotune.Result{Trials: []autotune.Trial{w}, Winner: &w, Arch: "sm_90"}
	rec := newRecord(res, baseKey(testRequest(t, t.TempDir(), "")), "convgen", time.Now(), time.Second)
	if rec.Summary.SearchRevision != autotune.SearchRevision {
		t.Errorf("record's search revision %d, want %d", rec.Summary.SearchRevision, autotune.SearchRevision)
	}
}
