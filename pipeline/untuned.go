package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/gen"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/report"
)

// untunedFamilies are the families an untuned package prefers, in order:
// igemm (tensor cores, any groups=1 shape in fp16, bf16, tf32, 3xtf32),
// depthwise (groups = C, memory-bound), then generic (any shape, FP32
// FFMA); then any other portable family.
var untunedFamilies = []string{"igemm", "depthwise", "generic"}

// untunedKernel picks the heuristic default of p: the first configuration
// kept for compute_80 (sm_80's limits) of the first preferred family that
// serves p, rendered, specific to no architecture and within the
// fallback's shared-memory limit.
func untunedKernel(p problem.Problem) (kernels.Candidate, kernels.Kernel, error) {
	cands, err := kernels.Enumerate(p, kernels.DefaultLimits(80))
	if err != nil {
		return kernels.Candidate{}, kernels.Kernel{}, mark(ErrUnsupported, err)
	}
	rank := func(family string) int {
		if i := slices.Index(untunedFamilies, family); i >= 0 {
			return i
		}
		return len(untunedFamilies)
	}
	slices.SortStableFunc(cands, func(a, b kernels.Candidate) int { return rank(a.Family) - rank(b.Family) })
	var why []string
	for _, c := range cands {
		if c.Rejected != "" {
			continue
		}
		k, err := kernels.RenderCandidate(p, c)
		switch {
		case err != nil:
			why = append(why, fmt.Sprintf("%s: %v", c.ID(), err))
		case k.ArchSuffix != "" || k.SharedBytes > autotune.FallbackSharedLimit:
		default:
			return c, k, nil
		}
		if len(why) > 3 {
			break
		}
	}
	return kernels.Candidate{}, kernels.Kernel{}, mark(ErrUnsupported, fmt.Errorf("no portable configuration of %s for %s: %s", p, autotune.FallbackArch, strings.Join(why, "; ")))
}

// writeUntuned writes the package of the problem's heuristic default
// configuration, compiled to PTX for compute_80 with NVRTC, marked untuned
// in its doc and report: nothing is measured, no GPU is needed.
func writeUntuned(r Request) (Result, error) {
	lib, err := nvrtc.Open()
	if err != nil {
		return Result{}, fmt.Errorf("-untuned compiles the default kernel with NVRTC: %w", err)
	}
	cand, k, err := untunedKernel(r.Problem)
	if err != nil {
		return Result{}, fmt.Errorf("-untuned: %w", err)
	}
	sm := strings.Replace(autotune.FallbackArch, "compute_", "sm_", 1)
	out, err := lib.CompilePTX(k.Source, nvrtc.Options{Name: k.Family + ".cu", Arch: sm})
	if err != nil {
		return Result{}, fmt.Errorf("-untuned: compile %s for %s: %w", cand.ID(), autotune.FallbackArch, err)
	}
	note := fmt.Sprintf("The kernel is %s, the heuristic default configuration (first kept configuration of the first portable family), compiled by NVRTC %s to PTX for %s; nothing was checked or timed on a GPU.",
		cand.ID(), lib.VersionString(), autotune.FallbackArch)
	b := gen.Binding{Package: r.Pkg, Problem: r.Problem, Kernel: k.Name, Launch: k.Launch, Arch: autotune.FallbackArch,
		PTX: out.PTX, Command: r.Command, Untuned: true,
		Summary: fmt.Sprintf("untuned: no measurement; default configuration %s as PTX for %s", cand.ID(), autotune.FallbackArch)}
	data := report.Data{SchemaVersion: report.SchemaVersion, Shape: r.Problem.Shape.String(), Precision: string(r.Problem.Precision),
		Layout: string(r.Problem.Layout), Epilogue: r.Problem.Epilogue.String(), NVRTC: lib.VersionString(), KernelSHA256: kernels.Hash(k), Command: r.Command,
		Winner: cand.ID(), WinnerConfig: cand.Config, Untuned: note}
	if r.Problem.Op != problem.OpFprop {
		data.Op = r.Problem.Op.String()
	}
	if r.Problem.OutDiffers() {
		data.OutPrecision = string(r.Problem.OutPrecision)
	}
	logf(r.Log, "no record and no GPU: writing an untuned package (%s, PTX for %s)\n", cand.ID(), autotune.FallbackArch)
	res := Result{Outcome: Untuned}
	err = writeFiles(r, b, data, nil, &res)
	return res, err
}
