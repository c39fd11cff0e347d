package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

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

// CompileRequest is a search space to compile on the CPU, without a GPU.
type CompileRequest struct {
	Problem problem.Problem
	// Arch is the target ("sm_90" when empty).
	Arch string
	// Pins, when set, compile only these candidate IDs.
	Pins []string
	// Jobs is the number of concurrent NVRTC compiles (0: the CPUs).
	Jobs           int
	CompileTimeout time.Duration
	// SourceDir, when set, receives the CUDA source of every candidate
	// compiled or failing to compile (writeSources).
	SourceDir string
	// Log receives a line per failed candidate and the counts; Progress
	// the compiles' progress. nil for none.
	Log, Progress io.Writer
}

// DefaultArch is the architecture CompileOnly targets without one.
const DefaultArch = "sm_90"

// CompileOnly renders and NVRTC-compiles every candidate of r.Problem that
// passes the static checks for r.Arch (or only the pinned ones) and says
// how many compiled, failed and were rejected; it fails when any failed
// to compile.
func CompileOnly(ctx context.Context, r CompileRequest) error {
	r.Problem = r.Problem.Canonical()
	if err := checkOp(r.Problem); err != nil {
		return err
	}
	if err := Served(r.Problem); err != nil {
		return err
	}
	lib, err := nvrtc.Open()
	if err != nil {
		return fmt.Errorf("-compile-only needs NVRTC: %w", err)
	}
	arch := r.Arch
	if arch == "" {
		arch = DefaultArch
	}
	trials, err := autotune.CompileOnly(ctx, lib, r.Problem, arch, r.Jobs, r.Pins, r.CompileTimeout, r.Progress)
	if errors.Is(err, autotune.ErrBadPin) {
		return mark(ErrInvalid, err)
	}
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
			logf(r.Log, "failed %s: %s\n", t.ID, oneLine(t.Reason))
		case autotune.StatusSkipped:
			unpinned++
		default:
			rejected++
		}
	}
	pinned := ""
	if len(r.Pins) > 0 {
		pinned = fmt.Sprintf(", %d not pinned", unpinned)
	}
	logf(r.Log, "%s for %s: %d compiled, %d failed, %d rejected statically%s\n", r.Problem, arch, compiled, failed, rejected, pinned)
	if r.SourceDir != "" {
		n, err := writeSources(r.SourceDir, r.Problem, trials)
		if err != nil {
			return err
		}
		logf(r.Log, "wrote %d CUDA sources to %s\n", n, r.SourceDir)
	}
	if failed > 0 {
		if failed == 1 {
			return errors.New("1 candidate failed to compile")
		}
		return fmt.Errorf("%d candidates failed to compile", failed)
	}
	return nil
}

// oneLine joins the lines of s with "; ".
func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }
