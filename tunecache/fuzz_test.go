package tunecache

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the cache loader: it never panics, and
// either fails or returns records that each pass Validate and survive a
// write and a second read unchanged. The seeds are a small valid cache, a
// legacy one without checksums and the tampered records of issue 22.
func FuzzLoad(f *testing.F) {
	valid, err := encode([]Record{testRecord(shapeOf(1), "NVIDIA H200", 0.5), testRecord(shapeOf(2), "NVIDIA H100", 1)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(encodeLegacy(f, testRecord(shapeOf(1), "NVIDIA H200", 0.5)))
	for _, tc := range tampered {
		r := testRecord(shapeOf(3), "NVIDIA H200", 0.5)
		tc.edit(&r)
		if data, err := json.Marshal(File{Format: Format, Records: []FileRecord{{Record: r}}}); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{"", "{}", `{"format": 2, "records": []}`, `{"format": 2, "records": null}`,
		`{"format": 2, "records": [{}]}`, `{"format": 1, "records": []}`, `{"format": 2, "records": [{"checksum": "sha256:00"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := parse("fuzz.json", data)
		if err != nil {
			if !errors.As(err, new(*CorruptError)) {
				t.Fatalf("parse error %T is not a *CorruptError: %v", err, err)
			}
			return
		}
		for i := range recs {
			if err := recs[i].Validate(); err != nil {
				t.Fatalf("record %d was accepted but fails Validate: %v", i, err)
			}
		}
		out, err := encode(recs)
		if err != nil {
			t.Fatalf("encode accepted records: %v", err)
		}
		again, err := parse("fuzz.json", out)
		if err != nil {
			t.Fatalf("the re-encoded records do not load: %v", err)
		}
		sortRecords(recs)
		if len(recs) != len(again) || (len(recs) > 0 && !reflect.DeepEqual(recs, again)) {
			t.Fatalf("the records changed in a write and a read:\n%+v\n%+v", recs, again)
		}
	})
}
