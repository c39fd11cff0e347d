// Package launch describes how a compiled kernel runs: its launch geometry
// (Launch) and the GPU architecture it is compiled for (Arch). It is a leaf
// package, so that the kernel families, the tuner, the tuning cache and the
// code generator share one type for each.
package launch

import (
	"fmt"
	"strconv"
	"strings"
)

// Launch is a kernel's launch geometry. Its JSON field names are those of
// the tuning cache's records (grid, block, shared_bytes); embedded in a
// struct, its fields marshal as that struct's own.
type Launch struct {
	Grid        [3]int `json:"grid"`         // blocks (x, y, z)
	Block       [3]int `json:"block"`        // threads per block (x, y, z)
	SharedBytes int    `json:"shared_bytes"` // dynamic shared memory per block
}

// Threads is the number of threads of one block.
func (l Launch) Threads() int { return l.Block[0] * l.Block[1] * l.Block[2] }

// Blocks is the number of blocks of the grid.
func (l Launch) Blocks() int { return l.Grid[0] * l.Grid[1] * l.Grid[2] }

// String reads e.g. "grid 95,1,256 block 256,1,1 shared 73728".
func (l Launch) String() string {
	return fmt.Sprintf("grid %d,%d,%d block %d,%d,%d shared %d",
		l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2], l.SharedBytes)
}

// Arch is a GPU architecture as NVRTC names it: a real one that a CUBIN is
// built for ("sm_90", or the architecture-specific "sm_90a") or a virtual
// one that PTX targets ("compute_80"). The zero Arch is invalid.
type Arch struct {
	// Virtual is true for compute_XX (PTX), false for sm_XX (CUBIN).
	Virtual bool
	// CC is the compute capability, major*10 + minor: 90 for 9.0, 120
	// for 12.0.
	CC int
	// Suffix is empty or the letter of an architecture- or family-specific
	// variant: "a" (sm_90a, whose code runs on that architecture only) or
	// "f" (CUDA 12.9 and newer).
	Suffix string
}

// SM returns the real architecture sm_<cc>.
func SM(cc int) Arch { return Arch{CC: cc} }

// Compute returns the virtual architecture compute_<cc>.
func Compute(cc int) Arch { return Arch{Virtual: true, CC: cc} }

// ParseArch reads an architecture name: "sm_" or "compute_", the compute
// capability in two or three digits without a leading zero, and an optional
// suffix "a" or "f", e.g. "sm_90", "sm_90a", "compute_80", "sm_120".
func ParseArch(s string) (Arch, error) {
	var a Arch
	rest, ok := strings.CutPrefix(s, "sm_")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "compute_"); !ok {
			return Arch{}, fmt.Errorf("arch %.32q: want sm_XX, sm_XXa or compute_XX", s)
		}
		a.Virtual = true
	}
	if n := len(rest); n > 0 && (rest[n-1] == 'a' || rest[n-1] == 'f') {
		rest, a.Suffix = rest[:n-1], rest[n-1:]
	}
	if len(rest) < 2 || len(rest) > 3 || rest[0] == '0' || strings.ContainsFunc(rest, func(r rune) bool { return r < '0' || r > '9' }) {
		return Arch{}, fmt.Errorf("arch %.32q: want sm_XX, sm_XXa or compute_XX", s)
	}
	a.CC, _ = strconv.Atoi(rest) // two or three digits: cannot fail
	return a, nil
}

// MustParseArch is ParseArch for constant names; it panics on a malformed
// one, so it must never be given user input.
func MustParseArch(s string) Arch {
	a, err := ParseArch(s)
	if err != nil {
		panic(err)
	}
	return a
}

// String is the architecture's name, e.g. "sm_90a" or "compute_80"; the
// zero Arch reads "".
func (a Arch) String() string {
	if a.CC == 0 {
		return ""
	}
	prefix := "sm_"
	if a.Virtual {
		prefix = "compute_"
	}
	return prefix + strconv.Itoa(a.CC) + a.Suffix
}

// Valid reports whether a names an architecture (a parsed or built one).
func (a Arch) Valid() bool { return a.CC >= 10 && a.CC <= 999 }

// Specific reports whether code for a runs only on that architecture (or
// family): it has a suffix.
func (a Arch) Specific() bool { return a.Suffix != "" }

// Base is a without its suffix: sm_90 for sm_90a.
func (a Arch) Base() Arch { a.Suffix = ""; return a }

// WithSuffix is a with the given suffix ("" removes it): sm_90 with "a" is
// sm_90a.
func (a Arch) WithSuffix(s string) Arch { a.Suffix = s; return a }

// Real is the real architecture of the same capability and suffix:
// sm_80 for compute_80.
func (a Arch) Real() Arch { a.Virtual = false; return a }

// VirtualArch is the virtual architecture of the same capability and
// suffix: compute_80 for sm_80.
func (a Arch) VirtualArch() Arch { a.Virtual = true; return a }

// Major is the compute capability's major number: 9 for sm_90.
func (a Arch) Major() int { return a.CC / 10 }

// Minor is the compute capability's minor number: 0 for sm_90.
func (a Arch) Minor() int { return a.CC % 10 }

// Capability is the compute capability as the driver prints it: "9.0".
func (a Arch) Capability() string { return fmt.Sprintf("%d.%d", a.Major(), a.Minor()) }

// MarshalText writes the name, so that an Arch is a string in JSON.
func (a Arch) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText parses a name with ParseArch.
func (a *Arch) UnmarshalText(b []byte) error {
	v, err := ParseArch(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// A kernel may come with a prologue: where the module of kernel NAME also
// has the function NAME + PrologueSuffix, a launch of NAME is two
// launches on the same stream with the same parameters, that prologue
// first (PrologueLaunch's geometry: a grid-stride loop, correct for any
// grid), then NAME. The prologue fills workspaces in the module's global
// memory that NAME reads (kernels/wgmmaigemm's relayout of a 16-bit NCHW
// forward), so the launches of one loaded module must not overlap: every
// launcher (the tuner's worker, convrt, the PyTorch module, the
// benchmark) follows this convention.
const (
	PrologueSuffix  = "_prologue"
	PrologueBlocks  = 1024
	PrologueThreads = 256
)

// PrologueLaunch is a prologue's launch geometry: PrologueBlocks blocks of
// PrologueThreads threads, static shared memory only.
func PrologueLaunch() Launch {
	return Launch{Grid: [3]int{PrologueBlocks, 1, 1}, Block: [3]int{PrologueThreads, 1, 1}}
}
