package tunecache

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// tampered lists the records of issue 22, item 7 and more: each edit puts
// one field out of bounds, and the error must name that field.
var tampered = []struct {
	field string
	edit  func(*Record)
}{
	{"cubin_gzip", func(r *Record) { r.CUBIN = Gzip([]byte("arbitrary bytes, not an ELF file")) }},
	{"cubin_gzip", func(r *Record) { r.CUBIN = nil }},
	{"cubin_gzip", func(r *Record) { r.CUBIN = []byte("\x7fELF not compressed") }},
	{"kernel_sha256", func(r *Record) { r.KernelSHA256 = "" }},
	{"kernel_sha256", func(r *Record) { r.KernelSHA256 = strings.Repeat("AB", 32) }},
	{"convgen_version", func(r *Record) { r.ConvgenVersion = "" }},
	{"arch", func(r *Record) { r.Arch = "sm_99z" }},
	{"arch", func(r *Record) { r.Arch = "sm_80" }}, // not the device's compute capability 9.0
	{"grid[0]", func(r *Record) { r.Grid[0] = 1 << 62 }},
	{"grid[0]", func(r *Record) { r.Grid[0] = 0 }},
	{"grid[1]", func(r *Record) { r.Grid[1] = 65536 }},
	{"grid[2]", func(r *Record) { r.Grid[2] = -1 }},
	{"block[0]", func(r *Record) { r.Block[0] = 2048 }},
	{"block[2]", func(r *Record) { r.Block[2] = 65 }},
	{"block", func(r *Record) { r.Block = [3]int{64, 32, 1} }},
	{"shared_bytes", func(r *Record) { r.SharedBytes = 1 << 40 }},
	{"shared_bytes", func(r *Record) { r.SharedBytes = 227*1024 + 1 }},
	{"shared_bytes", func(r *Record) { r.SharedBytes = -1 }},
	{"winner.median_ms", func(r *Record) { r.Winner.MedianMS = -1.5 }},
	{"winner.median_ms", func(r *Record) { r.Winner.MedianMS = 0 }},
	{"winner.median_ms", func(r *Record) { r.Winner.MedianMS = math.Inf(1) }},
	{"winner.median_ms", func(r *Record) { r.Winner.MedianMS = math.NaN() }},
	{"winner.spread_ms", func(r *Record) { r.Winner.SpreadMS = -0.1 }},
	{"winner.rel_error", func(r *Record) { r.Winner.RelError = 2 }},
	{"winner.family", func(r *Record) { r.Winner.Family = "" }},
	{"winner.config.tile_k", func(r *Record) { r.Winner.Config["tile_k"] = -4 }},
	{"summary.top[1].median_ms", func(r *Record) { r.Summary.Top[1].MedianMS = -3 }},
	{"summary.top[0].id", func(r *Record) { r.Summary.Top[0].ID = "not a family/x" }},
	{"summary.best_per_family[0].rel_error", func(r *Record) { r.Summary.BestPerFamily[0].RelError = math.NaN() }},
	{"summary.counts[0].status", func(r *Record) { r.Summary.Counts[0].Status = "ok\n" }},
	{"summary.counts[1].n", func(r *Record) { r.Summary.Counts[1].N = -1 }},
	{"summary.device_arch", func(r *Record) { r.Summary.DeviceArch = "hopper" }},
	{"summary.phases.compile_s", func(r *Record) { r.Summary.Phases.CompileS = -2 }},
	{"summary.phases.measure_s", func(r *Record) { r.Summary.Phases.MeasureS = math.NaN() }},
	{"summary.tie_note", func(r *Record) { r.Summary.TieNote = "two\nlines" }},
	{"kernel", func(r *Record) { r.Kernel = "conv(); evil" }},
	{"ptx_gzip", func(r *Record) { r.PTX = Gzip([]byte("\x00\x01binary")) }},
	{"ptx_gzip", func(r *Record) { r.PTX = Gzip([]byte("hello")) }},
	{"ptx_gzip", func(r *Record) { r.PTX = Gzip([]byte("// a comment, no directive\n")) }},
	{"ptx_gzip", func(r *Record) { r.PTX = []byte(".version 8.0\n") }},
	{"command", func(r *Record) { r.Command = "convgen\npackage evil" }},
	{"key.device", func(r *Record) { r.Key.Device = "" }},
	{"key.shape", func(r *Record) { r.Key.Shape = strings.Repeat("N", 1000) }},
	{"key.compute_capability", func(r *Record) { r.Key.ComputeCapability = "nine" }},
	{"key.sm_count", func(r *Record) { r.Key.SMCount = 0 }},
	{"fallback.arch", func(r *Record) { r.Fallback.Arch = "sm_80" }},
	{"fallback.grid[0]", func(r *Record) { r.Fallback.Grid[0] = 1 << 31 }},
	{"fallback.shared_bytes", func(r *Record) { r.Fallback.SharedBytes = 1 << 40 }},
	{"fallback.timing.median_ms", func(r *Record) { r.Fallback.Timing.MedianMS = -1 }},
	{"fallback.ptx_gzip", func(r *Record) { r.Fallback.PTX = Gzip(nil) }},
	{"fallback.kernel_sha256", func(r *Record) { r.Fallback.KernelSHA256 = "abc" }},
}

// TestValidate (issue 22, item 7): Validate names the field each tampered
// record gets wrong; the valid records pass.
func TestValidate(t *testing.T) {
	valid := testRecord(shapeOf(1), "NVIDIA H200", 0.5)
	if err := valid.Validate(); err != nil {
		t.Fatalf("valid record: %v", err)
	}
	a := cloneRecord(valid)
	a.Arch, a.SharedBytes, a.Grid, a.Block = "sm_90a", MaxSharedBytes, [3]int{MaxGridX, MaxGridYZ, MaxGridYZ}, [3]int{1, 1024, 1}
	if err := a.Validate(); err != nil {
		t.Errorf("a record at the limits: %v", err)
	}
	for _, tc := range tampered {
		r := cloneRecord(valid)
		tc.edit(&r)
		err := r.Validate()
		var fe *FieldError
		ok := errors.As(err, &fe)
		if !ok || fe.Field != tc.field {
			t.Errorf("tampered %s: Validate = %v, want an error naming %s", tc.field, err, tc.field)
		}
	}
}

// TestLoadTampered (issue 22, item 7): a cache file holding a tampered
// record (written as if by hand, without a checksum) is corrupt, and the
// error names the file, the record and the field; Put refuses such a
// record and leaves the file as it was.
func TestLoadTampered(t *testing.T) {
	dir := t.TempDir()
	good := testRecord(shapeOf(1), "NVIDIA H200", 0.5)
	for _, tc := range tampered {
		bad := testRecord(shapeOf(2), "NVIDIA H200", 0.5)
		tc.edit(&bad)
		if _, err := json.Marshal(bad); err != nil {
			continue // NaN and infinities cannot be written as JSON: TestValidate covers them
		}
		path := filepath.Join(dir, "tune.json")
		data := encodeLegacy(t, good, bad)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		corrupt := errors.As(err, new(*CorruptError))
		var re *RecordError
		isRec := errors.As(err, &re)
		if !corrupt || !isRec || re.Index != 1 || err == nil ||
			!strings.Contains(err.Error(), tc.field+":") || !strings.Contains(err.Error(), "record 1 (") || !strings.Contains(err.Error(), path) {
			t.Errorf("tampered %s: Load = %v, want a corrupt-cache error naming %s, record 1 and %s", tc.field, err, path, tc.field)
		}
		if err := Put(path, bad); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("tampered %s: Put = %v, want a refusal naming the field", tc.field, err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
			t.Errorf("tampered %s: the file changed", tc.field)
		}
	}
}

// encodeLegacy writes records as a cache file without checksums, as caches
// from before checksums (and hand edits) are.
func encodeLegacy(t testing.TB, recs ...Record) []byte {
	t.Helper()
	f := File{Format: Format}
	for _, r := range recs {
		f.Records = append(f.Records, FileRecord{Record: r})
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestChecksum (issue 22, item 7): Put writes a checksum per record; a
// record changed after it was written (here a timing, which passes the
// bounds) no longer matches its checksum and the cache is corrupt, with an
// error naming the record. White space and key order do not matter.
func TestChecksum(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	mustPut(t, path, testRecord(shapeOf(1), "NVIDIA H200", 0.5))
	mustPut(t, path, testRecord(shapeOf(2), "NVIDIA H200", 0.5))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte(`"checksum": "sha256:`)); n != 2 {
		t.Fatalf("%d checksums in the file, want 2", n)
	}
	// Re-indented and with its keys in another order, the file still loads.
	var generic map[string]any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	reordered, err := json.Marshal(generic) // sorts the keys, no indentation
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, reordered, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := len(mustLoad(t, path).Records()); n != 2 {
		t.Errorf("reformatted file: %d records, want 2", n)
	}

	edited := bytes.Replace(data, []byte(`"median_ms": 0.625`), []byte(`"median_ms": 0.0625`), 1)
	if bytes.Equal(edited, data) {
		t.Fatal("the test's edit did not apply")
	}
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	var re *RecordError
	if ok := errors.As(err, &re); !ok || re.Index != 0 || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("Load of an edited record = %v, want a checksum error naming record 0", err)
	}
}

// TestLegacyRecords: records without a checksum (caches written before
// checksums, such as the committed example cache) load if they pass the
// bounds, and get their checksums when Put next rewrites the file.
func TestLegacyRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	old := testRecord(shapeOf(1), "NVIDIA H200", 0.5)
	if err := os.WriteFile(path, encodeLegacy(t, old), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, ok := mustLoad(t, path).Lookup(old.Key); !ok || !reflect.DeepEqual(got, old) {
		t.Fatalf("legacy record: Lookup = %v, want the record", ok)
	}
	mustPut(t, path, testRecord(shapeOf(2), "NVIDIA H200", 0.5))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte(`"checksum": "sha256:`)); n != 2 {
		t.Errorf("%d checksums after Put, want 2 (the legacy record's too)", n)
	}
	if got, ok := mustLoad(t, path).Lookup(old.Key); !ok || !reflect.DeepEqual(got, old) {
		t.Errorf("legacy record after Put: Lookup = %v, want it unchanged", ok)
	}
}

// TestCommittedCache: the committed example cache (legacy records without
// checksums) passes the checks, so go generate keeps replaying it.
func TestCommittedCache(t *testing.T) {
	c, err := Load(filepath.Join("..", "examples", "alexnet", "convgen-cache.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records()) == 0 {
		t.Fatal("the committed cache has no records")
	}
}
