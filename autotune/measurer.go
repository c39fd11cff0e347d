package autotune

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/convgen/convgen/gpu"
)

// measurer owns the worker process: it starts one, re-starts a fresh one
// after any failure, and sends it candidates.
type measurer struct {
	argv        []string
	opt         Options
	dir         string
	w           *workerProc
	info        gpu.Info
	supportPath string
	seq         int
}

func newMeasurer(opt Options, dir string) (*measurer, error) {
	if len(opt.Worker) == 0 {
		return nil, fmt.Errorf("no worker command")
	}
	m := &measurer{argv: opt.Worker, opt: opt, dir: dir}
	w, err := startWorker(m.argv)
	if err != nil {
		return nil, err
	}
	resp, err := w.call(request{Op: "info"}, 3*time.Minute)
	if err != nil {
		w.stop()
		return nil, fmt.Errorf("GPU worker: %w", err)
	}
	if resp.Error != "" {
		w.stop()
		return nil, fmt.Errorf("GPU worker: %s", resp.Error)
	}
	m.w, m.info = w, resp.Info
	return m, nil
}

// Probe starts a worker, asks it for the device's facts and stops it.
func Probe(worker []string) (gpu.Info, error) {
	m, err := newMeasurer(Options{Worker: worker}, "")
	if err != nil {
		return gpu.Info{}, err
	}
	defer m.close()
	return m.info, nil
}

func (m *measurer) init(supportPath string) error {
	m.supportPath = supportPath
	p := m.opt.Problem
	resp, err := m.w.call(request{Op: "init", Problem: &p, SupportImage: supportPath}, 2*time.Minute)
	if err != nil {
		return fmt.Errorf("GPU worker init: %w", err)
	}
	if resp.Error != "" {
		return fmt.Errorf("GPU worker init: %s", resp.Error)
	}
	return nil
}

// ensure has a live, initialised worker.
func (m *measurer) ensure() error {
	if m.w != nil {
		return nil
	}
	w, err := startWorker(m.argv)
	if err != nil {
		return err
	}
	m.w = w
	if _, err := w.call(request{Op: "info"}, 3*time.Minute); err != nil {
		m.drop()
		return fmt.Errorf("restart GPU worker: %w", err)
	}
	return m.init(m.supportPath)
}

func (m *measurer) drop() {
	if m.w != nil {
		m.w.stop()
		m.w = nil
	}
}

func (m *measurer) close() { m.drop() }

// measure sends one candidate. A worker that dies, faults or times out is
// replaced before the next candidate.
func (m *measurer) measure(t *Trial, opt Options, seed uint32, runs int, cutoffMS float64) (response, error) {
	if err := m.ensure(); err != nil {
		return response{}, err
	}
	path := filepath.Join(m.dir, fmt.Sprintf("cand%05d.cubin", m.seq))
	if err := os.WriteFile(path, t.cubin, 0o644); err != nil {
		return response{}, fmt.Errorf("write cubin: %w", err)
	}
	defer os.Remove(path)
	k := t.kernel
	resp, err := m.w.call(request{Op: "measure", Image: path, Kernel: k.Name, Grid: k.Grid, Block: k.Block,
		Shared: k.SharedBytes, Seed: seed, Warmup: opt.Warmup, Runs: runs, CutoffMS: cutoffMS, Samples: 1024,
		Clusters: strings.Contains(k.Source, "__cluster_dims__")}, opt.Timeout)
	if err != nil {
		if errors.Is(err, errWorkerTimeout) {
			_ = m.w.cmd.Process.Kill() // a hung kernel: no grace period
		}
		m.drop()
		return response{}, err
	}
	if resp.Status == StatusFault {
		m.drop() // it exits by itself; reap it
	}
	if resp.Status == "" {
		m.drop()
		return response{}, fmt.Errorf("worker: %s", resp.Error)
	}
	return resp, nil
}

// progress reports the search as it goes: on a terminal one line
// rewritten in place, a bar with the count, the best time, the failures,
// the elapsed time and an ETA; elsewhere (a pipe, a CI log) one plain line
// per measured candidate.
type progress struct {
	w        io.Writer
	bar      bool      // w is a terminal: draw the bar
	width    int       // the terminal's columns, for the bar
	deadline time.Time // the -time budget's end; zero for none
	began    time.Time
	total    int
	n        int
	failures map[Status]int
	now      func() time.Time
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, failures: map[Status]int{}, now: time.Now}
	if f, ok := w.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(f.Fd())) {
		p.bar, p.width = true, 80
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			p.width = cols
		}
	}
	return p
}

// start begins the count: all configurations, kept of them not rejected,
// measured at most budget (0: all kept), until deadline (zero: none).
func (p *progress) start(all, kept, budget int, deadline time.Time) {
	p.began, p.deadline = p.now(), deadline
	p.total = kept
	if budget > 0 && budget < kept {
		p.total = budget
	}
	if p.w != nil {
		fmt.Fprintf(p.w, "tuning: %d configs, %d rejected statically, measuring up to %d\n", all, all-kept, p.total)
	}
}

func (p *progress) trial(t *Trial, best *Trial) {
	p.n++
	if t.Status != StatusOK {
		p.failures[t.Status]++
	}
	if p.w == nil {
		return
	}
	bestS := "none yet"
	if best != nil {
		bestS = fmt.Sprintf("%.3f ms", best.MedianMS)
	}
	fails := 0
	for _, n := range p.failures {
		fails += n
	}
	now := p.now()
	elapsed := now.Sub(p.began)
	if p.bar {
		left := time.Duration(-1)
		if !p.deadline.IsZero() {
			left = max(0, p.deadline.Sub(now))
		}
		fmt.Fprintf(p.w, "\r%s\x1b[K", barLine(p.width, p.n, p.total, elapsed, eta(elapsed, p.n, p.total, left), bestS, fails))
		return
	}
	what := string(t.Status)
	if t.Status == StatusOK {
		what = fmt.Sprintf("%.3f ms", t.MedianMS)
	}
	fmt.Fprintf(p.w, "[%3d/%d %5.0fs] %-9s best %s, %d failed  %s\n", p.n, p.total, elapsed.Seconds(), what, bestS, fails, t.ID)
}

func (p *progress) done() {
	if p.w == nil {
		return
	}
	if p.bar && p.n > 0 {
		fmt.Fprintln(p.w) // end the bar's line
	}
	fmt.Fprintf(p.w, "tuning: measured %d candidates in %.0fs\n", p.n, p.now().Sub(p.began).Seconds())
}

// eta estimates the time left when done of total candidates took elapsed,
// from the rate so far, bounded by budgetLeft, the time the -time budget
// still allows (negative: no budget). It is negative when unknown (nothing
// measured yet and no budget).
func eta(elapsed time.Duration, done, total int, budgetLeft time.Duration) time.Duration {
	est := time.Duration(-1)
	switch {
	case done >= total:
		est = 0
	case done > 0:
		est = time.Duration(float64(elapsed) / float64(done) * float64(total-done))
	}
	if budgetLeft >= 0 && (est < 0 || budgetLeft < est) {
		est = budgetLeft
	}
	return est
}

// barLine is the terminal bar at done of total, fitted to width columns.
func barLine(width, done, total int, elapsed, eta time.Duration, best string, fails int) string {
	etaS := "?"
	if eta >= 0 {
		etaS = eta.Round(time.Second).String()
	}
	text := fmt.Sprintf(" %d/%d  best %s  %d failed  %s elapsed  ETA %s", done, total, best, fails, elapsed.Round(time.Second), etaS)
	cells := width - len(text) - 3 // the brackets and a spare column
	if cells < 10 {
		return strings.TrimSpace(text)
	}
	cells = min(cells, 40)
	fill := cells
	if total > 0 && done < total {
		fill = cells * done / total
	}
	return "[" + strings.Repeat("=", fill) + strings.Repeat(" ", cells-fill) + "]" + text
}
