// Package kernels turns a problem into candidate configurations of every
// kernel family that serves it and renders each one to CUDA source. Each
// family lives in its own package (kernels/direct, kernels/igemm, ...) with
// its template and golden sources; what they share is package
// kernels/family, whose types this package re-exports under their usual
// names.
package kernels

import (
	"fmt"

	"github.com/convgen/convgen/kernels/depthwise"
	"github.com/convgen/convgen/kernels/dgrad"
	"github.com/convgen/convgen/kernels/dgradmma"
	"github.com/convgen/convgen/kernels/dgradscatter"
	"github.com/convgen/convgen/kernels/dgradwin"
	"github.com/convgen/convgen/kernels/direct"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/generic"
	"github.com/convgen/convgen/kernels/igemm"
	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/kernels/mma"
	"github.com/convgen/convgen/kernels/mmahalf"
	"github.com/convgen/convgen/kernels/wgmma"
	"github.com/convgen/convgen/kernels/wgmmahalf"
	"github.com/convgen/convgen/kernels/wgmmaigemm"
	"github.com/convgen/convgen/kernels/wgmmarow"
	"github.com/convgen/convgen/kernels/wgrad"
	"github.com/convgen/convgen/kernels/wgradmma"
	"github.com/convgen/convgen/kernels/winograd"
	"github.com/convgen/convgen/problem"
)

// Config is one point of a family's search space: knob name to value, the
// serialized form of the family's knob struct.
type Config = family.Config

// Limits are the device limits a configuration must respect.
type Limits = family.Limits

// DefaultLimits are sm_80/sm_90 limits, used when no GPU is attached.
func DefaultLimits(arch int) Limits { return family.DefaultLimits(arch) }

// Candidate is a configuration with the static verdict on it.
type Candidate = family.Candidate

// Rejection is a typed static verdict: rule, soft or hard, message.
type Rejection = family.Rejection

// Kernel is a rendered candidate: CUDA source and how to launch it.
type Kernel = family.Kernel

// Launch is a kernel's launch geometry (grid, block, dynamic shared
// memory), the one type the tuner, the tuning cache and the code generator
// carry it in.
type Launch = launch.Launch

// Arch is a GPU architecture name parsed once ("sm_90", "sm_90a",
// "compute_80").
type Arch = launch.Arch

// Family is a kernel template with its knobs.
type Family = family.Family

// ExecutedFLOPs is implemented by families whose kernels do a different
// amount of arithmetic than the direct convolution (Shape.FLOPs).
type ExecutedFLOPs = family.ExecutedFLOPs

// CostModel is implemented by families that rank their candidates before
// compiling (family.CostModel).
type CostModel = family.CostModel

// PredictedCost is candidate c's predicted run time for p in its family's
// cost model (arbitrary units, comparable within one problem and family),
// and false where the family has none.
func PredictedCost(p problem.Problem, c Candidate, lim Limits) (float64, bool) {
	f, err := FamilyByName(c.Family)
	if err != nil {
		return 0, false
	}
	m, ok := f.(CostModel)
	if !ok {
		return 0, false
	}
	return m.Cost(p, c.Config, lim), true
}

// The families, by their usual names.
type (
	Direct     = direct.Family
	Winograd   = winograd.Family
	MMA        = mma.Family
	MMAHalf    = mmahalf.Family
	WGMMA      = wgmma.Family
	WGMMAHalf  = wgmmahalf.Family
	WGMMARow   = wgmmarow.Family
	WGMMAIGEMM = wgmmaigemm.Family
	IGEMM      = igemm.Family
	Generic    = generic.Family
	Depthwise  = depthwise.Family
	Dgrad      = dgrad.Family    // the data gradient (problem.OpDgrad)
	Wgrad      = wgrad.Family    // the filter and bias gradients (problem.OpWgrad)
	WgradMMA   = wgradmma.Family // the filter and bias gradients on tensor cores (sm_90 clusters)
	DgradMMA   = dgradmma.Family // the data gradient on tensor cores, by stride phase
	// DgradScatter is the strided data gradient of few input channels on
	// tensor cores: a dY window's products with each stride phase's taps,
	// each dX element's summed from shared memory.
	DgradScatter = dgradscatter.Family
	// DgradWin is the strided data gradient (tf32, 3xtf32, fp16, bf16) as
	// one folded GEMM on wgmma whose A, a dY window in shared memory, is
	// read in place through descriptors (not yet run on a GPU: rejected
	// as unverified, which autotune's TestDgradWin renders and measures).
	DgradWin = dgradwin.Family
)

// Families lists every kernel family in a stable order: the forward
// families, then the gradients' (each serves one op).
func Families() []Family {
	return []Family{Direct{}, Winograd{}, MMA{}, MMAHalf{}, WGMMA{}, WGMMAHalf{}, WGMMARow{}, WGMMAIGEMM{}, IGEMM{}, Depthwise{}, Generic{}, DgradMMA{}, DgradScatter{}, DgradWin{}, Dgrad{}, WgradMMA{}, Wgrad{}}
}

// FamilyByName finds a family by its name.
func FamilyByName(name string) (Family, error) {
	for _, f := range Families() {
		if f.Name() == name {
			return f, nil
		}
	}
	return nil, fmt.Errorf("unknown kernel family %q", name)
}
