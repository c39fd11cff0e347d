package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

func flagshipResult(t *testing.T) *autotune.Result {
	t.Helper()
	s, err := problem.ParseShape("N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2")
	if err != nil {
		t.Fatal(err)
	}
	win := autotune.Trial{ID: "direct/a", Family: "direct", Status: autotune.StatusOK, MedianMS: 2, P10MS: 1.9, P90MS: 2.1, Runs: 60, RelError: 3e-7, Registers: 80}
	return &autotune.Result{
		Problem: problem.Problem{Shape: s, Precision: problem.FP32, Layout: problem.NCHW},
		Device:  gpu.Info{Name: "NVIDIA H200", Arch: "sm_90", SMs: 132, ClockMHz: 1980, MemoryGBps: 4300},
		NVRTC:   "13.0", TemplateVersion: "abc",
		Trials: []autotune.Trial{
			{ID: "direct/slow", Status: autotune.StatusOK, MedianMS: 4},
			win,
			{ID: "direct/bad", Status: autotune.StatusWrong, Reason: "error 0.5 | bound 1e-05\nsecond line"},
			{ID: "direct/rej", Status: autotune.StatusRejected, Reason: "threads: too many"},
			{ID: "direct/later", Status: autotune.StatusSkipped},
		},
		Winner: &win,
	}
}

func TestNewFloorsAndRows(t *testing.T) {
	d := New(flagshipResult(t), "convgen -shape ...", "0.1.0")
	// 53.97 GFLOP at 132 × 256 × 1.98 GHz = 66.9 TFLOP/s: 0.807 ms.
	if math.Abs(d.GFLOP-53.97) > 0.01 || math.Abs(d.ComputeFloorMS-0.807) > 0.001 {
		t.Errorf("GFLOP %.3f, compute floor %.4f ms", d.GFLOP, d.ComputeFloorMS)
	}
	if math.Abs(d.MBytes-451.7) > 0.1 || math.Abs(d.MemoryFloorMS-0.105) > 0.001 {
		t.Errorf("MB %.1f, memory floor %.4f ms", d.MBytes, d.MemoryFloorMS)
	}
	w, ok := d.WinnerRow()
	if !ok || w.ID != "direct/a" {
		t.Fatalf("winner row %v %v", w, ok)
	}
	if math.Abs(w.GFLOPS-26986) > 5 || math.Abs(w.Roofline-0.807/2) > 0.001 {
		t.Errorf("winner GFLOP/s %.0f, roofline %.3f", w.GFLOPS, w.Roofline)
	}
	if len(d.Candidates) != 3 || d.Skipped != 1 {
		t.Errorf("%d candidate rows (want 3: rejected and skipped are not rows), %d skipped", len(d.Candidates), d.Skipped)
	}
}

func TestPeaks(t *testing.T) {
	dev := gpu.Info{SMs: 132, ClockMHz: 1980}
	fp32, _ := Peak(problem.FP32, dev)
	tf32, _ := Peak(problem.TF32, dev)
	x3, _ := Peak(problem.TF32x3, dev)
	if math.Abs(fp32-66.9e12) > 0.1e12 || math.Abs(tf32/fp32-8) > 1e-9 || math.Abs(x3*3-tf32) > 1 {
		t.Errorf("peaks fp32 %.3g tf32 %.3g 3xtf32 %.3g", fp32, tf32, x3)
	}
}

func TestMarkdownAndJSON(t *testing.T) {
	d := New(flagshipResult(t), "convgen -shape X", "0.1.0")
	d.SetRejected([]kernels.Candidate{{Family: "direct", Config: kernels.Config{"A": 1}, Rejected: "threads: 2048 per block"},
		{Family: "direct", Config: kernels.Config{"A": 2}, Rejected: "threads: 4096 per block"},
		{Family: "direct", Config: kernels.Config{"A": 3}}})
	md := string(d.Markdown())
	for _, want := range []string{"`direct/a`: median 2.000 ms", "reproduce: `convgen -shape X`", "| threads | 2 |", "1 wrong"} {
		if !strings.Contains(md, want) {
			t.Errorf("REPORT.md lacks %q", want)
		}
	}
	// Faster rows first; a failure's reason is kept on one table row.
	if strings.Index(md, "`direct/a`") > strings.Index(md, "`direct/slow`") {
		t.Error("rows are not sorted fastest first")
	}
	if strings.Contains(md, "second line") && !strings.Contains(md, "bound 1e-05 second line") {
		t.Error("a multi-line reason broke the table row")
	}
	if strings.Contains(strings.ToLower(md), "fallback") {
		t.Error("REPORT.md mentions a fallback the result does not have")
	}
	// A fallback is named with its measurement; its absence with the reason.
	res := flagshipResult(t)
	res.Fallback = &autotune.Fallback{Trial: &res.Trials[0], Arch: autotune.FallbackArch, PTX: ".target sm_80"}
	if md := string(New(res, "x", "0.1.0").Markdown()); !strings.Contains(md, "runs its fallback, `direct/slow`, as PTX for compute_80") ||
		!strings.Contains(md, "ran in 4.000 ms") {
		t.Errorf("REPORT.md does not name the fallback:\n%s", md)
	}
	res.Fallback, res.FallbackNote = nil, "nothing fits"
	if md := string(New(res, "x", "0.1.0").Markdown()); !strings.Contains(md, "No fallback for other GPUs: nothing fits.") {
		t.Errorf("REPORT.md does not say why there is no fallback:\n%s", md)
	}
	js, err := d.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Data
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("report.json does not parse: %v", err)
	}
	if back.Winner != "direct/a" || len(back.Rejected) != 2 {
		t.Errorf("round trip: winner %q, %d rejected", back.Winner, len(back.Rejected))
	}
	js2, _ := back.JSON()
	if !bytes.Equal(js, js2) || !bytes.Equal(back.Markdown(), d.Markdown()) {
		t.Error("a report decoded from report.json renders differently (cache replays would not be byte-identical)")
	}
}

// TestExecutedNote checks the note on a Winograd winner: its own arithmetic
// (16 points × 48 phase channels per 2×2 tile and channel on the flagship:
// 29.60 GFLOP, 1.82× fewer than 53.97) and its rate; no note for a direct
// winner.
func TestExecutedNote(t *testing.T) {
	res := flagshipResult(t)
	if note := New(res, "convgen", "0.1.0").executedNote(); note != "" {
		t.Errorf("direct winner: note %q, want none", note)
	}
	win := autotune.Trial{ID: "winograd/a", Family: "winograd", Status: autotune.StatusOK, MedianMS: 1, Runs: 60,
		Config: kernels.Config{"TileT": 32, "TileK": 48, "ThreadT": 8, "ThreadK": 8, "Chunk": 12, "StepsPerBlock": 96}}
	res.Trials = append(res.Trials, win)
	res.Winner = &win
	d := New(res, "convgen", "0.1.0")
	md := string(d.Markdown())
	for _, want := range []string{"does 29.60 GFLOP of multiply-adds where the direct convolution does 53.97 (1.82× fewer)",
		"29.6 TFLOP/s of its own arithmetic, 44% of the 66.9 TFLOP/s peak"} {
		if !strings.Contains(md, want) {
			t.Errorf("REPORT.md lacks %q:\n%s", want, md)
		}
	}
}
