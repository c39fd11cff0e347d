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
		out, warn := stdout, stderr
		if cfg.quiet { // -q: no progress, no warnings; errors still reach stderr below
			warn = io.Discard
			if !cfg.compile && !cfg.list { // whose stdout is the answer asked for
				out = io.Discard
			}
		}
		err = generate(ctx, cfg, out, warn)
	}
	return exitStatus(err, stderr)
}

// exitStatus prints err, if any, on stderr and returns the exit status:
// 0 for none, 2 for a usage error, 1 for any other.
func exitStatus(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "convgen:", oneLine(err.Error()))
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }
