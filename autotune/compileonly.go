package autotune

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// StatusCompiled marks a candidate that was compiled and not measured
// (CompileOnly).
const StatusCompiled Status = "compiled"

// CompileOnly renders and compiles every candidate of p that passes the
// static checks for arch (e.g. "sm_90"), on the CPU, jobs at a time: no GPU
// is needed. Each kept candidate comes back as StatusCompiled with its
// resources, or StatusCompile with NVRTC's message; rejected ones keep
// their reason. With pins (candidate IDs), only those are compiled, the
// others come back as StatusSkipped ("not pinned"), and a pin that names no
// candidate of p, or a rejected one, is an error, as in Tune.
//
// A compile still running after compileTimeout (0: DefaultCompileTimeout)
// comes back as StatusCompile, saying so.
func CompileOnly(ctx context.Context, lib *nvrtc.Library, p problem.Problem, arch string, jobs int, pins []string, compileTimeout time.Duration, progress io.Writer) ([]Trial, error) {
	if !lib.SupportsArch(arch) {
		return nil, fmt.Errorf("NVRTC %s cannot target %s", lib.VersionString(), arch)
	}
	// Kernels that need an architecture-specific variant (wgmma: sm_90a)
	// add the suffix themselves.
	a, err := launch.ParseArch(arch)
	if err != nil || a.Virtual {
		return nil, fmt.Errorf("arch %q: want sm_XY", arch)
	}
	n := a.CC
	lim := kernels.DefaultLimits(n)
	lim.SM90a = n == 90 && lib.SupportsArch("sm_90a")
	cands, err := kernels.Enumerate(p, lim)
	if err != nil {
		return nil, err
	}
	if err := checkPins(pins, cands, p); err != nil {
		return nil, err
	}
	s := &search{opt: withDefaults(Options{Problem: p, Jobs: jobs, CompileTimeout: compileTimeout}), lib: lib, arch: arch}
	s.trials = make([]Trial, len(cands))
	var kept []int
	for i, c := range cands {
		s.trials[i] = Trial{ID: c.ID(), Family: c.Family, Config: c.Config, Status: StatusRejected, Reason: c.Rejected}
		switch {
		case rejected(pins, c):
		case !pinned(pins, c.ID()):
			s.trials[i].Status, s.trials[i].Reason = StatusSkipped, notPinned
		default:
			kept = append(kept, i)
		}
	}
	if progress != nil {
		fmt.Fprintf(progress, "compiling %d of %d configs for %s with NVRTC %s\n", len(kept), len(cands), arch, lib.VersionString())
	}
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range s.opt.Jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := &s.trials[i]
				if out, err := s.compile(i); err != nil {
					t.Status, t.Reason = StatusCompile, err.Error()
				} else {
					out.apply(t)
					t.Status = StatusCompiled
				}
				mu.Lock()
				done++
				if progress != nil {
					fmt.Fprintf(progress, "[%3d/%d] %-8s %3d regs %5d B spills  %s\n", done, len(kept), t.Status, t.Registers, t.SpillStores, t.ID)
					if t.Warnings != "" {
						fmt.Fprintf(progress, "          %s\n", strings.ReplaceAll(t.Warnings, "\n", "\n          "))
					}
				}
				mu.Unlock()
			}
		}()
	}
	for _, i := range kept {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("compiling interrupted: %w", err)
	}
	return s.trials, nil
}
