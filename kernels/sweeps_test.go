package kernels

import (
	"cmp"
	"encoding/csv"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/convgen/convgen/problem"
)

// sweep is one full sweep of testdata: a problem (shape, precision,
// layout) and the median time of each configuration timed, by
// Config.String().
type sweep struct {
	shape     string
	precision problem.Precision
	layout    problem.Layout
	ms        map[string]float64
}

// readSweeps reads a CSV of full sweeps timed on a GPU (shape, precision,
// layout, config, median_ms; testdata/*-sweeps-*.csv), the sweeps in the
// order the file first names them, and fails the test unless it holds
// want of them.
func readSweeps(t *testing.T, file string, want int) []sweep {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []sweep
	at := map[[3]string]int{}
	for _, r := range rows[1:] {
		key := [3]string{r[0], r[1], r[2]}
		ms, err := strconv.ParseFloat(r[4], 64)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, sweep{shape: r[0], precision: problem.Precision(r[1]), layout: problem.Layout(r[2]), ms: map[string]float64{}})
		}
		out[i].ms[r[3]] = ms
	}
	if len(out) != want {
		t.Fatalf("%s: %d sweeps, want %d", file, len(out), want)
	}
	return out
}

// fastest is the sweep's fastest time.
func (s sweep) fastest() float64 {
	best := math.Inf(1)
	for _, v := range s.ms {
		best = min(best, v)
	}
	return best
}

// topRatio sorts cands cheapest first by the families' cost models for p
// (stable: ties in enumeration order, as the search takes them) and
// returns, for n, the fastest time the sweep holds among the n cheapest
// over the sweep's fastest (+Inf where it timed none of them: a candidate
// the sweep did not time counts as a miss).
func (s sweep) topRatio(p problem.Problem, cands []Candidate, lim Limits) func(n int) float64 {
	cost := func(c Candidate) float64 { v, _ := PredictedCost(p, c, lim); return v }
	cands = slices.Clone(cands)
	slices.SortStableFunc(cands, func(a, b Candidate) int { return cmp.Compare(cost(a), cost(b)) })
	best := s.fastest()
	return func(n int) float64 {
		got := math.Inf(1)
		for _, c := range cands[:min(n, len(cands))] {
			if v, ok := s.ms[c.Config.String()]; ok {
				got = min(got, v)
			}
		}
		return got / best
	}
}
