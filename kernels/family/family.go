// Package family holds what the kernel families and package kernels share:
// configurations (Config, the serialized knobs) and their conversion to a
// family's knob struct, device limits, candidates with their typed
// rejections, rendered kernels, the Family interface, the shape's template
// data and partial, and the arithmetic helpers of the families' geometry.
package family

import (
	"fmt"
	"sort"
	"strings"

	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/problem"
)

// Config is one point of a family's search space: knob name to value.
type Config map[string]int

// String lists the knobs sorted by name, e.g. "TileH=8,TileK=32".
func (c Config) String() string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, c[k])
	}
	return strings.Join(parts, ",")
}

// Limits are the device limits a configuration must respect.
type Limits struct {
	MaxThreadsPerBlock int // 1024 on every current GPU
	MaxSharedPerBlock  int // bytes with opt-in (232448 on sm_90)
	RegistersPerSM     int // 65536
	MaxRegsPerThread   int // 255
	SMs                int // multiprocessors, for grids of one block per SM (132 on H100/H200 SXM)
	// ClusterSMs is how many SMs thread-block clusters of 4 or more blocks
	// fill at once, the rest of the GPU's SMs left out by how they group
	// (GPCs); 0 when unknown (read as SMs). The H100 SXM's driver
	// (cuOccupancyMaxActiveClusters) runs 15 clusters of 8 or 30 of 4
	// one-block-an-SM blocks at once: 120 of its 132 SMs (clusters of 5 to
	// 7, not measured, are counted the same way).
	ClusterSMs int
	// Arch is the target's compute capability times ten (80, 90); 0 when
	// unknown. The mma.sync families need 80 or more.
	Arch int
	// SM90a says that sm_90a code (wgmma) can be compiled and run: the
	// device is sm_90 and NVRTC is 12 or newer. Off in DefaultLimits.
	SM90a bool
}

// DefaultLimits are sm_80/sm_90 limits, used when no GPU is attached.
func DefaultLimits(arch int) Limits {
	l := Limits{MaxThreadsPerBlock: 1024, MaxSharedPerBlock: 232448, RegistersPerSM: 65536, MaxRegsPerThread: 255, SMs: 132, ClusterSMs: 120, Arch: arch}
	if arch == 80 {
		l.MaxSharedPerBlock = 166912
	}
	return l
}

// Unverified is the rule name of a rejection that keeps a configuration
// out of the search until its kernels have run on a GPU (the GPU tests
// that check them look for it).
const Unverified = "unverified"

// BlockSlots is how many blocks of a kernel in clusters of clusterSize
// blocks (1: no clusters) run at once where each SM holds resident of
// them: clusters of 4 or more whole on ClusterSMs, smaller ones (not
// measured) and blocks on every SM.
func (l Limits) BlockSlots(clusterSize, resident int) int {
	sms := max(1, l.SMs)
	if clusterSize >= 4 && l.ClusterSMs > 0 {
		sms = min(sms, l.ClusterSMs)
	}
	return max(1, sms/max(1, clusterSize)*max(1, clusterSize)*max(1, resident))
}

// Candidate is a configuration with the static verdict on it: Rejected is
// empty for configurations worth compiling, otherwise it says why not
// ("rule: message", Rejection.String); Rejection is the same verdict typed,
// as the family gave it.
type Candidate struct {
	Family    string
	Config    Config
	Rejected  string
	Rejection Rejection
}

// ID names the candidate uniquely within a problem: "family/knobs".
func (c Candidate) ID() string { return c.Family + "/" + c.Config.String() }

// Kernel is a rendered candidate: CUDA source and how to launch it. The
// kernel's parameters are always (out, in, filter, bias) device pointers.
type Kernel struct {
	Family string
	Config Config
	Name   string // the __global__ function's name
	Source string
	Launch // grid, block and dynamic shared memory per block
	// ArchSuffix is appended to the device's architecture to compile the
	// kernel: "a" for code that only sm_90a runs (wgmma), else empty.
	ArchSuffix string
}

// Launch is a kernel's launch geometry (grid, block, dynamic shared
// memory), the one type the tuner, the tuning cache and the code generator
// carry it in.
type Launch = launch.Launch

// Arch is a GPU architecture name parsed once ("sm_90", "sm_90a",
// "compute_80").
type Arch = launch.Arch

// Family is a kernel template with its knobs.
type Family interface {
	// Name is the family's short name.
	Name() string
	// Template is the name of the family's template file, embedded in
	// the family's package beside its Go code.
	Template() string
	// Serves returns nil if the family can compute the problem.
	Serves(p problem.Problem) error
	// Space enumerates every configuration, rejected ones with a reason.
	Space(p problem.Problem, lim Limits) []Candidate
	// Render produces the kernel for one configuration.
	Render(p problem.Problem, cfg Config) (Kernel, error)
}

// CostModel is implemented by families that can rank their candidates
// before any is compiled. Cost is a configuration's predicted run time for
// p in arbitrary units, comparable only between the configurations of one
// problem (lower first); the tuner explores such a family's candidates in
// that order instead of a random one.
type CostModel interface {
	Cost(p problem.Problem, cfg Config, lim Limits) float64
}

// ExecutedFLOPs is implemented by families whose kernels do a different
// amount of arithmetic than the direct convolution (Shape.FLOPs), such as
// Winograd's fewer multiplies.
type ExecutedFLOPs interface {
	// ExecutedFLOPs is the arithmetic of the kernel's main loop for p,
	// 2 FLOP per multiply-add.
	ExecutedFLOPs(p problem.Problem, cfg Config) float64
}

// Rejection is the static verdict against a configuration: the rule it
// breaks ("threads", "waste", ...), whether the rule is soft (it only
// prunes: when soft rules would leave a family with no candidate at all,
// the candidates they rejected come back) and what exactly is wrong. The
// zero Rejection rejects nothing.
type Rejection struct {
	Rule    string
	Soft    bool
	Message string
}

// String is the reason as Candidate.Rejected carries it, "rule: message",
// or "" for the zero Rejection.
func (r Rejection) String() string {
	if r.Rule == "" {
		return ""
	}
	return r.Rule + ": " + r.Message
}

// Hard is a Rejection by a rule that always holds (a device limit, a
// shape the template cannot handle).
func Hard(rule, format string, args ...any) Rejection {
	return Rejection{Rule: rule, Message: fmt.Sprintf(format, args...)}
}

// Soft is a Rejection by a pruning rule (waste, occupancy, warps), which
// AdmitSoft lifts when it would leave the family empty.
func Soft(rule, format string, args ...any) Rejection {
	return Rejection{Rule: rule, Soft: true, Message: fmt.Sprintf(format, args...)}
}

// AdmitSoft lifts the soft rejections (Rejection.Soft: rules that only
// prune) of a family's candidates when they would leave it with no
// candidate at all.
func AdmitSoft(cands []Candidate) []Candidate {
	for _, c := range cands {
		if c.Rejected == "" {
			return cands
		}
	}
	for i, c := range cands {
		if c.Rejection.Soft {
			cands[i].Rejected, cands[i].Rejection = "", Rejection{}
		}
	}
	return cands
}
