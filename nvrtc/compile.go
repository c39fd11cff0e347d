package nvrtc

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// defaultName is the program name used when Options.Name is empty.
const defaultName = "kernel.cu"

// Options controls one Compile call.
type Options struct {
	// Name is the program name NVRTC uses in its messages, e.g.
	// "direct_conv.cu". Empty means "kernel.cu".
	Name string
	// Arch is the real architecture to generate machine code for, e.g.
	// "sm_80", "sm_90" or "sm_90a" (the latter needs NVRTC 12 or newer).
	Arch string
	// Extra holds additional NVRTC options, e.g. "-lineinfo" or
	// "--maxrregcount=64". Options that relax IEEE FP32 semantics
	// (--use_fast_math and friends) are refused: see Compile.
	Extra []string
}

// Resources is the resource usage of one __global__ kernel, as reported by
// ptxas for the compiled architecture.
type Resources struct {
	// Registers is the number of 32-bit registers per thread.
	Registers int
	// SharedBytes is the static shared memory per block, in bytes (dynamic
	// shared memory is chosen at launch and not included).
	SharedBytes int
	// StackBytes is the per-thread stack frame, in bytes.
	StackBytes int
	// SpillStores is the number of bytes of register spill stores.
	SpillStores int
	// SpillLoads is the number of bytes of register spill loads.
	SpillLoads int
}

// Result is the output of a successful Compile.
type Result struct {
	// CUBIN is the ELF machine code for Options.Arch (nvrtcGetCUBIN).
	CUBIN []byte
	// PTX is the PTX for the virtual architecture matching Options.Arch
	// (compute_90 for sm_90; its .target line reads "sm_90").
	PTX string
	// Log is the compiler log (warnings), possibly empty. ptxas's verbose
	// resource lines, which Compile requests itself, are removed; ptxas
	// warnings are kept.
	Log string
	// Resources holds the resource usage of every __global__ kernel, keyed by
	// the kernel's symbol name: the mangled name, or the plain name for
	// extern "C" kernels.
	Resources map[string]Resources
}

// CompileError is returned when NVRTC rejects the source
// (NVRTC_ERROR_COMPILATION); Log holds the compiler's messages, which name
// the offending lines as "Name(line): error: ...".
type CompileError struct {
	// Name is the program name (Options.Name, or its default).
	Name string
	// Log is NVRTC's program log.
	Log string
}

// Error implements the error interface; the message includes the log.
func (e *CompileError) Error() string {
	return fmt.Sprintf("nvrtc: compiling %s failed:\n%s", e.Name, strings.TrimRight(e.Log, "\n"))
}

// fastMathOptions relax FP32 semantics; convgen needs strict FP32, so Compile
// refuses them. The defaults (--ftz=false --prec-div=true --prec-sqrt=true
// --fmad=true) are what nvcc uses without --use_fast_math.
var fastMathOptions = []string{
	"--use_fast_math", "-use_fast_math",
	"--ftz=true", "-ftz=true",
	"--prec-div=false", "-prec-div=false",
	"--prec-sqrt=false", "-prec-sqrt=false",
}

// Compile compiles the CUDA C++ source src for opt.Arch and returns the
// CUBIN, the PTX, the compiler log and the resource usage of each kernel.
//
// Compile always passes "--gpu-architecture=<Arch>", "-std=c++17" and
// "--ptxas-options=-v" (the last one is how Resources are obtained: ptxas's
// verbose report is parsed from the program log), followed by opt.Extra. It
// never passes --use_fast_math and refuses it, or any other option that
// relaxes FP32 semantics, in opt.Extra.
//
// If NVRTC rejects the source, the error is a *CompileError carrying the log.
// Other NVRTC failures (for instance an unknown option) are reported as an
// *Error wrapped with context. Every NVRTC program created is destroyed
// before Compile returns. Compile is safe for concurrent use.
func (l *Library) Compile(src string, opt Options) (*Result, error) {
	name, sm, suffix, err := l.vet(src, opt, opt.Arch)
	if err != nil {
		return nil, err
	}

	opts := make([]string, 0, 3+len(opt.Extra))
	opts = append(opts, "--gpu-architecture="+opt.Arch, "-std=c++17", "--ptxas-options=-v")
	opts = append(opts, opt.Extra...)
	out, err := l.compile(src, name, opts, true)
	if err != nil {
		return nil, err
	}
	res := &Result{CUBIN: out.cubin, PTX: out.ptx}
	res.Log, res.Resources = parsePtxasVerbose(out.log)

	if res.PTX == "" {
		// The PTX of an sm_XX compilation is normally available (it is on
		// NVRTC 11.8); if this NVRTC does not keep it, compile again for the
		// virtual architecture.
		vopts := make([]string, 0, 2+len(opt.Extra))
		vopts = append(vopts, fmt.Sprintf("--gpu-architecture=compute_%d%s", sm, suffix), "-std=c++17")
		vopts = append(vopts, opt.Extra...)
		vout, err := l.compile(src, name, vopts, false)
		if err != nil {
			return nil, fmt.Errorf("nvrtc: compiling %s for PTX: %w", name, err)
		}
		res.PTX = vout.ptx
		if res.PTX == "" {
			return nil, fmt.Errorf("nvrtc: compiling %s: NVRTC returned no PTX", name)
		}
	}
	return res, nil
}

// CompilePTX compiles src to PTX only, for the virtual architecture of
// opt.Arch ("sm_90" or "sm_90a" → compute_90): ptxas does not run, so the
// result has no CUBIN and no Resources. The base architecture must be one
// this NVRTC supports; the suffix is dropped, so an NVRTC too old for
// sm_90a still checks such a source's C++ (inline PTX is passed through
// unchecked; ptxas would check it). Options are vetted as in Compile.
func (l *Library) CompilePTX(src string, opt Options) (*Result, error) {
	sm, _, err := parseArch(opt.Arch)
	if err != nil {
		return nil, fmt.Errorf("nvrtc: compiling %s: %w", cmp.Or(opt.Name, defaultName), err)
	}
	name, _, _, err := l.vet(src, opt, fmt.Sprintf("sm_%d", sm))
	if err != nil {
		return nil, err
	}
	opts := append([]string{fmt.Sprintf("--gpu-architecture=compute_%d", sm), "-std=c++17"}, opt.Extra...)
	out, err := l.compile(src, name, opts, false)
	if err != nil {
		return nil, err
	}
	if out.ptx == "" {
		return nil, fmt.Errorf("nvrtc: compiling %s: NVRTC returned no PTX", name)
	}
	return &Result{PTX: out.ptx, Log: out.log, Resources: map[string]Resources{}}, nil
}

// vet checks what Compile and CompilePTX share: opt.Arch's form, that this
// NVRTC supports target (opt.Arch itself, or its base for PTX only), no NUL
// bytes, no option relaxing FP32 semantics. It returns the program name and
// opt.Arch's number and suffix.
func (l *Library) vet(src string, opt Options, target string) (name string, sm int, suffix string, err error) {
	name = cmp.Or(opt.Name, defaultName)
	sm, suffix, err = parseArch(opt.Arch)
	if err != nil {
		return "", 0, "", fmt.Errorf("nvrtc: compiling %s: %w", name, err)
	}
	if !l.SupportsArch(target) {
		return "", 0, "", fmt.Errorf("nvrtc: compiling %s: NVRTC %s does not support %s (supported: %v)",
			name, l.VersionString(), target, l.archs)
	}
	if strings.IndexByte(src, 0) >= 0 || strings.IndexByte(name, 0) >= 0 {
		return "", 0, "", fmt.Errorf("nvrtc: compiling %s: source or name contains a NUL byte", name)
	}
	for _, o := range opt.Extra {
		if slices.Contains(fastMathOptions, o) {
			return "", 0, "", fmt.Errorf("nvrtc: compiling %s: option %q relaxes FP32 semantics and is not allowed", name, o)
		}
		if strings.IndexByte(o, 0) >= 0 {
			return "", 0, "", fmt.Errorf("nvrtc: compiling %s: option %q contains a NUL byte", name, o)
		}
	}
	return name, sm, suffix, nil
}

// output is what one NVRTC program produced.
type output struct {
	cubin []byte
	ptx   string
	log   string
}

// compile runs one NVRTC program: create, compile, fetch the log, the PTX
// and (if wantCUBIN) the CUBIN, destroy. A missing PTX is not an error here
// (ptx is then empty); a missing CUBIN is.
func (l *Library) compile(src, name string, opts []string, wantCUBIN bool) (out output, err error) {
	var prog uintptr
	srcC, nameC := cString(src), cString(name)
	if err := l.check("nvrtcCreateProgram", l.createProgram(&prog, &srcC[0], &nameC[0], 0, 0, 0)); err != nil {
		return out, fmt.Errorf("nvrtc: compiling %s: %w", name, err)
	}
	defer func() {
		if derr := l.check("nvrtcDestroyProgram", l.destroyProgram(&prog)); derr != nil && err == nil {
			err = fmt.Errorf("nvrtc: compiling %s: %w", name, derr)
		}
	}()

	cres := l.compileWithOptions(prog, opts)
	// The log is worth having whatever the outcome.
	log, lerr := l.programLog(prog)
	if lerr != nil {
		return out, fmt.Errorf("nvrtc: compiling %s: %w", name, lerr)
	}
	out.log = log
	switch cres {
	case resSuccess:
	case resErrorCompilation:
		return out, &CompileError{Name: name, Log: log}
	default:
		return out, fmt.Errorf("nvrtc: compiling %s with options %q: %w", name, opts,
			&Error{Func: "nvrtcCompileProgram", Code: int(cres), Message: l.getErrorString(cres), Log: log})
	}

	if ptx, err := l.fetch(prog, "nvrtcGetPTX", l.getPTXSize, l.getPTX); err == nil {
		out.ptx = strings.TrimRight(string(ptx), "\x00")
	}
	if wantCUBIN {
		cubin, err := l.fetch(prog, "nvrtcGetCUBIN", l.getCUBINSize, l.getCUBIN)
		if err != nil {
			return out, fmt.Errorf("nvrtc: compiling %s: %w", name, err)
		}
		if len(cubin) == 0 {
			return out, fmt.Errorf("nvrtc: compiling %s: NVRTC returned an empty CUBIN", name)
		}
		out.cubin = cubin
	}
	return out, nil
}

// compileWithOptions calls nvrtcCompileProgram with opts as a C array of C
// strings. The array lives in Go memory and points to Go memory, so the
// strings are pinned for the duration of the call, as the cgo pointer rules
// require.
func (l *Library) compileWithOptions(prog uintptr, opts []string) int32 {
	var pinner runtime.Pinner
	defer pinner.Unpin()
	ptrs := make([]*byte, len(opts)+1) // NULL-terminated for good measure
	for i, o := range opts {
		b := cString(o)
		pinner.Pin(&b[0])
		ptrs[i] = &b[0]
	}
	return l.compileProgram(prog, int32(len(opts)), &ptrs[0])
}

// programLog returns the program log without its trailing NUL.
func (l *Library) programLog(prog uintptr) (string, error) {
	b, err := l.fetch(prog, "nvrtcGetProgramLog", l.getProgramLogSize, l.getProgramLog)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\x00"), nil
}

// fetch reads one of a program's outputs with its size/get function pair.
func (l *Library) fetch(prog uintptr, fn string, size func(uintptr, *uintptr) int32, get func(uintptr, *byte) int32) ([]byte, error) {
	var n uintptr
	if err := l.check(fn+"Size", size(prog, &n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	buf := make([]byte, n)
	if err := l.check(fn, get(prog, &buf[0])); err != nil {
		return nil, err
	}
	return buf, nil
}

// cString returns s as a NUL-terminated byte slice.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}
