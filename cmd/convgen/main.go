// Command convgen writes a convolution kernel for one exact shape, autotuned
// on the GPU, as a Go package that embeds it.
//
//	convgen -shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -o ./conv
//
// Flags may be written with one dash or two. With a matching record in the
// tuning cache (-cache) no GPU is needed: the package is written from the
// record. Otherwise convgen tunes, which needs a build with the cuda tag and
// a GPU. Run `convgen -help` for every flag; the README has the details.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/pipeline"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == workerArg {
		if err := autotune.ServeWorker(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "convgen worker:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// workerArg, as the first argument, turns the binary into a tuning worker.
const workerArg = "--worker"

// usageError is a problem with the command line: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// run is the whole command; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	config, rest, err := splitConfig(args)
	if err == nil && config != "" {
		err = runConfig(ctx, config, rest, stdout, stderr)
		return exitStatus(err, stderr)
	}
	if err != nil {
		return exitStatus(err, stderr)
	}
	cfg, err := parseFlags(args, stdout)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err == nil {
		out, warn := streams(cfg, stdout, stderr)
		err = generate(ctx, cfg, out, warn)
	}
	return exitStatus(err, stderr)
}

// streams returns the writers of a run of cfg: out for its result lines,
// warn for its warnings. With -q both discard, except the stdout of
// -compile-only and -list, which is the answer asked for; errors still reach
// stderr through exitStatus.
func streams(cfg config, stdout, stderr io.Writer) (out, warn io.Writer) {
	if !cfg.quiet {
		return stdout, stderr
	}
	if cfg.compile || cfg.list {
		return stdout, io.Discard
	}
	return io.Discard, io.Discard
}

// The exit statuses, one per kind of failure (docs/flags.md).
const (
	exitOK          = 0   // success, -help included
	exitFailed      = 1   // any other failure: a cache or directory that cannot be read or written, NVRTC missing, ...
	exitUsage       = 2   // a bad command line: flag, value, -shape, or a request to change (-device to pick a record)
	exitNoRecord    = 3   // no GPU in this build and no current record to replay: tune on a GPU, or -untuned
	exitUnsupported = 4   // a valid problem no kernel serves: no family serves it, or every candidate is rejected statically
	exitNoCandidate = 5   // tuning measured candidates and none passed verification
	exitInterrupted = 130 // interrupted (SIGINT), as a shell reports it
)

// exitCode maps err to the exit status of its kind; the one place that
// does.
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue), errors.Is(err, pipeline.ErrInvalid):
		return exitUsage
	case errors.Is(err, pipeline.ErrNoRecord):
		return exitNoRecord
	case errors.Is(err, pipeline.ErrUnsupported):
		return exitUnsupported
	case errors.Is(err, pipeline.ErrNoCandidate):
		return exitNoCandidate
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	}
	return exitFailed
}

// exitStatus prints err, if any, on stderr and returns its exit status
// (exitCode).
func exitStatus(err error, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintln(stderr, "convgen:", oneLine(err.Error()))
	}
	return exitCode(err)
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }
