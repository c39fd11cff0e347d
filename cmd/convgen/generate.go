package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/gen"
	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/internal/version"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/report"
	"github.com/convgen/convgen/tunecache"
)

// generate finds or makes the tuning record and writes the package.
func generate(ctx context.Context, c config, stdout, stderr io.Writer) error {
	if c.compile {
		return compileOnly(ctx, c, stdout, stderr)
	}
	if c.list {
		return list(c, stdout)
	}
	onGPU := gpu.Available()
	if !onGPU {
		switch {
		case len(c.pin) > 0:
			return usageError{fmt.Errorf("-pin measures the pinned candidates on a GPU, and %v (-compile-only compiles them on the CPU)", gpu.ErrNoCUDA)}
		case c.retune:
			return usageError{fmt.Errorf("-retune tunes on a GPU, and %v", gpu.ErrNoCUDA)}
		case len(c.tuningSet) > 0:
			fmt.Fprintf(stderr, "convgen: %s: no effect without a GPU, where the package is replayed from the cache\n", strings.Join(c.tuningSet, ", "))
		}
	}
	// Refuse a bad output directory before tuning (the -pin path included),
	// not after: one holding foreign files, or a parent Write cannot use.
	if c.into {
		if err := gen.CheckInto(c.out, gen.FilesPrefix); err != nil {
			return err
		}
	} else if err := gen.CheckTarget(c.out); err != nil {
		return err
	}
	if c.reportDir != "" {
		if err := gen.CheckTarget(c.reportDir); err != nil {
			return fmt.Errorf("-report: %w", err)
		}
	}
	cache, err := tunecache.Load(c.cache)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "convgen %s: %s\n", version.Convgen, c.problem)
	var rec tunecache.Record
	var cands []report.Candidate // every candidate, when tuned now
	fresh := false               // a tuning result not yet saved anywhere
	if onGPU {
		rec, cands, fresh, err = recordOnGPU(ctx, c, cache, stdout, stderr)
	} else {
		rec, err = recordOffline(c, cache, stdout)
		var none noRecordError
		if c.untuned && errors.As(err, &none) {
			return writeUntuned(c, stdout)
		}
	}
	if err != nil {
		return err
	}
	if fresh {
		return keepAndWrite(c, rec, cands, len(c.pin) > 0, stdout)
	}
	return writePackage(c, rec, nil, stdout)
}

// keepAndWrite saves a fresh tuning result, then writes the package, so
// that no failure loses the tuning: the record goes to the cache before the
// package is written (a pinned run's goes to no cache), and a record that
// cannot be kept where it belongs (Put fails, or a pinned run's package
// cannot be written) is written to a rescue file in the temporary
// directory, which the error names. A failed Put does not stop the package
// from being written.
func keepAndWrite(c config, rec tunecache.Record, cands []report.Candidate, pinned bool, stdout io.Writer) error {
	var saveErr error
	saved := false
	if !pinned {
		if err := tunecache.Put(c.cache, rec); err != nil {
			saveErr = fmt.Errorf("save tuning record: %w%s", err, rescue(rec))
		} else {
			saved = true
			fmt.Fprintf(stdout, "winner %s: %.3f ms median, rel. error %.2e; saved to %s\n",
				kernels.Candidate{Family: rec.Winner.Family, Config: rec.Winner.Config}.ID(), rec.Winner.MedianMS, rec.Winner.RelError, c.cache)
		}
	}
	werr := writePackage(c, rec, cands, stdout)
	switch {
	case werr == nil:
		return saveErr
	case saved:
		return fmt.Errorf("%w (the tuning record is saved in %s: run convgen again to write the package from it)", werr, c.cache)
	case saveErr != nil:
		return fmt.Errorf("%w; %w", saveErr, werr)
	}
	return fmt.Errorf("%w%s", werr, rescue(rec))
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

// workerArgv starts this binary as a tuning worker.
func workerArgv() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable for the GPU worker: %w", err)
	}
	return []string{exe, workerArg}, nil
}

func baseKey(c config) tunecache.Key {
	return tunecache.Key{Shape: c.problem.Shape.String(), Precision: string(c.problem.Precision), Layout: string(c.problem.Layout)}
}

// currentKernels says whether rec's kernels are what the code generates
// for its configurations today: it renders the winner's (and the
// fallback's) configuration for p and compares the kernel hashes with
// those recorded. nil means current; the error says which kernel changed.
func currentKernels(p problem.Problem, rec tunecache.Record) error {
	if err := sameKernel(p, rec.Winner, rec.KernelSHA256); err != nil {
		return fmt.Errorf("the winner's kernel source changed since it was tuned (%w): re-tune on a GPU", err)
	}
	if fb := rec.Fallback; fb != nil {
		if err := sameKernel(p, fb.Timing, fb.KernelSHA256); err != nil {
			return fmt.Errorf("the fallback's kernel source changed since it was tuned (%w): re-tune on a GPU", err)
		}
	}
	return nil
}

// sameKernel renders t's configuration for p and compares its hash with want.
func sameKernel(p problem.Problem, t tunecache.Timing, want string) error {
	k, err := kernels.RenderCandidate(p, kernels.Candidate{Family: t.Family, Config: t.Config})
	if err != nil {
		return fmt.Errorf("%s no longer renders: %w", t.Family, err)
	}
	if got := kernels.Hash(k); got != want {
		return fmt.Errorf("hash %.12s, recorded %.12s", got, want)
	}
	return nil
}

// recordOnGPU uses the cache's record for this exact device and toolchain, or
// tunes a new one, which it returns with fresh set: the caller saves it
// (keepAndWrite).
func recordOnGPU(ctx context.Context, c config, cache *tunecache.Cache, stdout, stderr io.Writer) (rec tunecache.Record, cands []report.Candidate, fresh bool, err error) {
	argv, err := workerArgv()
	if err != nil {
		return tunecache.Record{}, nil, false, err
	}
	lib, err := nvrtc.Open()
	if err != nil {
		return tunecache.Record{}, nil, false, fmt.Errorf("tuning needs NVRTC: %w", err)
	}
	info, err := autotune.Probe(argv)
	if err != nil {
		return tunecache.Record{}, nil, false, err
	}
	key := baseKey(c)
	key.NVRTCVersion, key.Device, key.ComputeCapability, key.SMCount, key.Driver =
		lib.VersionString(), info.Name, info.ComputeCapability, info.SMs, info.Driver
	pinned := len(c.pin) > 0 // measures only the pins: always tunes, never cached
	if rec, ok := cache.Lookup(key); ok && !c.retune && !pinned {
		if err := currentKernels(c.problem, rec); err != nil {
			fmt.Fprintf(stdout, "the cache's record for %s (%s) is stale: %v; tuning again\n", info.Name, c.cache, err)
		} else {
			fmt.Fprintf(stdout, "using the cache's record for %s (%s): %s, %.3f ms\n", info.Name, c.cache, rec.Winner.Family, rec.Winner.MedianMS)
			return rec, nil, false, nil
		}
	}
	if !pinned {
		if err := tunecache.CheckWritable(c.cache); err != nil { // before tuning, not after
			return tunecache.Record{}, nil, false, err
		}
	}
	fmt.Fprintf(stdout, "tuning on %s (%s, %d SMs), NVRTC %s from %s\n", info.Name, info.Arch, info.SMs, lib.VersionString(), lib.Path())
	var progress io.Writer = stderr
	if c.quiet {
		progress = nil
	}
	started := time.Now()
	res, err := autotune.Tune(ctx, lib, autotune.Options{Problem: c.problem, Worker: argv, Trials: c.trials,
		Time: c.budget, Seed: c.seed, Jobs: c.jobs, Runs: c.runs, Only: c.pin, CompileTimeout: c.compileTO, Progress: progress})
	if err != nil {
		return tunecache.Record{}, nil, false, fmt.Errorf("tune: %w", err)
	}
	rec = newRecord(res, key, c.command(), started, time.Since(started))
	w := res.Winner
	if pinned {
		fmt.Fprintf(stdout, "winner of the %d pinned candidates %s: %.3f ms median, rel. error %.2e; not saved to %s (a pinned run is no full search)\n",
			len(c.pin), w.ID, w.MedianMS, w.RelError, c.cache)
	}
	return rec, candidates(res.Trials), true, nil
}

// newRecord makes the tuning record of a finished search: the key, the
// winner's and the fallback's launches, kernel hashes and images, and the
// summary the report is built from.
func newRecord(res *autotune.Result, key tunecache.Key, command string, started time.Time, took time.Duration) tunecache.Record {
	timing := func(t autotune.Trial) tunecache.Timing {
		return tunecache.Timing{Family: t.Family, Config: t.Config, MedianMS: t.MedianMS, SpreadMS: t.P90MS - t.P10MS, RelError: t.RelError}
	}
	w := res.Winner
	rec := tunecache.Record{Key: key, ConvgenVersion: version.Convgen, Winner: timing(*w), KernelSHA256: kernels.Hash(res.Kernel),
		Kernel: res.Kernel.Name, Launch: res.Kernel.Launch,
		Arch: res.Arch, CUBIN: tunecache.Gzip(res.CUBIN), PTX: tunecache.Gzip([]byte(res.PTX)), Command: command}
	if fb := res.Fallback; fb != nil {
		rec.Fallback = &tunecache.Fallback{Timing: timing(*fb.Trial), KernelSHA256: kernels.Hash(fb.Kernel), Kernel: fb.Kernel.Name,
			Launch: fb.Kernel.Launch, Arch: fb.Arch, PTX: tunecache.Gzip([]byte(fb.PTX))}
	}
	rec.Summary = summarize(res.Trials, w.ID)
	rec.Summary.TunedAt, rec.Summary.DurationS = started.UTC().Truncate(time.Second), took.Round(time.Second).Seconds()
	rec.Summary.DeviceArch, rec.Summary.ClockMHz, rec.Summary.MemoryGBps = res.Device.Arch, res.Device.ClockMHz, res.Device.MemoryGBps
	rec.Summary.TieNote = res.TieNote
	ph := res.Phases
	rec.Summary.Phases = tunecache.Phases{SetupS: roundS(ph.Setup), EnumerateS: roundS(ph.Enumerate),
		CompileS: roundS(ph.Compile), MeasureS: roundS(ph.Measure)}
	if res.Fallback == nil {
		rec.Summary.NoFallback = res.FallbackNote
	}
	return rec
}

// candidates converts a search's trials for candidates.csv and the chart.
func candidates(trials []autotune.Trial) []report.Candidate {
	out := make([]report.Candidate, len(trials))
	for i, t := range trials {
		out[i] = report.Candidate{ID: t.ID, Family: t.Family, Status: string(t.Status), Reason: t.Reason,
			Registers: t.Registers, SpillBytes: t.SpillStores, SharedBytes: t.SharedBytes}
		if t.Status == autotune.StatusOK {
			out[i].MedianMS, out[i].P10MS, out[i].P90MS, out[i].RelError = t.MedianMS, t.P10MS, t.P90MS, t.RelError
		}
	}
	return out
}

// roundS is d in seconds, to the millisecond.
func roundS(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }

// summarize counts trials per status and ranks the measured ones.
func summarize(trials []autotune.Trial, winner string) tunecache.Summary {
	var s tunecache.Summary
	counts := map[autotune.Status]int{}
	var measured []tunecache.Measured
	for _, t := range trials {
		counts[t.Status]++
		if t.Status == autotune.StatusOK {
			measured = append(measured, tunecache.Measured{ID: t.ID, MedianMS: t.MedianMS, P10MS: t.P10MS, P90MS: t.P90MS,
				Runs: t.Runs, RelError: t.RelError, Registers: t.Registers, SpillStores: t.SpillStores, SpillLoads: t.SpillLoads,
				SharedBytes: t.SharedBytes, Threads: t.Threads})
		}
	}
	for _, st := range []autotune.Status{autotune.StatusOK, autotune.StatusRejected, autotune.StatusCompile,
		autotune.StatusLoad, autotune.StatusLaunch, autotune.StatusFault, autotune.StatusTimeout,
		autotune.StatusWrong, autotune.StatusSkipped} {
		if counts[st] > 0 {
			s.Counts = append(s.Counts, tunecache.Count{Status: string(st), N: counts[st]})
		}
	}
	s.Rank(measured, winner)
	return s
}

// recordOffline picks the cache's record for this problem without a GPU:
// the newest of each device model (tunecache's Replay), and among several
// device models the one -device and -arch select.
func recordOffline(c config, cache *tunecache.Cache, stdout io.Writer) (tunecache.Record, error) {
	k := baseKey(c)
	q := tunecache.Query{Shape: k.Shape, Precision: k.Precision, Layout: k.Layout, Arch: c.arch, Device: c.device,
		Current: func(r tunecache.Record) error { return currentKernels(c.problem, r) }}
	recs := cache.Replay(q)
	if n := len(cache.Match(q)); n > len(recs) && len(recs) == 1 {
		r := recs[0].Key
		fmt.Fprintf(stdout, "%d records of %s match: replaying the newest, NVRTC %s, driver %s\n", n, r.Device, r.NVRTCVersion, r.Driver)
	}
	switch len(recs) {
	case 0:
		where := c.cache
		if _, err := os.Stat(c.cache); errors.Is(err, os.ErrNotExist) {
			where += " (no such file)"
		}
		return tunecache.Record{}, noRecordError{fmt.Errorf("%w; no record in %s for %s that the current kernels match%s (-untuned writes an untuned package instead)",
			gpu.ErrNoCUDA, where, c.problem, nearMisses(cache, q))}
	case 1:
		fmt.Fprintf(stdout, "no GPU in this build: replaying the record tuned on %s (%s) from %s\n", recs[0].Key.Device, recs[0].Arch, c.cache)
		return recs[0], nil
	}
	var devs []string
	for _, r := range recs {
		devs = append(devs, fmt.Sprintf("%q (%s, NVRTC %s, driver %s)", r.Key.Device, r.Arch, r.Key.NVRTCVersion, r.Key.Driver))
	}
	return tunecache.Record{}, usageError{fmt.Errorf("%d records in %s match %s: pick one with -device and -arch: %s",
		len(recs), c.cache, c.problem, strings.Join(devs, ", "))}
}

// nearMisses explains, for the error of a failed offline replay, why the
// cache's records of the same problem (shape, precision, layout) were not
// used: "" when there are none.
func nearMisses(cache *tunecache.Cache, q tunecache.Query) string {
	var misses []string
	stale := false
records:
	for _, r := range cache.Records() {
		var why []string
		for _, m := range q.Mismatches(r) { // the problem's fields come first
			switch m.Field {
			case tunecache.FieldShape, tunecache.FieldPrecision, tunecache.FieldLayout:
				continue records // another problem
			case tunecache.FieldKernel:
				stale = true
				why = append(why, "is stale: "+m.String())
				continue
			}
			why = append(why, "has "+m.String())
		}
		misses = append(misses, fmt.Sprintf("the one tuned on %s (%s) %s", r.Key.Device, r.Arch, strings.Join(why, ", ")))
	}
	if len(misses) == 0 {
		return ""
	}
	hint := "drop or change -arch and -device to use one"
	if stale {
		hint = "a record whose kernels the current code renders differently cannot be replayed: re-tune on a GPU with a cuda build (-retune) and commit the cache"
	}
	return fmt.Sprintf("; the cache's records of this problem do not apply: %s; %s", strings.Join(misses, "; "), hint)
}

// writePackage renders the binding and the reports and writes them at
// once: the reports into the package, or with -report into their own
// directory. cands, every candidate of a search just run, give
// candidates.csv and candidates.svg; a replay (nil cands) keeps those of
// the same record from the reports' directory (carriedReports).
func writePackage(c config, rec tunecache.Record, cands []report.Candidate, stdout io.Writer) error {
	data := report.New(rec, c.problem, c.command())
	cubin, err := rec.CUBIN.Open()
	if err != nil {
		return fmt.Errorf("the tuning record's CUBIN: %w", err)
	}
	ptx, err := rec.PTX.Open()
	if err != nil {
		return fmt.Errorf("the tuning record's PTX: %w", err)
	}
	summary := fmt.Sprintf("tuned on %s (%s): %s, median %.3f ms, rel. error %.1e", rec.Key.Device, rec.Arch,
		rec.Winner.Family, rec.Winner.MedianMS, rec.Winner.RelError)
	b := gen.Binding{Package: c.pkg, Problem: c.problem, Kernel: rec.Kernel,
		Launch: rec.Launch, Arch: rec.Arch, CUBIN: cubin, PTX: string(ptx),
		Command: c.command(), Summary: summary}
	if fb := rec.Fallback; fb != nil {
		fptx, err := fb.PTX.Open()
		if err != nil {
			return fmt.Errorf("the tuning record's fallback PTX: %w", err)
		}
		b.Fallback = &gen.Fallback{Kernel: fb.Kernel, Launch: fb.Launch,
			Arch: fb.Arch, PTX: string(fptx), Summary: fmt.Sprintf("%s, median %.3f ms, rel. error %.1e on %s",
				kernels.Candidate{Family: fb.Timing.Family, Config: fb.Timing.Config}.ID(), fb.Timing.MedianMS, fb.Timing.RelError, rec.Key.Device)}
	}
	return writeFiles(c, b, data, cands, stdout)
}

// writeFiles renders the package of b and the reports of data and writes
// them (writePackage).
func writeFiles(c config, b gen.Binding, data report.Data, cands []report.Candidate, stdout io.Writer) error {
	prefix := "" // of the reports' names
	if c.into {
		b.FilePrefix = gen.FilesPrefix
		if c.reportDir == "" {
			prefix = gen.FilesPrefix
		}
	}
	files, err := gen.Files(b)
	if err != nil {
		return fmt.Errorf("generate package: %w", err)
	}
	reports, err := reportFiles(data, cands, prefix)
	if err != nil {
		return err
	}
	reportDir := c.reportDir
	if reportDir == "" {
		reportDir = c.out
	}
	if cands == nil {
		maps.Copy(reports, carriedReports(reportDir, prefix, data))
	}
	if c.reportDir == "" {
		maps.Copy(files, reports)
	}
	write := gen.Write
	if c.into {
		write = func(dir string, files map[string][]byte) error { return gen.WriteInto(dir, gen.FilesPrefix, files) }
	}
	if err := write(c.out, files); err != nil {
		return fmt.Errorf("write package: %w", err)
	}
	fmt.Fprintf(stdout, "wrote package %s to %s (%d files)\n", c.pkg, c.out, len(files))
	if c.reportDir != "" {
		if err := gen.WriteReports(c.reportDir, reports); err != nil {
			return fmt.Errorf("write reports: %w", err)
		}
		fmt.Fprintf(stdout, "wrote the reports to %s (%d files)\n", c.reportDir, len(reports))
	}
	return nil
}

// The reports' file names.
const (
	reportMD      = "REPORT.md"
	reportJSON    = "report.json"
	candidatesCSV = "candidates.csv"
	candidatesSVG = "candidates.svg"
)

// reportFiles renders REPORT.md and report.json, and with the candidates
// of a search just run candidates.csv and candidates.svg.
func reportFiles(data report.Data, cands []report.Candidate, prefix string) (map[string][]byte, error) {
	js, err := data.JSON()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{prefix + reportMD: data.Markdown(), prefix + reportJSON: js}
	if cands != nil {
		csv, err := data.CSV(cands)
		if err != nil {
			return nil, err
		}
		files[prefix+candidatesCSV], files[prefix+candidatesSVG] = csv, data.Chart(cands)
	}
	return files, nil
}

// carriedReports returns candidates.csv and candidates.svg from dir when
// its report.json is the report of the same search as data (the same
// winner's kernel hash, device, NVRTC and tuning time), so that a replay
// keeps what only the tuning run could write; nothing otherwise.
func carriedReports(dir, prefix string, data report.Data) map[string][]byte {
	old, err := os.ReadFile(filepath.Join(dir, prefix+reportJSON))
	if err != nil {
		return nil
	}
	var prev report.Data
	if json.Unmarshal(old, &prev) != nil || data.TunedAt.IsZero() || !prev.TunedAt.Equal(data.TunedAt) ||
		prev.KernelSHA256 != data.KernelSHA256 || prev.Device.Name != data.Device.Name || prev.NVRTC != data.NVRTC {
		return nil
	}
	kept := map[string][]byte{}
	for _, name := range []string{prefix + candidatesCSV, prefix + candidatesSVG} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			kept[name] = b
		}
	}
	return kept
}

// writeSources writes the CUDA source of every candidate among trials that
// NVRTC compiled or failed to compile (the failures are the sources most
// worth reading) to dir as KERNEL.cu (the kernel's name), creating dir; it
// returns how many it wrote. A failure that was already a rendering error
// has no source and is skipped.
func writeSources(dir string, p problem.Problem, trials []autotune.Trial) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("-source-dir: %w", err)
	}
	n := 0
	for _, t := range trials {
		if t.Status != autotune.StatusCompiled && t.Status != autotune.StatusCompile {
			continue
		}
		k, err := kernels.RenderCandidate(p, kernels.Candidate{Family: t.Family, Config: t.Config})
		if err != nil && t.Status == autotune.StatusCompile {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("render %s: %w", t.ID, err)
		}
		if err := os.WriteFile(filepath.Join(dir, k.Name+".cu"), []byte(k.Source), 0o644); err != nil {
			return n, fmt.Errorf("-source-dir: %w", err)
		}
		n++
	}
	return n, nil
}

// compileOnly compiles the whole search space for -arch without a GPU.
func compileOnly(ctx context.Context, c config, stdout, stderr io.Writer) error {
	lib, err := nvrtc.Open()
	if err != nil {
		return fmt.Errorf("-compile-only needs NVRTC: %w", err)
	}
	arch := c.arch
	if arch == "" {
		arch = "sm_90"
	}
	var progress io.Writer = stderr
	if c.quiet {
		progress = nil
	}
	trials, err := autotune.CompileOnly(ctx, lib, c.problem, arch, c.jobs, c.pin, c.compileTO, progress)
	if err != nil {
		return err
	}
	compiled, failed, rejected, unpinned := 0, 0, 0, 0
	for _, t := range trials {
		switch t.Status {
		case autotune.StatusCompiled:
			compiled++
		case autotune.StatusCompile:
			failed++
			fmt.Fprintf(stdout, "failed %s: %s\n", t.ID, oneLine(t.Reason))
		case autotune.StatusSkipped:
			unpinned++
		default:
			rejected++
		}
	}
	pinned := ""
	if len(c.pin) > 0 {
		pinned = fmt.Sprintf(", %d not pinned", unpinned)
	}
	fmt.Fprintf(stdout, "%s for %s: %d compiled, %d failed, %d rejected statically%s\n", c.problem, arch, compiled, failed, rejected, pinned)
	if c.sourceDir != "" {
		n, err := writeSources(c.sourceDir, c.problem, trials)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %d CUDA sources to %s\n", n, c.sourceDir)
	}
	if failed > 0 {
		if failed == 1 {
			return errors.New("1 candidate failed to compile")
		}
		return fmt.Errorf("%d candidates failed to compile", failed)
	}
	return nil
}
