// Package nvrtc is a small wrapper of NVIDIA's runtime compiler NVRTC.
//
// The shared library is loaded at run time with dlopen through
// github.com/ebitengine/purego, so the package needs no cgo, no CUDA headers
// and no link-time dependency on NVRTC. This matters because NVRTC's soname
// changes with every CUDA major release (libnvrtc.so.11.2, libnvrtc.so.12,
// libnvrtc.so.13, ...): a binary built with this package runs against
// whichever NVRTC the machine has.
//
// A Library is immutable after it has been opened, and all of its methods are
// safe for concurrent use; in particular many goroutines may call
// Library.Compile at the same time (each call uses its own NVRTC program).
package nvrtc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/ebitengine/purego"

	"github.com/convgen/convgen/kernels/launch"
)

// EnvPath is the environment variable that, when set, names the only NVRTC
// shared library that Open tries.
const EnvPath = "CONVGEN_NVRTC"

// cudaLibDir is the conventional directory of the CUDA toolkit's libraries,
// tried after dlopen's own search path.
const cudaLibDir = "/usr/local/cuda/lib64"

// candidateNames are the sonames Open tries, newest first. NVRTC 11.x uses
// the soname libnvrtc.so.11.2 for every 11.x minor release from 11.2 on.
var candidateNames = []string{
	"libnvrtc.so",
	"libnvrtc.so.13",
	"libnvrtc.so.12",
	"libnvrtc.so.11.2",
}

// nvrtcResult codes, from nvrtc.h.
const (
	resSuccess          = 0
	resErrorCompilation = 6
)

// Library is a loaded NVRTC shared library. Create one with Open or OpenPath.
// The library stays loaded for the life of the process.
type Library struct {
	path   string
	handle uintptr

	major, minor int
	archs        []int

	// C entry points, bound with purego.RegisterFunc. nvrtcResult and C int
	// are both 32-bit; nvrtcProgram is an opaque pointer (uintptr).
	getErrorString       func(result int32) string
	version              func(major, minor *int32) int32
	getNumSupportedArchs func(n *int32) int32
	getSupportedArchs    func(archs *int32) int32
	createProgram        func(prog *uintptr, src, name *byte, numHeaders int32, headers, includeNames uintptr) int32
	destroyProgram       func(prog *uintptr) int32
	compileProgram       func(prog uintptr, numOptions int32, options **byte) int32
	getPTXSize           func(prog uintptr, size *uintptr) int32
	getPTX               func(prog uintptr, ptx *byte) int32
	getCUBINSize         func(prog uintptr, size *uintptr) int32
	getCUBIN             func(prog uintptr, cubin *byte) int32
	getProgramLogSize    func(prog uintptr, size *uintptr) int32
	getProgramLog        func(prog uintptr, log *byte) int32
}

// Open loads NVRTC.
//
// If the environment variable CONVGEN_NVRTC (EnvPath) is set, it is the only
// path tried. Otherwise Open tries, in order, libnvrtc.so, libnvrtc.so.13,
// libnvrtc.so.12 and libnvrtc.so.11.2, each first by bare name (dlopen's
// search path: LD_LIBRARY_PATH, the ld.so cache, ...) and then under
// /usr/local/cuda/lib64/. The first one that loads and provides every needed
// symbol wins. If none does, the error lists every name tried together with
// the error of each.
func Open() (*Library, error) {
	if p := os.Getenv(EnvPath); p != "" {
		l, err := openPath(p)
		if err != nil {
			return nil, fmt.Errorf("nvrtc: %s is set: %w", EnvPath, err)
		}
		return l, nil
	}
	var paths []string
	for _, name := range candidateNames {
		paths = append(paths, name, filepath.Join(cudaLibDir, name))
	}
	return openFirst(paths)
}

// openFirst returns the first of paths that opens. If none does, the error
// names each path and why it failed.
func openFirst(paths []string) (*Library, error) {
	errs := make([]error, 0, len(paths))
	for _, p := range paths {
		l, err := openPath(p)
		if err == nil {
			return l, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("nvrtc: cannot load NVRTC (set %s to its path); tried %s:\n%w",
		EnvPath, strings.Join(paths, ", "), errors.Join(errs...))
}

// OpenPath loads the NVRTC shared library at path, which is handed to dlopen
// as is (a name without a slash is looked up on dlopen's search path). It
// fails if the library cannot be loaded or lacks one of the functions this
// package uses (NVRTC 11.2 or newer is needed for nvrtcGetSupportedArchs).
func OpenPath(path string) (*Library, error) {
	l, err := openPath(path)
	if err != nil {
		return nil, fmt.Errorf("nvrtc: %w", err)
	}
	return l, nil
}

// openPath is OpenPath with errors that start with the failing step and path.
func openPath(path string) (*Library, error) {
	if path == "" {
		return nil, errors.New("dlopen: empty library path")
	}
	// dlerror's message is per thread: stay on one thread from dlopen/dlsym
	// to the dlerror call that purego makes after a failure.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("dlopen %s: %w", path, err)
	}
	l := &Library{path: path, handle: h}
	if err := l.bind(); err != nil {
		_ = purego.Dlclose(h)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := l.query(); err != nil {
		_ = purego.Dlclose(h)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// bind resolves every C function used by the package and binds it to the
// corresponding field of l.
func (l *Library) bind() error {
	syms := []struct {
		name string
		fptr any
	}{
		{"nvrtcGetErrorString", &l.getErrorString},
		{"nvrtcVersion", &l.version},
		{"nvrtcGetNumSupportedArchs", &l.getNumSupportedArchs},
		{"nvrtcGetSupportedArchs", &l.getSupportedArchs},
		{"nvrtcCreateProgram", &l.createProgram},
		{"nvrtcDestroyProgram", &l.destroyProgram},
		{"nvrtcCompileProgram", &l.compileProgram},
		{"nvrtcGetPTXSize", &l.getPTXSize},
		{"nvrtcGetPTX", &l.getPTX},
		{"nvrtcGetCUBINSize", &l.getCUBINSize},
		{"nvrtcGetCUBIN", &l.getCUBIN},
		{"nvrtcGetProgramLogSize", &l.getProgramLogSize},
		{"nvrtcGetProgramLog", &l.getProgramLog},
	}
	for _, s := range syms {
		addr, err := purego.Dlsym(l.handle, s.name)
		if err != nil {
			return fmt.Errorf("dlsym %s: %w", s.name, err)
		}
		purego.RegisterFunc(s.fptr, addr)
	}
	return nil
}

// query caches the version and the supported architectures, which cannot
// change while the library is loaded.
func (l *Library) query() error {
	var major, minor int32
	if err := l.check("nvrtcVersion", l.version(&major, &minor)); err != nil {
		return err
	}
	l.major, l.minor = int(major), int(minor)

	var n int32
	if err := l.check("nvrtcGetNumSupportedArchs", l.getNumSupportedArchs(&n)); err != nil {
		return err
	}
	if n <= 0 {
		return fmt.Errorf("nvrtcGetNumSupportedArchs returned %d", n)
	}
	archs := make([]int32, n)
	if err := l.check("nvrtcGetSupportedArchs", l.getSupportedArchs(&archs[0])); err != nil {
		return err
	}
	l.archs = make([]int, n)
	for i, a := range archs {
		l.archs[i] = int(a)
	}
	slices.Sort(l.archs)
	return nil
}

// Error is an NVRTC API call that returned a status other than success,
// outside of a rejected source (which is reported as a *CompileError).
type Error struct {
	// Func is the NVRTC function that failed, e.g. "nvrtcCompileProgram".
	Func string
	// Code is the nvrtcResult it returned, e.g. 5 (NVRTC_ERROR_INVALID_OPTION).
	Code int
	// Message is nvrtcGetErrorString of Code, e.g. "NVRTC_ERROR_INVALID_OPTION".
	Message string
	// Log is the program log, when there is one (e.g. naming a bad option).
	Log string
}

// Error implements the error interface.
func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.Func, e.Message, e.Code)
	if log := strings.TrimSpace(e.Log); log != "" {
		s += ": " + log
	}
	return s
}

// check turns an nvrtcResult into an error (nil on NVRTC_SUCCESS).
func (l *Library) check(fn string, res int32) error {
	if res == resSuccess {
		return nil
	}
	return &Error{Func: fn, Code: int(res), Message: l.getErrorString(res)}
}

// Path returns the path that was handed to dlopen and loaded successfully,
// e.g. "libnvrtc.so.11.2" or "/usr/local/cuda/lib64/libnvrtc.so".
func (l *Library) Path() string { return l.path }

// Version returns NVRTC's version as reported by nvrtcVersion, e.g. 11, 8.
func (l *Library) Version() (major, minor int) { return l.major, l.minor }

// VersionString returns the version as "major.minor", e.g. "11.8".
func (l *Library) VersionString() string { return fmt.Sprintf("%d.%d", l.major, l.minor) }

// SupportedArchs returns, in increasing order, the SM architectures NVRTC can
// generate code for (nvrtcGetSupportedArchs), e.g. [35 37 50 ... 90]. The
// slice is a copy that the caller may modify.
func (l *Library) SupportedArchs() []int { return slices.Clone(l.archs) }

// SupportsArch reports whether NVRTC can compile for arch, a real
// architecture such as "sm_90". An architecture-specific variant such as
// "sm_90a" is supported only by NVRTC 12 or newer, when its base (90) is
// listed. Malformed names report false.
func (l *Library) SupportsArch(arch string) bool {
	sm, suffix, err := parseArch(arch)
	if err != nil {
		return false
	}
	if suffix != "" && l.major < 12 {
		return false
	}
	return slices.Contains(l.archs, sm)
}

// parseArch splits "sm_90a" into 90 and "a" (launch.ParseArch). The
// suffix, when present, is "a" or, from CUDA 12.9, "f".
func parseArch(arch string) (sm int, suffix string, err error) {
	a, err := launch.ParseArch(arch)
	if err != nil || a.Virtual {
		return 0, "", fmt.Errorf("arch %q: want the form sm_XX or sm_XXa", arch)
	}
	return a.CC, a.Suffix, nil
}
