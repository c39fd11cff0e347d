package tunecache

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestOutPrecisionKey: a record whose output is stored in another type
// serves only queries for that type, lives beside the record of the same
// problem stored in the input's type (neither supersedes the other); a
// record without an output precision is written without the
// "out_precision" field, so its bytes and checksum are what they were.
func TestOutPrecisionKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	plain := testRecord(shapeOf(1), "NVIDIA H200", 0.5)
	mustPut(t, path, plain)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(before, []byte(`out_precision`)) {
		t.Errorf("a record without an output precision writes the field:\n%s", before)
	}
	bf := testRecord(shapeOf(1), "NVIDIA H200", 0.6)
	bf.Key.OutPrecision = "bf16"
	if plain.Key.Supersedes(bf.Key) || bf.Key.Supersedes(plain.Key) {
		t.Error("the bf16-output record and the plain one supersede each other")
	}
	mustPut(t, path, bf)
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(after, []byte(`"out_precision": "bf16"`)) {
		t.Errorf("the bf16-output record does not write its key's out_precision:\n%s", after)
	}
	c := mustLoad(t, path)
	for _, tc := range []struct {
		out  string
		want *Record
	}{{"", &plain}, {"bf16", &bf}, {"fp16", nil}} {
		q := Query{Shape: plain.Key.Shape, Precision: plain.Key.Precision, Layout: plain.Key.Layout, OutPrecision: tc.out}
		got := c.Match(q)
		switch {
		case tc.want == nil && len(got) != 0:
			t.Errorf("out %q: matches %d records, want none", tc.out, len(got))
		case tc.want != nil && (len(got) != 1 || got[0].Key != tc.want.Key):
			t.Errorf("out %q: matches %v, want only its own record", tc.out, got)
		}
	}
	q := Query{Shape: plain.Key.Shape, Precision: plain.Key.Precision, Layout: plain.Key.Layout, OutPrecision: "bf16"}
	if ms := q.Mismatches(plain); len(ms) != 1 || ms[0].Field != FieldOut {
		t.Errorf("bf16 query vs plain record: mismatches %v, want the output precision alone", ms)
	}
	for _, bad := range []string{"BF16", "tf32", "fp32" /* the input's own type */} {
		r := cloneRecord(bf)
		r.Key.OutPrecision = bad
		if err := r.Validate(); err == nil {
			t.Errorf("out_precision %q (precision %s): Validate accepts it", bad, r.Key.Precision)
		}
	}
	r := cloneRecord(bf)
	r.Key.Op = "dgrad"
	if err := r.Validate(); err == nil {
		t.Error("a dgrad record with an output precision: Validate accepts it")
	}
}
