package tunecache

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Gzipped is a gzip stream, as a record keeps its CUBIN and PTX: base64 in
// JSON, like any []byte. A record holds the compressed bytes as read, so
// that its checksum does not depend on the compressor; Open gives the
// content back.
type Gzipped []byte

// Gzip compresses data at the best compression, with an empty gzip header
// (no name, no time), so that the same data give the same bytes.
func Gzip(data []byte) Gzipped {
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil { // only for a bad level
		panic(err)
	}
	w.Write(data) // writes to a bytes.Buffer do not fail
	w.Close()
	return Gzipped(b.Bytes())
}

// Open decompresses g, refusing content of more than MaxCodeBytes.
func (g Gzipped) Open() ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(g))
	if err != nil {
		return nil, fmt.Errorf("not gzip: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxCodeBytes+1))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if len(data) > MaxCodeBytes {
		return nil, fmt.Errorf("more than %d bytes uncompressed", MaxCodeBytes)
	}
	return data, nil
}

// TopN is how many of the fastest candidates a Summary keeps.
const TopN = 20

// Summary is what a record keeps of its search for the report: when and
// how long it ran, the device's figures the report's floors use, how many
// candidates ended in each status, the fastest candidates and the best of
// each family.
type Summary struct {
	TunedAt    time.Time `json:"tuned_at,omitzero"`   // when tuning started; zero when not recorded
	DurationS  float64   `json:"duration_s,omitzero"` // how long it took, in seconds; 0 when not recorded
	DeviceArch string    `json:"device_arch"`         // the device's architecture, "sm_90"
	ClockMHz   int       `json:"clock_mhz"`           // the device's SM clock
	MemoryGBps float64   `json:"memory_gbps"`         // its measured copy bandwidth, bytes read + written
	Phases     Phases    `json:"phases,omitzero"`     // where the tuning time went; zero when not recorded
	Counts     []Count   `json:"counts"`              // candidates per final status
	// Top lists the TopN fastest measured candidates, fastest first, and
	// the winner after them if it is not among them.
	Top []Measured `json:"top"`
	// BestPerFamily lists the fastest measured candidate of each family,
	// fastest first.
	BestPerFamily []Measured `json:"best_per_family"`
	TieNote       string     `json:"tie_note,omitempty"`    // how a near-tie for the winner was broken
	NoFallback    string     `json:"no_fallback,omitempty"` // why there is no fallback
	// SearchRevision is the revision of the search that tuned the record
	// (autotune.SearchRevision); 0 for records written before revisions
	// were kept (revision 1's search).
	SearchRevision int `json:"search_revision,omitzero"`
}

// Phases splits a search's wall time, in seconds: starting the worker
// and compiling the checking kernels, enumerating the configurations,
// waiting for NVRTC compiles, measuring on the GPU.
type Phases struct {
	SetupS     float64 `json:"setup_s,omitzero"`
	EnumerateS float64 `json:"enumerate_s,omitzero"`
	CompileS   float64 `json:"compile_s,omitzero"`
	MeasureS   float64 `json:"measure_s,omitzero"`
}

// Count is how many candidates ended with one status ("ok", "rejected",
// "compile", ...).
type Count struct {
	Status string `json:"status"`
	N      int    `json:"n"`
}

// Measured is a candidate that was checked and timed.
type Measured struct {
	ID          string  `json:"id"` // family/Knob=V,...
	MedianMS    float64 `json:"median_ms"`
	P10MS       float64 `json:"p10_ms"`
	P90MS       float64 `json:"p90_ms"`
	Runs        int     `json:"runs"`
	RelError    float64 `json:"rel_error"` // ‖out−ref‖/‖ref‖
	Registers   int     `json:"registers"`
	SpillStores int     `json:"spill_stores"` // bytes
	SpillLoads  int     `json:"spill_loads"`  // bytes
	SharedBytes int     `json:"shared_bytes"` // dynamic + static
	Threads     int     `json:"threads"`      // per block
	// MaxClusters is, for a kernel of thread-block clusters, how many of
	// its clusters the driver runs at once (cuOccupancyMaxActiveClusters;
	// a grid of more takes waves); 0 otherwise and in records tuned before
	// convgen asked.
	MaxClusters int `json:"max_clusters,omitempty"`
}

// Family is the family part of the candidate's ID.
func (m Measured) Family() string {
	f, _, _ := strings.Cut(m.ID, "/")
	return f
}

// Rank fills s.Top and s.BestPerFamily from every measured candidate of a
// search and the winner's ID. Ties keep the order of measured.
func (s *Summary) Rank(measured []Measured, winner string) {
	sorted := slices.Clone(measured)
	slices.SortStableFunc(sorted, func(a, b Measured) int { return cmp.Compare(a.MedianMS, b.MedianMS) })
	s.Top = slices.Clone(sorted[:min(TopN, len(sorted))])
	if !slices.ContainsFunc(s.Top, func(m Measured) bool { return m.ID == winner }) {
		if i := slices.IndexFunc(sorted, func(m Measured) bool { return m.ID == winner }); i >= 0 {
			s.Top = append(s.Top, sorted[i])
		}
	}
	s.BestPerFamily = nil
	seen := map[string]bool{}
	for _, m := range sorted {
		if f := m.Family(); !seen[f] {
			seen[f] = true
			s.BestPerFamily = append(s.BestPerFamily, m)
		}
	}
}
