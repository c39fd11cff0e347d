package tunecache

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestEpilogueKey: a record tuned with an epilogue chain never serves a
// query without one, nor the reverse; both live side by side in one file
// (neither supersedes the other); a record without a chain is written
// without the "epilogue" field, as before chains existed.
func TestEpilogueKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	plain := testRecord(shapeOf(1), "NVIDIA H200", 0.5)
	mustPut(t, path, plain)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(before, []byte(`"epilogue"`)) {
		t.Errorf("a record without a chain writes an epilogue field:\n%s", before)
	}
	fused := testRecord(shapeOf(1), "NVIDIA H200", 0.6)
	fused.Key.Epilogue = "scale_shift,relu"
	if plain.Key.Supersedes(fused.Key) || fused.Key.Supersedes(plain.Key) {
		t.Error("a chain's record and the plain one supersede each other")
	}
	mustPut(t, path, fused)
	c := mustLoad(t, path)
	if n := len(c.Records()); n != 2 {
		t.Fatalf("%d records, want the plain and the fused one", n)
	}
	for _, tc := range []struct {
		chain string
		want  *Record
	}{{"", &plain}, {"scale_shift,relu", &fused}, {"relu", nil}} {
		q := Query{Shape: plain.Key.Shape, Precision: plain.Key.Precision, Layout: plain.Key.Layout, Epilogue: tc.chain}
		got := c.Match(q)
		switch {
		case tc.want == nil && len(got) != 0:
			t.Errorf("chain %q: matches %d records, want none", tc.chain, len(got))
		case tc.want != nil && (len(got) != 1 || got[0].Key != tc.want.Key):
			t.Errorf("chain %q: matches %v, want only the record keyed %q", tc.chain, got, tc.want.Key.Epilogue)
		}
		if tc.want == nil {
			for _, r := range c.Records() {
				if ms := q.Mismatches(r); len(ms) == 0 || ms[0].Field != FieldEpilogue {
					t.Errorf("chain %q vs record %q: mismatches %v, want the epilogue first", tc.chain, r.Key.Epilogue, ms)
				}
			}
		}
	}
	for _, bad := range []string{"relu,", "scale_shift, relu", "leaky_relu(0.10000000001)"} {
		r := cloneRecord(fused)
		r.Key.Epilogue = bad
		if err := r.Validate(); err == nil {
			t.Errorf("epilogue %q (not canonical): Validate accepts it", bad)
		}
	}
}
