package autotune

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestETA: the estimate is the rate so far times what is left, cut to the
// time the -time budget still allows, and unknown (negative) before the
// first candidate without a budget.
func TestETA(t *testing.T) {
	tests := []struct {
		name        string
		elapsed     time.Duration
		done, total int
		left        time.Duration
		want        time.Duration
	}{
		{"rate", 10 * time.Second, 5, 20, -1, 30 * time.Second},
		{"budget shorter", 10 * time.Second, 5, 20, 12 * time.Second, 12 * time.Second},
		{"budget longer", 10 * time.Second, 5, 20, time.Hour, 30 * time.Second},
		{"nothing yet, budget", 2 * time.Second, 0, 20, time.Minute, time.Minute},
		{"nothing yet, no budget", 2 * time.Second, 0, 20, -1, -1},
		{"finished", 10 * time.Second, 20, 20, time.Minute, 0},
		{"budget spent", 10 * time.Second, 5, 20, 0, 0},
	}
	for _, tt := range tests {
		if got := eta(tt.elapsed, tt.done, tt.total, tt.left); got != tt.want {
			t.Errorf("%s: eta(%v, %d, %d, %v) = %v, want %v", tt.name, tt.elapsed, tt.done, tt.total, tt.left, got, tt.want)
		}
	}
}

// fakeClock advances by step at every reading.
func fakeClock(step time.Duration) func() time.Time {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		now = now.Add(step)
		return now
	}
}

// TestProgressPlainLines: a writer that is not a terminal (a CI log) gets
// no bar and no escape codes: a header, one line per candidate and a total.
func TestProgressPlainLines(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b)
	if p.bar {
		t.Fatal("a bytes.Buffer is taken for a terminal")
	}
	p.now = fakeClock(time.Second)
	p.start(10, 8, 3, time.Time{})
	ok := &Trial{ID: "direct/A=1", Status: StatusOK, MedianMS: 1.5}
	p.trial(ok, ok)
	p.trial(&Trial{ID: "direct/A=2", Status: StatusFault}, ok)
	p.done()
	want := "tuning: 10 configs, 2 rejected statically, measuring up to 3\n" +
		"[  1/3     1s] 1.500 ms  best 1.500 ms, 0 failed  direct/A=1\n" +
		"[  2/3     2s] fault     best 1.500 ms, 1 failed  direct/A=2\n" +
		"tuning: measured 2 candidates in 3s\n"
	if got := b.String(); got != want {
		t.Errorf("progress lines:\n%s\nwant:\n%s", got, want)
	}
}

// TestProgressBar: on a terminal each candidate rewrites one line (carriage
// return, erase to the end) with the bar, the best time and the ETA, and
// the line is ended once at the finish.
func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b)
	p.bar, p.width = true, 100
	p.now = fakeClock(10 * time.Second)
	p.start(4, 4, 0, time.Date(2026, 1, 1, 0, 0, 25, 0, time.UTC)) // 15 s of budget left at the first candidate
	ok := &Trial{ID: "direct/A=1", Status: StatusOK, MedianMS: 0.25}
	p.trial(ok, ok)
	p.done()
	out := b.String()
	for _, w := range []string{"\r[==========", "1/4", "best 0.250 ms", "10s elapsed", "ETA 5s", "\x1b[K\n", "tuning: measured 1 candidates"} {
		if !strings.Contains(out, w) {
			t.Errorf("bar output %q lacks %q", out, w)
		}
	}
	if strings.Contains(out, "direct/A=1") {
		t.Errorf("bar output %q has a per-candidate line", out)
	}
	if got := barLine(30, 1, 4, time.Second, -1, "none yet", 0); strings.Contains(got, "[") || !strings.Contains(got, "ETA ?") {
		t.Errorf("narrow terminal: %q, want no bar and an unknown ETA", got)
	}
}
