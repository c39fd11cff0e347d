// Package tunecache is convgen's tuning cache: a JSON file of records of
// autotuning results, so that kernel generation can be replayed offline,
// without a GPU.
//
// The file has the form {"format": 2, "records": [...]}, with the records
// sorted by their Key, indented with two spaces and ending in a newline, so
// that the same set of records always gives the same bytes. Each record
// carries a checksum of its content and is checked against the bounds of
// Record.Validate when read. Load reads the file; Put adds or replaces one
// record, atomically and safely when several processes write the same file
// at once. A file that cannot be read as a tuning cache (bad JSON, a bad
// checksum, a field out of bounds, more than MaxFileBytes) is reported as
// corrupt and never overwritten; a path that is not a regular file (a FIFO,
// a device) is refused before it is opened for reading.
package tunecache

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/convgen/convgen/kernels/launch"
)

// Format is the format number of the files this package reads and writes.
// Format 1 (convgen 0.1) keyed records by a hash of template files and
// kept each full tuning report; its records cannot be checked against the
// current kernels and are not read.
const Format = 2

// MaxFileBytes is the largest cache file Load reads.
const MaxFileBytes = 256 << 20

// Key identifies what a record was tuned for: the problem and the device
// and toolchain. Every field is part of equality. Whether the record's
// kernels are still what convgen would generate is not part of it: the
// record's kernel hashes (Record.KernelSHA256) say that.
type Key struct {
	Shape     string `json:"shape"`     // canonical shape string, e.g. "N=256,C=3,...,bias=true"
	Precision string `json:"precision"` // "fp32", "tf32", ...
	Layout    string `json:"layout"`    // "nchw" or "nhwc"
	// Epilogue is the canonical text of the epilogue chain the kernels
	// apply (epilogue.Chain.Key), "" (and absent from the file) for none,
	// so that a record without a chain keeps the key it had before chains.
	Epilogue string `json:"epilogue,omitempty"`
	// Op is the computation's name ("dgrad", "wgrad"; problem.Op), "" (and
	// absent from the file) for the forward convolution, so that a forward
	// record keeps the key it had before ops; records of different ops
	// never match each other.
	Op string `json:"op,omitempty"`
	// OutPrecision is the output's element type ("fp32", "fp16", "bf16";
	// problem.Problem.OutPrecision) when it differs from the input's, ""
	// (and absent from the file) otherwise, so that a record stored in the
	// input's type keeps the key it had before output precisions.
	OutPrecision      string `json:"out_precision,omitempty"`
	NVRTCVersion      string `json:"nvrtc_version"`      // "13.0"
	Device            string `json:"device"`             // "NVIDIA H200"
	ComputeCapability string `json:"compute_capability"` // "9.0"
	SMCount           int    `json:"sm_count"`           // number of streaming multiprocessors
	Driver            string `json:"driver"`             // driver version, e.g. "13000"
}

// Supersedes reports whether a record with key k replaces one with key
// old: both are of the same problem (Shape, Precision, Layout, Epilogue, Op,
// OutPrecision) and the same
// device model (Device, ComputeCapability), whatever their kernels,
// convgen, NVRTC, driver or SM count. A cache thus holds at most one record
// per problem and device model, the one tuned last, and offline replay can
// always pick one with -device.
func (k Key) Supersedes(old Key) bool {
	return k.Shape == old.Shape && k.Precision == old.Precision && k.Layout == old.Layout && k.Epilogue == old.Epilogue && k.Op == old.Op &&
		k.OutPrecision == old.OutPrecision &&
		k.Device == old.Device && k.ComputeCapability == old.ComputeCapability
}

// Timing is one measured candidate.
type Timing struct {
	Family   string         `json:"family"`    // kernel family, e.g. "direct"
	Config   map[string]int `json:"config"`    // the family's tuning parameters
	MedianMS float64        `json:"median_ms"` // median time of the timed runs
	SpreadMS float64        `json:"spread_ms"` // (p90 - p10) over the timed runs
	RelError float64        `json:"rel_error"` // ‖out−ref‖/‖ref‖
}

// Record is the outcome of one tuning run: what replaying it needs (the
// winner's launch and images, the fallback) and a summary of the search
// for the report.
type Record struct {
	Key Key `json:"key"` // what was tuned
	// ConvgenVersion is the version of convgen that tuned it. It is
	// informational: the kernel hashes decide whether a record is current.
	ConvgenVersion string `json:"convgen_version"`
	Winner         Timing `json:"winner"` // the chosen candidate
	// KernelSHA256 is the winner's kernel hash (kernels.Hash: its source
	// without comments, and its launch geometry) as rendered when tuned.
	// The record is current while the code renders the winner's
	// configuration to the same hash.
	KernelSHA256 string `json:"kernel_sha256"`
	Kernel       string `json:"kernel"` // __global__ function name
	// Launch is the launch geometry: grid, block, shared_bytes (dynamic
	// shared memory per block), marshalled as the record's own fields.
	launch.Launch
	Arch    string  `json:"arch"`       // "sm_90"
	CUBIN   Gzipped `json:"cubin_gzip"` // the winner compiled for Arch
	PTX     Gzipped `json:"ptx_gzip"`   // the PTX the CUBIN was built from
	Command string  `json:"command"`    // the convgen command line that produced it
	// Fallback is the kernel that generated packages run on GPUs other than
	// Arch's; nil when no candidate qualified.
	Fallback *Fallback `json:"fallback,omitempty"`
	// Summary is what the report shows of the search.
	Summary Summary `json:"summary"`
}

// Fallback is a portable kernel for the GPUs a record's CUBIN does not
// serve: the fastest verified candidate that is not specific to one
// architecture and fits the shared memory of every GPU its PTX targets, as
// PTX for a virtual architecture (e.g. "compute_80") that the driver
// compiles for the device at hand.
type Fallback struct {
	Timing        Timing  `json:"timing"`        // as measured on the tuning device
	KernelSHA256  string  `json:"kernel_sha256"` // kernels.Hash of the fallback as rendered when tuned
	Kernel        string  `json:"kernel"`        // __global__ function name
	launch.Launch         // grid, block, shared_bytes, as in Record
	Arch          string  `json:"arch"` // the PTX's virtual architecture, "compute_80"
	PTX           Gzipped `json:"ptx_gzip"`
}

// File is the on-disk form of a cache: {"format": 2, "records": [...]}, the
// records sorted by Key (field by field, in declaration order) so that the
// file is deterministic.
type File struct {
	Format  int          `json:"format"`  // always Format
	Records []FileRecord `json:"records"` // sorted by Key
}

// FileRecord is a record as a file holds it: its fields and, last, its
// checksum (Record.Checksum). Put writes a checksum for every record; a
// record without one (written before checksums existed) is accepted if it
// passes Validate, and gets its checksum when Put next rewrites the file.
type FileRecord struct {
	Record
	Checksum string `json:"checksum,omitempty"`
}

// Query selects records for offline replay, without a GPU at hand to supply
// the device fields of a Key. Empty Arch and Device match anything; every
// other field must equal the record's.
type Query struct {
	Shape     string // Key.Shape
	Precision string // Key.Precision
	Layout    string // Key.Layout
	Epilogue  string // Key.Epilogue ("" selects records without a chain)
	Op        string // Key.Op ("" selects forward records)
	// OutPrecision is Key.OutPrecision ("" selects records stored in the
	// input's type).
	OutPrecision string
	Arch         string // Record.Arch, e.g. "sm_90"; empty matches any
	Device       string // Key.Device, e.g. "NVIDIA H200"; empty matches any
	// Current, when set, says why a record's kernels are stale (no longer
	// what the code generates for its configurations), or nil when they
	// are current; a stale record is not selected.
	Current func(Record) error
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

// Replay returns the records that offline replay chooses among: of those
// that q selects, the newest per device model (Device and
// ComputeCapability), sorted by Key. The newest is the one with the latest
// driver, then the latest NVRTC (versions compared by their numbers), then
// the most SMs, then the first by Key, so the choice is deterministic. Put
// keeps one record per problem and device model (Supersedes), but files
// written before it did may hold several, which then differ in no field
// that -device or -arch could select.
func (c *Cache) Replay(q Query) []Record {
	var out []Record
	for _, r := range c.Match(q) {
		i := slices.IndexFunc(out, func(o Record) bool { return r.Key.Supersedes(o.Key) })
		switch {
		case i < 0:
			out = append(out, r)
		case newer(r.Key, out[i].Key):
			out[i] = r
		}
	}
	sortRecords(out)
	return out
}

// newer reports whether a record with key a was tuned with a newer
// toolchain than one with key b of the same device model.
func newer(a, b Key) bool {
	return cmp.Or(
		compareVersions(a.Driver, b.Driver),
		compareVersions(a.NVRTCVersion, b.NVRTCVersion),
		cmp.Compare(a.SMCount, b.SMCount),
		-compareKeys(a, b),
	) > 0
}

// Field names a field of a Query.
type Field string

// The fields of a Query, as Mismatch names them.
const (
	FieldShape     Field = "shape"
	FieldPrecision Field = "precision"
	FieldLayout    Field = "layout"
	FieldEpilogue  Field = "epilogue"
	FieldOp        Field = "op"
	FieldOut       Field = "out_precision"
	FieldArch      Field = "arch"
	FieldDevice    Field = "device"
	FieldKernel    Field = "kernel" // Query.Current refused the record
)

// Mismatch is a field of a Query that a record fails, with the record's
// value of it; for FieldKernel, why Query.Current refused it.
type Mismatch struct {
	Field Field
	Value string
}

// String reads like "arch sm_80", `device "NVIDIA H100"` or, for
// FieldKernel, the reason.
func (m Mismatch) String() string {
	switch m.Field {
	case FieldDevice:
		return fmt.Sprintf("%s %q", m.Field, m.Value)
	case FieldKernel:
		return m.Value
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
		{FieldEpilogue, k.Epilogue, q.Epilogue},
		{FieldOp, k.Op, q.Op},
		{FieldOut, k.OutPrecision, q.OutPrecision},
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
	if q.Current != nil {
		if err := q.Current(r); err != nil {
			out = append(out, Mismatch{FieldKernel, err.Error()})
		}
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
// equal Key or adding it. The records that rec supersedes go too: those of
// the same problem and device model (Supersedes), whatever their kernels,
// convgen, NVRTC or driver, so that the newest record is the one kept and
// offline replay never has two of one device to choose between; older
// versions keep theirs in their own history. rec must pass Validate. It is
// atomic and safe when several processes (or goroutines) write the same
// file: it holds an exclusive lock on the sibling file path+".lock"
// (created if missing; left in place afterwards), re-reads the cache under
// the lock, writes the new content, every record with its checksum, to a
// temporary file in the same directory, syncs it and renames it over path.
// When path is a symbolic link, the file it links to is written (and
// locked) and the link stays. A corrupt cache file gives a *CorruptError
// and is left untouched. The directory is created if missing.
func Put(path string, rec Record) error {
	if err := rec.Validate(); err != nil {
		return fmt.Errorf("tuning cache %s: refusing an invalid record: %w", path, err)
	}
	target, err := resolve(path)
	if err != nil {
		return fmt.Errorf("tuning cache %s: %w", path, err)
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("tuning cache %s: create directory: %w", path, err)
	}
	unlock, err := lockFile(target + ".lock")
	if err != nil {
		return fmt.Errorf("tuning cache %s: lock: %w", path, err)
	}
	defer unlock()

	recs, err := readRecords(target)
	if err != nil {
		return err
	}
	recs = slices.DeleteFunc(recs, func(r Record) bool { return rec.Key == r.Key || rec.Key.Supersedes(r.Key) })
	recs = append(recs, rec)
	data, err := encode(recs)
	if err != nil {
		return fmt.Errorf("tuning cache %s: encode: %w", path, err)
	}
	if err := writeAtomic(target, data); err != nil {
		return fmt.Errorf("tuning cache %s: write: %w", path, err)
	}
	return nil
}

// CheckWritable says whether Put could write a cache at path, doing what
// Put does short of replacing the file: it makes the directory, takes the
// lock, reads the cache (a corrupt or non-regular one is refused), and
// creates temporary files beside it, as Put does, renaming one over the
// other before removing it. Callers check it before tuning, so that a
// bad path is refused before the work rather than after.
func CheckWritable(path string) error {
	target, err := resolve(path)
	if err != nil {
		return fmt.Errorf("tuning cache %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o777); err != nil {
		return fmt.Errorf("tuning cache %s: create directory: %w", path, err)
	}
	unlock, err := lockFile(target + ".lock")
	if err != nil {
		return fmt.Errorf("tuning cache %s: lock: %w", path, err)
	}
	defer unlock()
	if _, err := readRecords(target); err != nil {
		return err
	}
	if err := probeDir(target); err != nil {
		return fmt.Errorf("tuning cache %s: cannot write beside it: %w", path, err)
	}
	return nil
}

// probeDir does in path's directory what writeAtomic does: it creates two
// temporary files named as writeAtomic names them, renames one over the
// other, as writeAtomic renames over path, and removes what is left.
func probeDir(path string) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	var names []string
	defer func() {
		for _, n := range names {
			os.Remove(n)
		}
	}()
	for range 2 {
		tmp, err := os.CreateTemp(dir, base+".tmp-*")
		if err != nil {
			return err
		}
		names = append(names, tmp.Name())
		if err := tmp.Close(); err != nil {
			return err
		}
	}
	if err := os.Rename(names[0], names[1]); err != nil {
		return err
	}
	names = names[1:]
	return nil
}

// resolve follows path while it is a symbolic link and returns the file it
// ends at, which need not exist (Put then creates it).
func resolve(path string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 { // a missing path or one that cannot be reached: Put will say why
			return path, nil
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", fmt.Errorf("too many levels of symbolic links")
}

// SaveRescue writes rec, which must pass Validate, to a new file in dir as
// a cache of that one record, and returns the file's path. It keeps a
// finished tuning result when the cache cannot be written: "-cache FILE"
// replays it, and Put can merge it into a cache later.
func SaveRescue(dir string, rec Record) (string, error) {
	if err := rec.Validate(); err != nil {
		return "", fmt.Errorf("rescue tuning record: %w", err)
	}
	data, err := encode([]Record{rec})
	if err != nil {
		return "", fmt.Errorf("rescue tuning record: encode: %w", err)
	}
	f, err := os.CreateTemp(dir, "convgen-record-*.json")
	if err != nil {
		return "", fmt.Errorf("rescue tuning record: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("rescue tuning record: %w", err)
	}
	return f.Name(), nil
}

// readRecords reads and checks the file at path; a missing file has no
// records.
func readRecords(path string) ([]Record, error) {
	data, err := readFile(path, MaxFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parse(path, data)
}

// readFile reads a regular file of at most limit bytes. Anything else, a
// FIFO or a device above all, is refused before it is opened.
func readFile(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("read tuning cache: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("tuning cache %s is not a regular file (%v)", path, fi.Mode().Type())
	}
	if fi.Size() > limit {
		return nil, &CorruptError{Path: path, Err: fmt.Errorf("%d bytes, more than the %d a tuning cache may have", fi.Size(), limit)}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read tuning cache: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() { // swapped since the Stat
		return nil, fmt.Errorf("tuning cache %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read tuning cache: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, &CorruptError{Path: path, Err: fmt.Errorf("more than the %d bytes a tuning cache may have", limit)}
	}
	return data, nil
}

// parse decodes and checks the content of the cache file at path: the
// format, each record's checksum (when it has one) and bounds.
func parse(path string, data []byte) ([]Record, error) {
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			err = fmt.Errorf("%w at offset %d", se, se.Offset)
		}
		return nil, &CorruptError{Path: path, Err: err}
	}
	if f.Format == 1 {
		return nil, &CorruptError{Path: path, Err: errors.New("format 1, written by convgen 0.1, whose records cannot be checked against the current kernels: remove it and tune again on a GPU")}
	}
	if f.Format != Format {
		return nil, &CorruptError{Path: path, Err: fmt.Errorf("unknown format %d, want %d", f.Format, Format)}
	}
	recs := make([]Record, len(f.Records))
	for i, fr := range f.Records {
		r := fr.Record
		bad := func(err error) error {
			return &CorruptError{Path: path, Err: &RecordError{Index: i, Key: r.Key, Err: err}}
		}
		if fr.Checksum != "" {
			sum, err := r.Checksum()
			if err != nil {
				return nil, bad(err)
			}
			if sum != fr.Checksum {
				return nil, bad(fmt.Errorf("checksum %.80s does not match the content (%s): the record was changed by hand or damaged", fr.Checksum, sum))
			}
		}
		if err := r.Validate(); err != nil {
			return nil, bad(err)
		}
		recs[i] = r
	}
	return recs, nil
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
		cmp.Compare(a.Epilogue, b.Epilogue),
		cmp.Compare(a.Op, b.Op),
		cmp.Compare(a.OutPrecision, b.OutPrecision),
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

// encode gives the file content for recs: sorted, each with its checksum,
// indented by two spaces, ending in a newline.
func encode(recs []Record) ([]byte, error) {
	recs = slices.Clone(recs)
	sortRecords(recs)
	frs := make([]FileRecord, len(recs))
	for i, r := range recs {
		sum, err := r.Checksum()
		if err != nil {
			return nil, err
		}
		frs[i] = FileRecord{Record: r, Checksum: sum}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(File{Format: Format, Records: frs}); err != nil {
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
	r.CUBIN = bytes.Clone(r.CUBIN)
	r.PTX = bytes.Clone(r.PTX)
	if r.Fallback != nil {
		fb := *r.Fallback
		fb.Timing = cloneTiming(fb.Timing)
		fb.PTX = bytes.Clone(fb.PTX)
		r.Fallback = &fb
	}
	r.Summary.Counts = slices.Clone(r.Summary.Counts)
	r.Summary.Top = slices.Clone(r.Summary.Top)
	r.Summary.BestPerFamily = slices.Clone(r.Summary.BestPerFamily)
	return r
}

func cloneTiming(t Timing) Timing {
	t.Config = maps.Clone(t.Config)
	return t
}
