package tunecache

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestOpKey: records of different ops never serve each other's queries and
// live side by side in one file (neither supersedes another); a forward
// record is written without the "op" field, as before ops existed, so its
// checksum and bytes stay what they were.
func TestOpKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	fwd := testRecord(shapeOf(1), "NVIDIA H200", 0.5)
	mustPut(t, path, fwd)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(before, []byte(`"op"`)) {
		t.Errorf("a forward record writes an op field:\n%s", before)
	}
	dgrad := testRecord(shapeOf(1), "NVIDIA H200", 0.6)
	dgrad.Key.Op = "dgrad"
	wgrad := testRecord(shapeOf(1), "NVIDIA H200", 0.7)
	wgrad.Key.Op = "wgrad"
	for _, pair := range [][2]Record{{fwd, dgrad}, {fwd, wgrad}, {dgrad, wgrad}} {
		if pair[0].Key.Supersedes(pair[1].Key) || pair[1].Key.Supersedes(pair[0].Key) {
			t.Errorf("ops %q and %q supersede each other", pair[0].Key.Op, pair[1].Key.Op)
		}
	}
	mustPut(t, path, dgrad)
	mustPut(t, path, wgrad)
	c := mustLoad(t, path)
	if n := len(c.Records()); n != 3 {
		t.Fatalf("%d records, want one per op", n)
	}
	for _, want := range []Record{fwd, dgrad, wgrad} {
		q := Query{Shape: fwd.Key.Shape, Precision: fwd.Key.Precision, Layout: fwd.Key.Layout, Op: want.Key.Op}
		got := c.Match(q)
		if len(got) != 1 || got[0].Key != want.Key {
			t.Errorf("op %q: matches %d records, want only its own", want.Key.Op, len(got))
		}
	}
	q := Query{Shape: fwd.Key.Shape, Precision: fwd.Key.Precision, Layout: fwd.Key.Layout, Op: "dgrad"}
	if ms := q.Mismatches(fwd); len(ms) != 1 || ms[0].Field != FieldOp {
		t.Errorf("dgrad query vs forward record: mismatches %v, want the op alone", ms)
	}
	for _, bad := range []string{"fprop", "DGRAD", "tgrad"} {
		r := cloneRecord(dgrad)
		r.Key.Op = bad
		if err := r.Validate(); err == nil {
			t.Errorf("op %q: Validate accepts it", bad)
		}
	}
	r := cloneRecord(wgrad)
	r.Key.Epilogue = "relu"
	if err := r.Validate(); err == nil {
		t.Error("a wgrad record with an epilogue chain: Validate accepts it")
	}
}
