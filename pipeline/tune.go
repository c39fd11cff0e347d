package pipeline

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/report"
	"github.com/convgen/convgen/tunecache"
)

// keepAndWrite saves a fresh tuning result, then writes the package, so
// that no failure loses the tuning: the record goes to the cache before the
// package is written (a pinned run's goes to no cache), and a record that
// cannot be kept where it belongs (Put fails, or a pinned run's package
// cannot be written) is written to a rescue file in the temporary
// directory, which the error names. A failed Put does not stop the package
// from being written.
func keepAndWrite(r Request, rec tunecache.Record, cands []report.Candidate) (Result, error) {
	pinned := len(r.Pins) > 0
	outcome := Tuned
	if pinned {
		outcome = Pinned
	}
	var saveErr error
	saved := false
	if !pinned {
		if err := tunecache.Put(r.Cache, rec); err != nil {
			saveErr = fmt.Errorf("save tuning record: %w%s", err, rescue(rec))
		} else {
			saved = true
			logf(r.Log, "winner %s: %.3f ms median, rel. error %.2e; saved to %s\n",
				kernels.Candidate{Family: rec.Winner.Family, Config: rec.Winner.Config}.ID(), rec.Winner.MedianMS, rec.Winner.RelError, r.Cache)
		}
	}
	res, werr := writePackage(r, outcome, rec, cands)
	switch {
	case werr == nil:
		return res, saveErr
	case saved:
		return res, fmt.Errorf("%w (the tuning record is saved in %s: run convgen again to write the package from it)", werr, r.Cache)
	case saveErr != nil:
		return res, fmt.Errorf("%w; %w", saveErr, werr)
	}
	return res, fmt.Errorf("%w%s", werr, rescue(rec))
}

// rescue writes rec to a rescue file in the temporary directory and says
// where, for the error of a failed save.
func rescue(rec tunecache.Record) string {
	path, err := tunecache.SaveRescue(os.TempDir(), rec)
	if err != nil {
		return fmt.Sprintf("; the tuning result is lost: %v", err)
	}
	return fmt.Sprintf("; the tuning record is kept in %s instead (a cache of that one record: -cache %s replays it)", path, path)
}

// plainFirst is how many of the plain problem's fastest candidates a fused
// problem measures first.
const plainFirst = 4

// plainWinners returns the fastest candidate IDs (at most plainFirst) of
// the cache's record of key's plain problem (no epilogue chain, output in
// the input's type) under the same key otherwise (device, driver, NVRTC,
// SM count: the record this machine would replay), or nil when key is
// plain or there is none: a chain rarely changes which tiles are fast, and a fused search
// given the same budget as its plain one otherwise starts from scratch.
func plainWinners(cache *tunecache.Cache, key tunecache.Key) []string {
	if key.Epilogue == "" && key.OutPrecision == "" {
		return nil
	}
	plain := key
	plain.Epilogue, plain.OutPrecision = "", ""
	rec, ok := cache.Lookup(plain)
	if !ok {
		return nil
	}
	var ids []string
	for _, m := range rec.Summary.Top {
		if len(ids) == plainFirst {
			break
		}
		ids = append(ids, m.ID)
	}
	return ids
}

// recordOnGPU uses the cache's record for this exact device and toolchain, or
// tunes a new one, which it returns with fresh set: the caller saves it
// (keepAndWrite).
func recordOnGPU(ctx context.Context, r Request, cache *tunecache.Cache) (rec tunecache.Record, cands []report.Candidate, fresh bool, err error) {
	if len(r.Worker) == 0 {
		return tunecache.Record{}, nil, false, fmt.Errorf("tuning needs a worker command (pipeline.Request.Worker)")
	}
	lib, err := nvrtc.Open()
	if err != nil {
		return tunecache.Record{}, nil, false, fmt.Errorf("tuning needs NVRTC: %w", err)
	}
	info, err := autotune.Probe(r.Worker)
	if err != nil {
		return tunecache.Record{}, nil, false, err
	}
	key := baseKey(r)
	key.NVRTCVersion, key.Device, key.ComputeCapability, key.SMCount, key.Driver =
		lib.VersionString(), info.Name, info.ComputeCapability, info.SMs, info.Driver
	pinned := len(r.Pins) > 0 // measures only the pins: always tunes, never cached
	if rec, ok := cache.Lookup(key); ok && !r.Retune && !pinned {
		if err := currentKernels(r.Problem, rec); err != nil {
			logf(r.Log, "the cache's record for %s (%s) is stale: %v; tuning again\n", info.Name, r.Cache, err)
		} else {
			logf(r.Log, "using the cache's record for %s (%s): %s, %.3f ms\n", info.Name, r.Cache, rec.Winner.Family, rec.Winner.MedianMS)
			return rec, nil, false, nil
		}
	}
	if !pinned {
		if err := tunecache.CheckWritable(r.Cache); err != nil { // before tuning, not after
			return tunecache.Record{}, nil, false, err
		}
	}
	logf(r.Log, "tuning on %s (%s, %d SMs), NVRTC %s from %s\n", info.Name, info.Arch, info.SMs, lib.VersionString(), lib.Path())
	t := r.Tuning
	started := time.Now()
	first := plainWinners(cache, key)
	if len(first) > 0 && !pinned {
		logf(r.Log, "measuring first the %d fastest candidates of the plain problem's record (no epilogue chain, the input's output type)\n", len(first))
	}
	res, err := autotune.Tune(ctx, lib, autotune.Options{Problem: r.Problem, Worker: r.Worker, Trials: t.Trials,
		Time: t.Time, Seed: t.Seed, Jobs: t.Jobs, Runs: t.Runs, Only: r.Pins, First: first, CompileTimeout: t.CompileTimeout, Progress: r.Progress})
	if err != nil {
		return tunecache.Record{}, nil, false, tuneError(res, err)
	}
	rec = newRecord(res, key, r.Command, started, time.Since(started))
	w := res.Winner
	if pinned {
		logf(r.Log, "winner of the %d pinned candidates %s: %.3f ms median, rel. error %.2e; not saved to %s (a pinned run is no full search)\n",
			len(r.Pins), w.ID, w.MedianMS, w.RelError, r.Cache)
	}
	return rec, candidates(res.Trials), true, nil
}
