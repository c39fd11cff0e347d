package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/gen"
	"github.com/convgen/convgen/gen/torchmod"
	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/internal/version"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// Request is one package to generate.
type Request struct {
	Problem problem.Problem
	// Out is the directory of the package, replaced as a whole; with Into
	// it is the directory of the caller's own package, among whose files
	// convgen's go, each named with gen.FilesPrefix.
	Out  string
	Into bool
	// Pkg is the package name.
	Pkg string
	// Cache is the tuning cache file: read for replay, written after
	// tuning.
	Cache string
	// ReportDir, when set, receives the reports instead of the package.
	ReportDir string
	// Torch, when set, is the directory of the PyTorch module written
	// beside the package (gen/torchmod), replaced as a whole; its name is
	// the Python package's.
	Torch string
	// Arch and Device pick among the cache's records when replaying
	// without a GPU ("" for any).
	Arch, Device string
	// Retune tunes even when the cache has a record for this device.
	Retune bool
	// Untuned, without a GPU and without a record, writes an untuned
	// package instead of failing with ErrNoRecord.
	Untuned bool
	// Pins, when set, measure only these candidate IDs: the run always
	// tunes, and its record goes to no cache.
	Pins []string
	// Tuning bounds the search.
	Tuning Tuning
	// Worker is the command line of a tuning worker process
	// (autotune.ServeWorker); only tuning needs it.
	Worker []string
	// Command is the command line that regenerates the package, recorded
	// in it and in its reports.
	Command string
	// Log receives one line per step (what is replayed or tuned, the
	// winner, what was written); nil for none.
	Log io.Writer
	// Progress receives the tuner's progress; nil for none.
	Progress io.Writer
}

// Tuning are the search's limits (autotune.Options).
type Tuning struct {
	Trials         int           // candidates to measure at most (0: all)
	Time           time.Duration // budget (0: none)
	Seed           uint64
	Jobs           int // concurrent NVRTC compiles (0: the number of CPUs)
	Runs           int // timed runs per candidate
	CompileTimeout time.Duration
}

// Outcome says where a package's kernel came from.
type Outcome int

// The outcomes of Run.
const (
	// Replayed: without a GPU, from the cache's record.
	Replayed Outcome = iota + 1
	// Reused: on a GPU, from the cache's record for this exact device and
	// toolchain.
	Reused
	// Tuned: tuned now, and the record saved to the cache.
	Tuned
	// Pinned: the pinned candidates measured now; the record is in no cache.
	Pinned
	// Untuned: the default configuration, neither checked nor timed.
	Untuned
)

func (o Outcome) String() string {
	switch o {
	case Replayed:
		return "replayed"
	case Reused:
		return "reused"
	case Tuned:
		return "tuned"
	case Pinned:
		return "pinned"
	case Untuned:
		return "untuned"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Result is what Run did.
type Result struct {
	Outcome Outcome
	// Record is the tuning record the package was written from; zero for
	// an untuned package.
	Record tunecache.Record
	// Files are the names of the files written to Out, and Reports those
	// written to ReportDir (none without it).
	Files, Reports []string
	// TorchFiles are the names of the files written to Torch (none
	// without it).
	TorchFiles []string
	// TorchBackward are the gradient ops (dgrad, wgrad) whose cached
	// records the PyTorch module's backward launches (torchGrads).
	TorchBackward []string
}

// Run finds or makes the tuning record of r.Problem and writes the
// package. On a GPU (a build with the cuda tag) it reuses the cache's
// record of this device and toolchain or tunes; without one it replays the
// cache's record, or with r.Untuned writes an untuned package. The output
// directories are checked before anything is tuned, and a fresh tuning
// record is saved before the package is written (keepAndWrite).
func Run(ctx context.Context, r Request) (Result, error) {
	r.Problem = r.Problem.Canonical() // an out-precision of the input's own type is none
	if err := checkOp(r.Problem); err != nil {
		return Result{}, err
	}
	if err := Served(r.Problem); err != nil {
		return Result{}, err
	}
	if r.Torch != "" && r.Problem.Op != problem.OpFprop {
		return Result{}, mark(ErrInvalid, fmt.Errorf("-torch: the PyTorch module is written from a forward (op=fprop) record, not op=%s", r.Problem.Op))
	}
	if r.Torch != "" && r.Problem.OutDiffers() {
		return Result{}, mark(ErrInvalid, fmt.Errorf("-torch: the PyTorch module returns a tensor of the input's dtype (%s), not the output precision %s: write the Go package alone", r.Problem.Precision, r.Problem.OutPrecision))
	}
	if r.Torch != "" {
		if err := torchmod.Serves(r.Problem); err != nil {
			return Result{}, mark(ErrInvalid, fmt.Errorf("-torch: %w", err))
		}
	}
	// Refuse a bad output directory before tuning (the pinned path
	// included), not after: one holding foreign files, or a parent Write
	// cannot use.
	if r.Into {
		if err := gen.CheckInto(r.Out, gen.FilesPrefix); err != nil {
			return Result{}, err
		}
	} else if err := gen.CheckTarget(r.Out); err != nil {
		return Result{}, err
	}
	if r.ReportDir != "" {
		if err := gen.CheckTarget(r.ReportDir); err != nil {
			return Result{}, fmt.Errorf("-report: %w", err)
		}
	}
	if r.Torch != "" {
		if err := torchmod.CheckTarget(r.Torch); err != nil {
			return Result{}, fmt.Errorf("-torch: %w", err)
		}
	}
	cache, err := tunecache.Load(r.Cache)
	if err != nil {
		return Result{}, err
	}
	logf(r.Log, "convgen %s: %s\n", version.Convgen, r.Problem)
	if !gpu.Available() {
		rec, err := recordOffline(r, cache)
		if errors.Is(err, ErrNoRecord) {
			if r.Untuned {
				return writeUntuned(r)
			}
			return Result{}, fmt.Errorf("%w (-untuned writes an untuned package instead)", err)
		}
		if err != nil {
			return Result{}, err
		}
		noteOlderSearch(r.Log, rec)
		return writePackage(r, Replayed, rec, nil)
	}
	rec, cands, fresh, err := recordOnGPU(ctx, r, cache)
	if err != nil {
		return Result{}, err
	}
	if !fresh {
		noteOlderSearch(r.Log, rec)
		return writePackage(r, Reused, rec, nil)
	}
	return keepAndWrite(r, rec, cands)
}

// noteOlderSearch notes on w that rec was tuned by an older search than
// this convgen's (autotune.SearchRevision): its kernel is still current,
// but a new search may find a faster one.
func noteOlderSearch(w io.Writer, rec tunecache.Record) {
	rev := max(rec.Summary.SearchRevision, 1)
	if rev < autotune.SearchRevision {
		logf(w, "note: this record was tuned by an older search (revision %d, now %d): -retune on a GPU may find a faster kernel\n",
			rev, autotune.SearchRevision)
	}
}

// logf writes one step's line to w, if any.
func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}
