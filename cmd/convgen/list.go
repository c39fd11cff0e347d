package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/pipeline"
)

// defaultListArch is the architecture -list and -compile-only use without
// -arch.
const defaultListArch = "sm_90"

// listLimits are the static limits -list checks candidates against for
// arch ("sm_90"): those of a tuning machine with that GPU and NVRTC 12 or
// newer (so on sm_90 the sm_90a families are kept), as Tune would use.
func listLimits(arch string) (kernels.Limits, error) {
	a, err := launch.ParseArch(arch)
	if err != nil || a.Virtual {
		return kernels.Limits{}, usageError{fmt.Errorf("-arch %q: want sm_XY", arch)}
	}
	lim := kernels.DefaultLimits(a.CC)
	lim.SM90a = a.CC == 90
	return lim, nil
}

// list prints the candidate IDs of the problem for -arch, one a line, the
// kept ones (what -pin accepts); with -v the rejected ones follow, each as
// "rejected ID: reason", then the families of the problem's op that
// decline it, each as "declined FAMILY: reason". It writes nothing and
// needs no GPU.
func list(c config, stdout io.Writer) error {
	arch := c.arch
	if arch == "" {
		arch = defaultListArch
	}
	lim, err := listLimits(arch)
	if err != nil {
		return err
	}
	cands, err := kernels.Enumerate(c.problem, lim)
	if err != nil {
		return fmt.Errorf("list candidates: %w", err)
	}
	kept := 0
	for _, cand := range cands {
		if cand.Rejected == "" {
			kept++
			fmt.Fprintln(stdout, cand.ID())
		}
	}
	if c.verbose {
		for _, cand := range cands {
			if cand.Rejected != "" {
				fmt.Fprintf(stdout, "rejected %s: %s\n", cand.ID(), oneLine(cand.Rejected))
			}
		}
		// The families of the problem's op that decline it, with their
		// reason (a family that computes another op is left out).
		for _, f := range kernels.Families() {
			if err := f.Serves(c.problem); err != nil && !errors.Is(err, family.ErrOtherOp) {
				fmt.Fprintf(stdout, "declined %s: %s\n", f.Name(), oneLine(err.Error()))
			}
		}
		fmt.Fprintf(stdout, "%s for %s: %d candidates, %d kept, %d rejected statically\n", c.problem, arch, len(cands), kept, len(cands)-kept)
	}
	if kept == 0 {
		// As tuning would: exit status 4 (exitUnsupported).
		return fmt.Errorf("list candidates for %s: every one of the %d is rejected statically (-v says why): %w", arch, len(cands), pipeline.ErrUnsupported)
	}
	return nil
}
