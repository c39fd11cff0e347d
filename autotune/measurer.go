package autotune

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

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
func (m *measurer) measure(t *Trial, opt Options, seed uint32, runs int) (response, error) {
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
		Shared: k.SharedBytes, Seed: seed, Warmup: opt.Warmup, Runs: runs, Samples: 1024}, opt.Timeout)
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

// progress prints one line per measured candidate.
type progress struct {
	w        io.Writer
	began    time.Time
	total    int
	n        int
	failures map[Status]int
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, failures: map[Status]int{}}
}

func (p *progress) start(all, kept, budget int) {
	p.began = time.Now()
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
	what := string(t.Status)
	if t.Status == StatusOK {
		what = fmt.Sprintf("%.3f ms", t.MedianMS)
	}
	bestS := "none yet"
	if best != nil {
		bestS = fmt.Sprintf("%.3f ms", best.MedianMS)
	}
	fails := 0
	for _, n := range p.failures {
		fails += n
	}
	fmt.Fprintf(p.w, "[%3d/%d %5.0fs] %-9s best %s, %d failed  %s\n", p.n, p.total, time.Since(p.began).Seconds(), what, bestS, fails, t.ID)
}

func (p *progress) done() {
	if p.w != nil {
		fmt.Fprintf(p.w, "tuning: measured %d candidates in %.0fs\n", p.n, time.Since(p.began).Seconds())
	}
}
