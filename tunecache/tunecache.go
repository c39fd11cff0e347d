// Package tunecache is convgen's tuning cache: a JSON file of records of
// autotuning results, so that kernel generation can be replayed offline,
// without a GPU.
//
// The file has the form {"format": 1, "records": [...]}, with the records
// sorted by their Key, indented with two spaces and ending in a newline, so
// that the same set of records always gives the same bytes. Load reads it;
// Put adds or replaces one record, atomically and safely when several
// processes write the same file at once. A file that cannot be read as a
// tuning cache is reported as corrupt and never overwritten.
package tunecache

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Format is the format number of the files this package reads and writes.
const Format = 1

// Key identifies what a record was tuned for. Every field is part of
// equality.
type Key struct {
	Shape             string `json:"shape"`              // canonical shape string, e.g. "N=256,C=3,...,bias=true"
	Precision         string `json:"precision"`          // "fp32", "tf32", ...
	Layout            string `json:"layout"`             // "nchw" or "nhwc"
	TemplateVersion   string `json:"template_version"`   // hash of the templates
	ConvgenVersion    string `json:"convgen_version"`    // version of convgen that tuned it
	NVRTCVersion      string `json:"nvrtc_version"`      // "13.0"
	Device            string `json:"device"`             // "NVIDIA H200"
	ComputeCapability string `json:"compute_capability"` // "9.0"
	SMCount           int    `json:"sm_count"`           // number of streaming multiprocessors
	Driver            string `json:"driver"`             // driver version, e.g. "13000"
}

// Supersedes reports whether a record with key k replaces one with key
// old: the keys are equal but for TemplateVersion and ConvgenVersion (the
// same problem tuned again on the same device, driver and NVRTC).
func (k Key) Supersedes(old Key) bool {
	old.TemplateVersion, old.ConvgenVersion = k.TemplateVersion, k.ConvgenVersion
	return k == old
}

// Timing is one measured candidate.
type Timing struct {
	Family   string         `json:"family"`    // kernel family, e.g. "direct"
	Config   map[string]int `json:"config"`    // the family's tuning parameters
	MedianMS float64        `json:"median_ms"` // median time of the timed runs
	SpreadMS float64        `json:"spread_ms"` // (p90 - p10) over the timed runs
	RelError float64        `json:"rel_error"` // ‖out−ref‖/‖ref‖
}

// Record is the outcome of one tuning run.
type Record struct {
	Key         Key      `json:"key"`          // what was tuned
	Winner      Timing   `json:"winner"`       // the fastest correct candidate
	RunnersUp   []Timing `json:"runners_up"`   // the next candidates, fastest first
	Kernel      string   `json:"kernel"`       // __global__ function name
	Grid        [3]int   `json:"grid"`         // launch grid (x, y, z)
	Block       [3]int   `json:"block"`        // launch block (x, y, z)
	SharedBytes int      `json:"shared_bytes"` // dynamic shared memory per block
	Arch        string   `json:"arch"`         // "sm_90"
	CUBIN       []byte   `json:"cubin"`        // base64 in JSON
	PTX         string   `json:"ptx"`          // the PTX the CUBIN was built from
	Command     string   `json:"command"`      // the convgen command line that produced it
	// Fallback is the kernel that generated packages run on GPUs other than
	// Arch's; nil when no candidate qualified (records from before it
	// existed have none either).
	Fallback *Fallback `json:"fallback,omitempty"`
	// Report is the full tuning report, kept so that reports can be
	// regenerated offline. Only its meaning is kept, not its white space:
	// records read from a file hold it compacted.
	Report json.RawMessage `json:"report,omitempty"`
}

// Fallback is a portable kernel for the GPUs a record's CUBIN does not
// serve: the fastest verified candidate that is not specific to one
// architecture and fits the shared memory of every GPU its PTX targets, as
// PTX for a virtual architecture (e.g. "compute_80") that the driver
// compiles for the device at hand.
type Fallback struct {
	Timing      Timing `json:"timing"`       // as measured on the tuning device
	Kernel      string `json:"kernel"`       // __global__ function name
	Grid        [3]int `json:"grid"`         // launch grid (x, y, z)
	Block       [3]int `json:"block"`        // launch block (x, y, z)
	SharedBytes int    `json:"shared_bytes"` // dynamic shared memory per block
	Arch        string `json:"arch"`         // the PTX's virtual architecture, "compute_80"
	PTX         string `json:"ptx"`
}

// File is the on-disk form of a cache: {"format": 1, "records": [...]}, the
// records sorted by Key (field by field, in declaration order) so that the
// file is deterministic.
type File struct {
	Format  int      `json:"format"`  // always Format
	Records []Record `json:"records"` // sorted by Key
}

// Query selects records for offline replay, without a GPU at hand to supply
// the device fields of a Key. Empty Arch and Device match anything; every
// other field must equal the record's.
type Query struct {
	Shape           string // Key.Shape
	Precision       string // Key.Precision
	Layout          string // Key.Layout
	TemplateVersion string // Key.TemplateVersion
	ConvgenVersion  string // Key.ConvgenVersion
	Arch            string // Record.Arch, e.g. "sm_90"; empty matches any
	Device          string // Key.Device, e.g. "NVIDIA H200"; empty matches any
}

// Cache is the content of a tuning cache file as read by Load. It is a
// snapshot: Put writes the file, not a Cache, so reload to see new records.
type Cache struct {
	path    string
	records []Record    // sorted by Key
	index   map[Key]int // position in records of each key's first record
}

// CorruptError reports a cache file that exists but cannot be read as a
// tuning cache. convgen never overwrites such a file.
type CorruptError struct {
	Path string // the cache file
	Err  error  // what is wrong with it
}

// Error names the file and says that it will not be overwritten.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("tuning cache %s is corrupt (%v); fix or remove it: convgen will not overwrite it", e.Path, e.Err)
}

// Unwrap returns the underlying error.
func (e *CorruptError) Unwrap() error { return e.Err }

// Load reads the cache at path. A missing file is an empty cache; a file
// that is not valid JSON or whose format number is unknown gives a
// *CorruptError.
func Load(path string) (*Cache, error) {
	recs, err := readRecords(path)
	if err != nil {
		return nil, err
	}
	return newCache(path, recs), nil
}

// Path returns the file the cache was loaded from.
func (c *Cache) Path() string { return c.path }

// Lookup returns the record whose Key equals k in every field.
func (c *Cache) Lookup(k Key) (Record, bool) {
	i, ok := c.index[k]
	if !ok {
		return Record{}, false
	}
	return cloneRecord(c.records[i]), true
}

// Match returns the records that q selects, sorted by Key. It is for
// offline replay, where the device fields of the Key are not known.
func (c *Cache) Match(q Query) []Record {
	var out []Record
	for _, r := range c.records {
		if len(q.Mismatches(r)) == 0 {
			out = append(out, cloneRecord(r))
		}
	}
	return out
}

// Field names a field of a Query.
type Field string

// The fields of a Query, as Mismatch names them.
const (
	FieldShape           Field = "shape"
	FieldPrecision       Field = "precision"
	FieldLayout          Field = "layout"
	FieldTemplateVersion Field = "template version"
	FieldConvgenVersion  Field = "convgen version"
	FieldArch            Field = "arch"
	FieldDevice          Field = "device"
)

// Mismatch is a field of a Query that a record fails, with the record's
// value of it.
type Mismatch struct {
	Field Field
	Value string
}

// String reads like "template version 1a2b3c4d5e6f" or `device "NVIDIA H100"`.
func (m Mismatch) String() string {
	if m.Field == FieldDevice {
		return fmt.Sprintf("%s %q", m.Field, m.Value)
	}
	return fmt.Sprintf("%s %s", m.Field, m.Value)
}

// Mismatches lists the fields of q that r fails, in the order of Query's
// fields; none when q selects r.
func (q Query) Mismatches(r Record) []Mismatch {
	k := r.Key
	var out []Mismatch
	for _, f := range []struct {
		field     Field
		got, want string
	}{
		{FieldShape, k.Shape, q.Shape},
		{FieldPrecision, k.Precision, q.Precision},
		{FieldLayout, k.Layout, q.Layout},
		{FieldTemplateVersion, k.TemplateVersion, q.TemplateVersion},
		{FieldConvgenVersion, k.ConvgenVersion, q.ConvgenVersion},
	} {
		if f.got != f.want {
			out = append(out, Mismatch{f.field, f.got})
		}
	}
	// A device arch (sm_90) also matches a record built for its
	// architecture-specific variant (sm_90a), which runs on it.
	if q.Arch != "" && r.Arch != q.Arch && r.Arch != q.Arch+"a" {
		out = append(out, Mismatch{FieldArch, r.Arch})
	}
	if q.Device != "" && k.Device != q.Device {
		out = append(out, Mismatch{FieldDevice, k.Device})
	}
	return out
}

// Records returns all records, sorted by Key.
func (c *Cache) Records() []Record {
	out := make([]Record, len(c.records))
	for i, r := range c.records {
		out[i] = cloneRecord(r)
	}
	return out
}

// Put stores rec in the cache file at path, replacing the record with an
// equal Key or adding it. A record that rec supersedes goes too: one tuned
// for the same problem on the same device, driver and NVRTC but with other
// templates or another convgen version (Supersedes), which no checkout with
// rec's templates can replay; older versions keep theirs in their own
// history. It is atomic and safe when several processes (or
// goroutines) write the same file: it holds an exclusive lock on the sibling
// file path+".lock" (created if missing; left in place afterwards), re-reads
// the cache under the lock, writes the new content to a temporary file in
// the same directory, syncs it and renames it over path. A corrupt cache
// file gives a *CorruptError and is left untouched. The directory is
// created if missing.
func Put(path string, rec Record) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("tuning cache %s: create directory: %w", path, err)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return fmt.Errorf("tuning cache %s: lock: %w", path, err)
	}
	defer unlock()

	recs, err := readRecords(path)
	if err != nil {
		return err
	}
	recs = slices.DeleteFunc(recs, func(r Record) bool { return rec.Key.Supersedes(r.Key) })
	recs = append(recs, rec)
	data, err := encode(recs)
	if err != nil {
		return fmt.Errorf("tuning cache %s: encode: %w", path, err)
	}
	if err := writeAtomic(path, data); err != nil {
		return fmt.Errorf("tuning cache %s: write: %w", path, err)
	}
	return nil
}

// CheckWritable says whether Put could write a cache at path: its
// directory can be made and a file created in it (the lock file Put takes).
// Callers check it before tuning, so that a bad path is refused before the
// work rather than after.
func CheckWritable(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return fmt.Errorf("tuning cache %s: create directory: %w", path, err)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return fmt.Errorf("tuning cache %s: lock: %w", path, err)
	}
	unlock()
	return nil
}

// readRecords reads and checks the file at path; a missing file has no
// records.
func readRecords(path string) ([]Record, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read tuning cache: %w", err)
	}
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			err = fmt.Errorf("%w at offset %d", se, se.Offset)
		}
		return nil, &CorruptError{Path: path, Err: err}
	}
	if f.Format != Format {
		return nil, &CorruptError{Path: path, Err: fmt.Errorf("unknown format %d, want %d", f.Format, Format)}
	}
	for i := range f.Records {
		if r := f.Records[i].Report; len(r) > 0 {
			var b bytes.Buffer
			if err := json.Compact(&b, r); err != nil {
				return nil, &CorruptError{Path: path, Err: fmt.Errorf("record %d: report: %w", i, err)}
			}
			f.Records[i].Report = b.Bytes()
		}
	}
	return f.Records, nil
}

func newCache(path string, recs []Record) *Cache {
	sortRecords(recs)
	c := &Cache{path: path, records: recs, index: make(map[Key]int, len(recs))}
	for i, r := range recs {
		if _, dup := c.index[r.Key]; !dup {
			c.index[r.Key] = i
		}
	}
	return c
}

// compareKeys orders keys field by field, in declaration order.
func compareKeys(a, b Key) int {
	return cmp.Or(
		cmp.Compare(a.Shape, b.Shape),
		cmp.Compare(a.Precision, b.Precision),
		cmp.Compare(a.Layout, b.Layout),
		cmp.Compare(a.TemplateVersion, b.TemplateVersion),
		cmp.Compare(a.ConvgenVersion, b.ConvgenVersion),
		cmp.Compare(a.NVRTCVersion, b.NVRTCVersion),
		cmp.Compare(a.Device, b.Device),
		cmp.Compare(a.ComputeCapability, b.ComputeCapability),
		cmp.Compare(a.SMCount, b.SMCount),
		cmp.Compare(a.Driver, b.Driver),
	)
}

func sortRecords(recs []Record) {
	slices.SortStableFunc(recs, func(a, b Record) int { return compareKeys(a.Key, b.Key) })
}

// encode gives the file content for recs: sorted, indented by two spaces,
// ending in a newline.
func encode(recs []Record) ([]byte, error) {
	recs = slices.Clone(recs)
	sortRecords(recs)
	if recs == nil {
		recs = []Record{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(File{Format: Format, Records: recs}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeAtomic replaces the file at path by data: a temporary file in the
// same directory, synced, then renamed over path. The file keeps the
// permissions of the one it replaces (0644 when new).
func writeAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// Make the rename itself durable; not every file system can sync a
	// directory, and the data are already safe, so failure is ignored.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// cloneRecord copies r deeply, so that callers cannot change a Cache.
func cloneRecord(r Record) Record {
	r.Winner = cloneTiming(r.Winner)
	if r.RunnersUp != nil {
		ru := make([]Timing, len(r.RunnersUp))
		for i, t := range r.RunnersUp {
			ru[i] = cloneTiming(t)
		}
		r.RunnersUp = ru
	}
	r.CUBIN = bytes.Clone(r.CUBIN)
	r.Report = bytes.Clone(r.Report)
	if r.Fallback != nil {
		fb := *r.Fallback
		fb.Timing = cloneTiming(fb.Timing)
		r.Fallback = &fb
	}
	return r
}

func cloneTiming(t Timing) Timing {
	t.Config = maps.Clone(t.Config)
	return t
}
