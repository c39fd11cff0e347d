package report

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Candidate is one candidate of a search as candidates.csv and
// candidates.svg show it: every candidate, measured or not. Only a tuning
// run has them all; a record keeps the Summary alone.
type Candidate struct {
	ID          string
	Family      string
	Status      string // "ok", "rejected", "compile", "wrong", ...
	Reason      string // why it failed or was rejected
	Registers   int
	SpillBytes  int // spill stores, bytes
	SharedBytes int
	MedianMS    float64 // measured ones only (Status "ok")
	P10MS       float64
	P90MS       float64
	RelError    float64
}

// StatusOK is the status of a checked and timed candidate.
const StatusOK = "ok"

// sortCandidates orders the measured candidates fastest first, then the
// others by status, keeping their order within a status.
func sortCandidates(cands []Candidate) []Candidate {
	out := slices.Clone(cands)
	slices.SortStableFunc(out, func(a, b Candidate) int {
		aok, bok := a.Status == StatusOK, b.Status == StatusOK
		switch {
		case aok && bok:
			return cmp.Compare(a.MedianMS, b.MedianMS)
		case aok:
			return -1
		case bok:
			return 1
		}
		return strings.Compare(a.Status, b.Status)
	})
	return out
}

// csvHeader is candidates.csv's first row.
var csvHeader = []string{"id", "family", "status", "reason", "registers", "spill_bytes", "shared_bytes",
	"median_ms", "p10_ms", "p90_ms", "tflops", "roofline_fraction", "rel_error"}

// CSV renders candidates.csv: a header row, then one row per candidate,
// the measured ones fastest first, then the others by status. Figures a
// candidate does not have (times of one never measured, resources of one
// never compiled) are empty; TFLOP/s and the roofline fraction are computed
// as in the report (direct convolution FLOPs, max(floors) / median).
func (d Data) CSV(cands []Candidate) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(csvHeader); err != nil {
		return nil, fmt.Errorf("candidates.csv: %w", err)
	}
	floor := math.Max(d.ComputeFloorMS, d.MemoryFloorMS)
	num := func(v float64, ok bool) string {
		if !ok {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	integer := func(v int, ok bool) string {
		if !ok {
			return ""
		}
		return strconv.Itoa(v)
	}
	for _, c := range sortCandidates(cands) {
		ok := c.Status == StatusOK && c.MedianMS > 0
		compiled := c.Registers > 0
		row := []string{c.ID, c.Family, c.Status, oneLine(c.Reason),
			integer(c.Registers, compiled), integer(c.SpillBytes, compiled), integer(c.SharedBytes, compiled),
			num(c.MedianMS, ok), num(c.P10MS, ok), num(c.P90MS, ok),
			num(d.GFLOP/c.MedianMS, ok), num(floor/c.MedianMS, ok && floor > 0), num(c.RelError, ok)}
		if err := w.Write(row); err != nil {
			return nil, fmt.Errorf("candidates.csv: %w", err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, fmt.Errorf("candidates.csv: %w", err)
	}
	return b.Bytes(), nil
}

// oneLine joins a multi-line reason (a compiler log) into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
