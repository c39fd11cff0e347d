package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

func flagship(t *testing.T) problem.Problem {
	t.Helper()
	s, err := problem.ParseShape("N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2")
	if err != nil {
		t.Fatal(err)
	}
	return problem.Problem{Shape: s, Precision: problem.FP32, Layout: problem.NCHW}
}

// flagshipRecord is a record whose winner, direct/A=1, ran in 2 ms.
func flagshipRecord() tunecache.Record {
	win := tunecache.Measured{ID: "direct/A=1", MedianMS: 2, P10MS: 1.9, P90MS: 2.1, Runs: 60, RelError: 3e-7, Registers: 80}
	slow := tunecache.Measured{ID: "direct/A=2", MedianMS: 4, P10MS: 3.9, P90MS: 4.2, Runs: 60, RelError: 3e-7}
	mma := tunecache.Measured{ID: "mma/B=1", MedianMS: 3, P10MS: 2.9, P90MS: 3.2, Runs: 60, RelError: 1e-6}
	rec := tunecache.Record{
		Key:            tunecache.Key{Device: "NVIDIA H200", SMCount: 132, Driver: "13.0", NVRTCVersion: "13.0"},
		ConvgenVersion: "0.2.0", KernelSHA256: strings.Repeat("ab", 32),
		Winner: tunecache.Timing{Family: "direct", Config: map[string]int{"A": 1}, MedianMS: 2},
		Summary: tunecache.Summary{DeviceArch: "sm_90", ClockMHz: 1980, MemoryGBps: 4300,
			TunedAt: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC), DurationS: 300,
			Counts: []tunecache.Count{{Status: "ok", N: 3}, {Status: "wrong", N: 1}, {Status: "rejected", N: 2}},
			Top:    []tunecache.Measured{win, mma, slow}, BestPerFamily: []tunecache.Measured{win, mma}},
	}
	return rec
}

func TestNewFloorsAndRows(t *testing.T) {
	d := New(flagshipRecord(), flagship(t), "convgen -shape ...")
	// 53.97 GFLOP at 132 × 256 × 1.98 GHz = 66.9 TFLOP/s: 0.807 ms.
	if math.Abs(d.GFLOP-53.97) > 0.01 || math.Abs(d.ComputeFloorMS-0.807) > 0.001 {
		t.Errorf("GFLOP %.3f, compute floor %.4f ms", d.GFLOP, d.ComputeFloorMS)
	}
	if math.Abs(d.MBytes-451.7) > 0.1 || math.Abs(d.MemoryFloorMS-0.105) > 0.001 {
		t.Errorf("MB %.1f, memory floor %.4f ms", d.MBytes, d.MemoryFloorMS)
	}
	w, ok := d.WinnerRow()
	if !ok || w.ID != "direct/A=1" {
		t.Fatalf("winner row %v %v", w, ok)
	}
	if math.Abs(w.GFLOPS-26986) > 5 || math.Abs(w.Roofline-0.807/2) > 0.001 {
		t.Errorf("winner GFLOP/s %.0f, roofline %.3f", w.GFLOPS, w.Roofline)
	}
	if len(d.Top) != 3 || len(d.BestPerFamily) != 2 || d.SchemaVersion != SchemaVersion {
		t.Errorf("%d top rows, %d best per family, schema %d", len(d.Top), len(d.BestPerFamily), d.SchemaVersion)
	}
}

func TestPeaks(t *testing.T) {
	dev := Device{SMs: 132, ClockMHz: 1980}
	fp32, _ := Peak(problem.FP32, dev)
	tf32, _ := Peak(problem.TF32, dev)
	x3, _ := Peak(problem.TF32x3, dev)
	if math.Abs(fp32-66.9e12) > 0.1e12 || math.Abs(tf32/fp32-8) > 1e-9 || math.Abs(x3*3-tf32) > 1 {
		t.Errorf("peaks fp32 %.3g tf32 %.3g 3xtf32 %.3g", fp32, tf32, x3)
	}
}

func TestMarkdownAndJSON(t *testing.T) {
	p := flagship(t)
	d := New(flagshipRecord(), p, "convgen -shape X")
	md := string(d.Markdown())
	for _, want := range []string{"`direct/A=1`: median 2.000 ms", "reproduce: `convgen -shape X`", "3 ok, 1 wrong, 2 rejected",
		"on 2026-11-25 10:00 UTC in 5m0s", "### The 3 fastest", "### The fastest of each family", "kernel hash abababababab"} {
		if !strings.Contains(md, want) {
			t.Errorf("REPORT.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, "`mma/B=1`") > strings.Index(md, "`direct/A=2`") {
		t.Error("rows are not in the record's order, fastest first")
	}
	if strings.Contains(strings.ToLower(md), "fallback") {
		t.Error("REPORT.md mentions a fallback the record does not have")
	}
	// A fallback is named with its measurement; its absence with the reason.
	rec := flagshipRecord()
	rec.Fallback = &tunecache.Fallback{Timing: tunecache.Timing{Family: "mma", Config: map[string]int{"B": 1}, MedianMS: 4, RelError: 1e-6},
		Arch: "compute_80", Launch: launch.Launch{SharedBytes: 1024}}
	if md := string(New(rec, p, "x").Markdown()); !strings.Contains(md, "runs its fallback, `mma/B=1`, as PTX for compute_80") ||
		!strings.Contains(md, "ran in 4.000 ms") {
		t.Errorf("REPORT.md does not name the fallback:\n%s", md)
	}
	rec.Fallback, rec.Summary.NoFallback = nil, "nothing fits"
	if md := string(New(rec, p, "x").Markdown()); !strings.Contains(md, "No fallback for other GPUs: nothing fits.") {
		t.Errorf("REPORT.md does not say why there is no fallback:\n%s", md)
	}
	// A record without a tuning date or duration says nothing of them.
	rec.Summary.TunedAt, rec.Summary.DurationS = time.Time{}, 0
	if md := string(New(rec, p, "x").Markdown()); strings.Contains(md, " on 0001") || strings.Contains(md, " in 0s") {
		t.Errorf("REPORT.md shows an unrecorded date or duration:\n%s", md)
	}
	js, err := d.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js, []byte(`"schema_version": 3`)) {
		t.Errorf("report.json has no schema_version 3:\n%.300s", js)
	}
	var back Data
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("report.json does not parse: %v", err)
	}
	js2, _ := back.JSON()
	if !bytes.Equal(js, js2) || !bytes.Equal(back.Markdown(), d.Markdown()) {
		t.Error("a report decoded from report.json renders differently")
	}
}

// TestSummaryFirst: REPORT.md opens with the summary (winner, runners-up
// with how much slower, the best of each family, the tuning date and the
// time of each phase, the floors, the counts) before any table.
func TestSummaryFirst(t *testing.T) {
	rec := flagshipRecord()
	rec.Summary.Phases = tunecache.Phases{SetupS: 2, EnumerateS: 0.25, CompileS: 40, MeasureS: 250}
	md := string(New(rec, flagship(t), "convgen -shape X").Markdown())
	summary := strings.Index(md, "## Summary")
	table := strings.Index(md, "| candidate |")
	if summary < 0 || table < summary {
		t.Fatalf("REPORT.md has no summary before the tables:\n%s", md)
	}
	head := md[summary:table]
	for _, want := range []string{
		"- winner: `direct/A=1`: median 2.000 ms",
		"- runners-up: `mma/B=1` 3.000 ms (1.50× the winner's time); `direct/A=2` 4.000 ms (2.00× the winner's time)",
		"  - direct: `direct/A=1` 2.000 ms\n", "  - mma: `mma/B=1` 3.000 ms (1.50×",
		"- tuned on 2026-11-25 10:00 UTC in 5m0s (setup 2s, enumerating 250ms, waiting for compiles 40s, measuring 4m10s)",
		"- floors: compute 0.807 ms", "- candidates: 3 ok, 1 wrong, 2 rejected",
	} {
		if !strings.Contains(head, want) {
			t.Errorf("the summary lacks %q:\n%s", want, head)
		}
	}
	d := New(rec, flagship(t), "x")
	js, _ := d.JSON()
	if !bytes.Contains(js, []byte(`"measure_s": 250`)) {
		t.Errorf("report.json lacks the phases:\n%s", js)
	}
}

// TestExecutedNote checks the note on a Winograd winner: its own arithmetic
// (16 points × 48 phase channels per 2×2 tile and channel on the flagship:
// 29.60 GFLOP, 1.82× fewer than 53.97) and its rate; no note for a direct
// winner.
func TestExecutedNote(t *testing.T) {
	p := flagship(t)
	rec := flagshipRecord()
	if note := New(rec, p, "convgen").executedNote(); note != "" {
		t.Errorf("direct winner: note %q, want none", note)
	}
	cfg := kernels.Config{"TileT": 32, "TileK": 48, "ThreadT": 8, "ThreadK": 8, "Chunk": 12, "StepsPerBlock": 96}
	id := kernels.Candidate{Family: "winograd", Config: cfg}.ID()
	rec.Winner = tunecache.Timing{Family: "winograd", Config: cfg, MedianMS: 1}
	rec.Summary.Top = append(rec.Summary.Top, tunecache.Measured{ID: id, MedianMS: 1, Runs: 60})
	md := string(New(rec, p, "convgen").Markdown())
	for _, want := range []string{"does 29.60 GFLOP of multiply-adds where the direct convolution does 53.97 (1.82× fewer)",
		"29.6 TFLOP/s of its own arithmetic, 44% of the 66.9 TFLOP/s peak"} {
		if !strings.Contains(md, want) {
			t.Errorf("REPORT.md lacks %q:\n%s", want, md)
		}
	}
}

// TestFP32PointsTo3xTF32: an fp32 report says that its arithmetic is
// FFMA and names 3xtf32 as the tensor-core precision of the same bound;
// a tf32 report does not.
func TestFP32PointsTo3xTF32(t *testing.T) {
	p := flagship(t)
	md := string(New(flagshipRecord(), p, "convgen").Markdown())
	if !strings.Contains(md, "strict FP32 arithmetic (FFMA)") || !strings.Contains(md, "`-precision 3xtf32`") {
		t.Errorf("fp32 report lacks the 3xtf32 note:\n%.600s", md)
	}
	p.Precision = problem.TF32
	if md := string(New(flagshipRecord(), p, "convgen").Markdown()); strings.Contains(md, "3xtf32") {
		t.Errorf("tf32 report names 3xtf32")
	}
}

// TestMarkdownClusters: a winner in thread-block clusters says how many
// of them the driver runs at once; a winner without clusters says nothing
// of clusters.
func TestMarkdownClusters(t *testing.T) {
	rec := flagshipRecord()
	if md := string(New(rec, flagship(t), "convgen").Markdown()); strings.Contains(md, "clusters") {
		t.Errorf("a winner without clusters mentions them:\n%s", md)
	}
	rec.Summary.Top[0].MaxClusters = 15
	md := string(New(rec, flagship(t), "convgen").Markdown())
	if !strings.Contains(md, "the driver runs 15 of them at once") {
		t.Errorf("the report lacks the winner's 15 clusters at once:\n%s", md)
	}
}
