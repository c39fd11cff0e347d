package tunecache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/convgen/convgen/kernels/launch"
)

// Bounds that Validate checks a record's fields against: the limits of the
// CUDA devices convgen targets and generous sizes for the rest.
const (
	MaxGridX       = 1<<31 - 1  // largest grid x dimension
	MaxGridYZ      = 65535      // largest grid y and z dimensions
	MaxBlockXY     = 1024       // largest block x and y dimensions
	MaxBlockZ      = 64         // largest block z dimension
	MaxThreads     = 1024       // largest number of threads of a block
	MaxSharedBytes = 227 * 1024 // largest dynamic shared memory of a block (sm_90's opt-in maximum)
	MaxCodeBytes   = 64 << 20   // largest CUBIN or PTX
	maxRanked      = 64         // largest Summary.Top or BestPerFamily
	maxCounts      = 32         // largest Summary.Counts
	maxConfigKnobs = 64
	maxTextBytes   = 512      // largest key field, kernel name, family or knob name
	maxCommand     = 64 << 10 // largest Command
	maxMS          = 1e7      // a timing above ~3 hours is not a measurement
)

// checksumPrefix starts every record checksum: the hash function's name.
const checksumPrefix = "sha256:"

var (
	capability = regexp.MustCompile(`^([1-9][0-9]?)\.([0-9])$`)
	identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	sha256Hex  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// FieldError reports a record field that is out of bounds, naming the
// field by its JSON path within the record (e.g. "grid[0]",
// "fallback.timing.median_ms").
type FieldError struct {
	Field string // the field, as its JSON path within the record
	Err   error  // what is wrong with it
}

// Error names the field and what is wrong with it.
func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *FieldError) Unwrap() error { return e.Err }

// RecordError reports a record of a cache file that failed Validate or its
// checksum, naming the record by its position in the file and its problem.
type RecordError struct {
	Index int // position of the record in the file, from 0
	Key   Key // the record's key as read
	Err   error
}

// Error reads like `record 3 (N=...,bias=true fp32 nchw on "NVIDIA H200"):
// grid[0]: ...`. Long key fields are cut short.
func (e *RecordError) Error() string {
	k := e.Key
	return fmt.Sprintf("record %d (%.120s %.16s %.16s on %.64q): %v", e.Index, k.Shape, k.Precision, k.Layout, k.Device, e.Err)
}

// Unwrap returns the underlying error.
func (e *RecordError) Unwrap() error { return e.Err }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Validate checks every field of r against the bounds a record tuned by
// convgen keeps: key fields that are short printable text, a compute
// capability "M.m" that Arch ("sm_Mm", optionally with an "a" or "f"
// suffix) agrees with, launch geometry within CUDA's limits (grid x <
// 2³¹, y and z < 65536, block dimensions within 1024×1024×64 and at most
// 1024 threads), at most MaxSharedBytes of shared memory, positive finite
// times and non-negative finite errors, a kernel name that is a C
// identifier, kernel hashes of 64 hex digits, a CUBIN that is gzip of
// content starting with the ELF magic number, PTX that is gzip of text
// starting with a comment or the .version directive, a single-line Command
// and a summary of bounded lists of such times. The error is a *FieldError
// naming the first field that fails.
func (r *Record) Validate() error {
	k := r.Key
	for _, f := range []struct{ name, value string }{
		{"key.shape", k.Shape}, {"key.precision", k.Precision}, {"key.layout", k.Layout},
		{"convgen_version", r.ConvgenVersion}, {"key.nvrtc_version", k.NVRTCVersion}, {"key.device", k.Device}, {"key.driver", k.Driver},
	} {
		if err := checkText(f.value, maxTextBytes); err != nil {
			return &FieldError{Field: f.name, Err: err}
		}
	}
	// The epilogue may be empty (no chain); else a chain in canonical form.
	if err := checkText(k.Epilogue, maxTextBytes); err != nil && k.Epilogue != "" {
		return &FieldError{Field: "key.epilogue", Err: err}
	}
	if c, err := epilogue.Parse(k.Epilogue); err != nil || c.Key() != k.Epilogue {
		return fieldErr("key.epilogue", "%.80q is not an epilogue chain in canonical form", k.Epilogue)
	}
	// The op is empty (forward) or a gradient's name; a gradient has no
	// chain.
	if k.Op != "" {
		if op, err := problem.ParseOp(k.Op); err != nil || op == problem.OpFprop || op.String() != k.Op {
			return fieldErr("key.op", "%.32q is not a gradient op (dgrad, wgrad; the forward op is left out)", k.Op)
		}
		if k.Epilogue != "" {
			return fieldErr("key.op", "op %s has an epilogue chain (%.80q): chains apply to the forward op only", k.Op, k.Epilogue)
		}
	}
	// The output precision is empty (the input's type) or a storage type
	// other than the precision's own, on the forward op.
	if k.OutPrecision != "" {
		st, err := problem.ParseStorage(k.OutPrecision)
		if err != nil || string(st) != k.OutPrecision {
			return fieldErr("key.out_precision", "%.32q is not an output precision (fp32, fp16, bf16)", k.OutPrecision)
		}
		if problem.Precision(k.Precision).Storage() == st {
			return fieldErr("key.out_precision", "%s is precision %s's own type: it is left out of the key", k.OutPrecision, k.Precision)
		}
		if k.Op != "" {
			return fieldErr("key.out_precision", "op %s has an output precision (%s): only the forward op stores another type", k.Op, k.OutPrecision)
		}
	}
	m := capability.FindStringSubmatch(k.ComputeCapability)
	if m == nil {
		return fieldErr("key.compute_capability", "%.32q is not a compute capability like \"9.0\"", k.ComputeCapability)
	}
	if k.SMCount < 1 || k.SMCount > 4096 {
		return fieldErr("key.sm_count", "%d is out of range 1..4096", k.SMCount)
	}
	a, err := launch.ParseArch(r.Arch)
	if err != nil || a.Virtual {
		return fieldErr("arch", "%.32q is not a GPU architecture like sm_90 or sm_90a", r.Arch)
	}
	if strconv.Itoa(a.CC) != m[1]+m[2] {
		return fieldErr("arch", "%s does not match compute capability %s", r.Arch, k.ComputeCapability)
	}
	if err := checkTiming("winner", r.Winner); err != nil {
		return err
	}
	if !sha256Hex.MatchString(r.KernelSHA256) {
		return fieldErr("kernel_sha256", "%.80q is not a SHA-256 in hex", r.KernelSHA256)
	}
	if err := checkLaunch("", r.Kernel, r.Grid, r.Block, r.SharedBytes); err != nil {
		return err
	}
	cubin, err := r.CUBIN.Open()
	if err != nil {
		return fieldErr("cubin_gzip", "%v", err)
	}
	if !bytes.HasPrefix(cubin, []byte("\x7fELF")) {
		return fieldErr("cubin_gzip", "does not start with the ELF magic number")
	}
	if err := checkPTX("ptx_gzip", r.PTX); err != nil {
		return err
	}
	if len(r.Command) > maxCommand || !utf8.ValidString(r.Command) || strings.ContainsFunc(r.Command, unicode.IsControl) {
		return fieldErr("command", "not a single line of text of at most %d bytes", maxCommand)
	}
	if fb := r.Fallback; fb != nil {
		if a, err := launch.ParseArch(fb.Arch); err != nil || !a.Virtual {
			return fieldErr("fallback.arch", "%.32q is not a virtual architecture like compute_80", fb.Arch)
		}
		if err := checkTiming("fallback.timing", fb.Timing); err != nil {
			return err
		}
		if !sha256Hex.MatchString(fb.KernelSHA256) {
			return fieldErr("fallback.kernel_sha256", "%.80q is not a SHA-256 in hex", fb.KernelSHA256)
		}
		if err := checkLaunch("fallback.", fb.Kernel, fb.Grid, fb.Block, fb.SharedBytes); err != nil {
			return err
		}
		if err := checkPTX("fallback.ptx_gzip", fb.PTX); err != nil {
			return err
		}
	}
	return checkSummary(r.Summary)
}

// checkSummary checks the report's figures: short text, counts of at most
// maxCounts statuses, at most maxRanked ranked candidates each with a
// plausible time and error.
func checkSummary(s Summary) error {
	if !(s.DurationS >= 0 && s.DurationS <= maxMS) {
		return fieldErr("summary.duration_s", "%v is not a duration in [0, %g] s", s.DurationS, float64(maxMS))
	}
	for _, ph := range []struct {
		name string
		s    float64
	}{{"setup_s", s.Phases.SetupS}, {"enumerate_s", s.Phases.EnumerateS}, {"compile_s", s.Phases.CompileS}, {"measure_s", s.Phases.MeasureS}} {
		if !(ph.s >= 0 && ph.s <= maxMS) {
			return fieldErr("summary.phases."+ph.name, "%v is not a duration in [0, %g] s", ph.s, float64(maxMS))
		}
	}
	if a, err := launch.ParseArch(s.DeviceArch); s.DeviceArch != "" && (err != nil || a.Virtual) {
		return fieldErr("summary.device_arch", "%.32q is not a GPU architecture like sm_90", s.DeviceArch)
	}
	if s.ClockMHz < 0 || s.ClockMHz > 1e5 {
		return fieldErr("summary.clock_mhz", "%d is out of range 0..100000", s.ClockMHz)
	}
	if !(s.MemoryGBps >= 0 && s.MemoryGBps <= 1e6) {
		return fieldErr("summary.memory_gbps", "%v is out of range [0, 1e6]", s.MemoryGBps)
	}
	if len(s.Counts) > maxCounts {
		return fieldErr("summary.counts", "%d entries, at most %d", len(s.Counts), maxCounts)
	}
	for i, c := range s.Counts {
		if len(c.Status) > maxTextBytes || !identifier.MatchString(c.Status) {
			return fieldErr(fmt.Sprintf("summary.counts[%d].status", i), "%.64q is not a status", c.Status)
		}
		if c.N < 0 || c.N > 1<<24 {
			return fieldErr(fmt.Sprintf("summary.counts[%d].n", i), "%d is out of range 0..%d", c.N, 1<<24)
		}
	}
	for _, list := range []struct {
		name string
		ms   []Measured
	}{{"summary.top", s.Top}, {"summary.best_per_family", s.BestPerFamily}} {
		if len(list.ms) > maxRanked {
			return fieldErr(list.name, "%d entries, at most %d", len(list.ms), maxRanked)
		}
		for i, m := range list.ms {
			if err := checkMeasured(fmt.Sprintf("%s[%d]", list.name, i), m); err != nil {
				return err
			}
		}
	}
	for _, f := range []struct{ name, value string }{{"summary.tie_note", s.TieNote}, {"summary.no_fallback", s.NoFallback}} {
		if f.value != "" {
			if err := checkText(f.value, maxCommand); err != nil {
				return &FieldError{Field: f.name, Err: err}
			}
		}
	}
	return nil
}

func checkMeasured(field string, m Measured) error {
	if err := checkText(m.ID, maxCommand); err != nil {
		return &FieldError{Field: field + ".id", Err: err}
	}
	if f := m.Family(); !identifier.MatchString(f) {
		return fieldErr(field+".id", "%.64q does not start with a family name", m.ID)
	}
	for _, t := range []struct {
		name string
		v    float64
	}{{"median_ms", m.MedianMS}, {"p10_ms", m.P10MS}, {"p90_ms", m.P90MS}} {
		if !(t.v >= 0 && t.v <= maxMS) {
			return fieldErr(field+"."+t.name, "%v is not a time in [0, %g] ms", t.v, float64(maxMS))
		}
	}
	if !(m.RelError >= 0 && m.RelError <= 1) {
		return fieldErr(field+".rel_error", "%v is not a relative error in [0, 1]", m.RelError)
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"runs", m.Runs}, {"registers", m.Registers}, {"spill_stores", m.SpillStores}, {"spill_loads", m.SpillLoads},
		{"shared_bytes", m.SharedBytes}, {"threads", m.Threads}, {"max_clusters", m.MaxClusters}} {
		if n.v < 0 || n.v > 1<<24 {
			return fieldErr(field+"."+n.name, "%d is out of range 0..%d", n.v, 1<<24)
		}
	}
	return nil
}

// checkText accepts non-empty valid UTF-8 of at most max bytes without
// control characters.
func checkText(s string, max int) error {
	switch {
	case s == "":
		return fmt.Errorf("empty")
	case len(s) > max:
		return fmt.Errorf("%d bytes, at most %d", len(s), max)
	case !utf8.ValidString(s):
		return fmt.Errorf("not valid UTF-8")
	case strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("%.64q holds a control character", s)
	}
	return nil
}

func checkTiming(field string, t Timing) error {
	if len(t.Family) > maxTextBytes || !identifier.MatchString(t.Family) {
		return fieldErr(field+".family", "%.64q is not a family name", t.Family)
	}
	if len(t.Config) > maxConfigKnobs {
		return fieldErr(field+".config", "%d knobs, at most %d", len(t.Config), maxConfigKnobs)
	}
	for name, v := range t.Config {
		if len(name) > maxTextBytes || !identifier.MatchString(name) {
			return fieldErr(field+".config", "%.64q is not a knob name", name)
		}
		if v < 0 || v > 1<<24 {
			return fieldErr(field+".config."+name, "%d is out of range 0..%d", v, 1<<24)
		}
	}
	if !(t.MedianMS > 0 && t.MedianMS <= maxMS) { // also refuses NaN
		return fieldErr(field+".median_ms", "%v is not a time in (0, %g] ms", t.MedianMS, float64(maxMS))
	}
	if !(t.SpreadMS >= 0 && t.SpreadMS <= maxMS) {
		return fieldErr(field+".spread_ms", "%v is not a spread in [0, %g] ms", t.SpreadMS, float64(maxMS))
	}
	if !(t.RelError >= 0 && t.RelError <= 1) {
		return fieldErr(field+".rel_error", "%v is not a relative error in [0, 1]", t.RelError)
	}
	return nil
}

func checkLaunch(prefix, kernel string, grid, block [3]int, shared int) error {
	if len(kernel) > maxTextBytes || !identifier.MatchString(kernel) {
		return fieldErr(prefix+"kernel", "%.64q is not a kernel name", kernel)
	}
	for i, lim := range [3]int{MaxGridX, MaxGridYZ, MaxGridYZ} {
		if grid[i] < 1 || grid[i] > lim {
			return fieldErr(fmt.Sprintf("%sgrid[%d]", prefix, i), "%d is out of range 1..%d", grid[i], lim)
		}
	}
	for i, lim := range [3]int{MaxBlockXY, MaxBlockXY, MaxBlockZ} {
		if block[i] < 1 || block[i] > lim {
			return fieldErr(fmt.Sprintf("%sblock[%d]", prefix, i), "%d is out of range 1..%d", block[i], lim)
		}
	}
	if n := block[0] * block[1] * block[2]; n > MaxThreads { // at most 1024·1024·64: no overflow
		return fieldErr(prefix+"block", "%d threads, at most %d", n, MaxThreads)
	}
	if shared < 0 || shared > MaxSharedBytes {
		return fieldErr(prefix+"shared_bytes", "%d is out of range 0..%d", shared, MaxSharedBytes)
	}
	return nil
}

// checkPTX accepts gzip of text that starts with a comment (the
// "Generated by NVIDIA NVVM Compiler" header) or the .version directive
// and holds a .version directive.
func checkPTX(field string, gz Gzipped) error {
	data, err := gz.Open()
	if err != nil {
		return fieldErr(field, "%v", err)
	}
	ptx := string(data)
	switch {
	case len(ptx) > MaxCodeBytes:
		return fieldErr(field, "%d bytes, at most %d", len(ptx), MaxCodeBytes)
	case !utf8.ValidString(ptx) || strings.IndexByte(ptx, 0) >= 0:
		return fieldErr(field, "not text")
	case !strings.HasPrefix(ptx, "//") && !strings.HasPrefix(ptx, ".version"):
		return fieldErr(field, "does not start with a PTX header comment or .version")
	case !strings.HasPrefix(ptx, ".version") && !strings.Contains(ptx, "\n.version"):
		return fieldErr(field, "has no .version directive")
	}
	return nil
}

// canonical is the content a record's checksum covers: its compact JSON
// encoding (struct fields in declaration order, map keys sorted, images
// as their gzip bytes, no HTML escaping), without the checksum itself.
func canonical(r Record) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Checksum returns r's checksum as files store it: "sha256:" and the hex
// SHA-256 of its canonical JSON encoding.
func (r *Record) Checksum() (string, error) {
	data, err := canonical(*r)
	if err != nil {
		return "", fmt.Errorf("checksum: %w", err)
	}
	sum := sha256.Sum256(data)
	return checksumPrefix + hex.EncodeToString(sum[:]), nil
}

// compareVersions orders version strings such as "13.0", "12.4.131" or
// "550.54.15" by their numeric components, then as plain strings.
func compareVersions(a, b string) int {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	}
	pa, pb := split(a), split(b)
	for i := range min(len(pa), len(pb)) {
		x, errx := strconv.ParseUint(pa[i], 10, 64)
		y, erry := strconv.ParseUint(pb[i], 10, 64)
		if errx != nil || erry != nil {
			break
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	if len(pa) != len(pb) {
		if len(pa) < len(pb) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}
