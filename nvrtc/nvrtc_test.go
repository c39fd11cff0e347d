package nvrtc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// openLib opens NVRTC or, when it is unavailable, fails the test if
// CONVGEN_REQUIRE_NVRTC=1 (as in CI) and skips it otherwise. The library is
// opened once for the whole test binary.
func openLib(t *testing.T) *Library {
	t.Helper()
	libOnce.Do(func() { lib, libErr = Open() })
	if libErr != nil {
		if os.Getenv("CONVGEN_REQUIRE_NVRTC") == "1" {
			t.Fatalf("NVRTC required (CONVGEN_REQUIRE_NVRTC=1) but unavailable: %v", libErr)
		}
		t.Skipf("NVRTC unavailable (set CONVGEN_REQUIRE_NVRTC=1 to fail instead): %v", libErr)
	}
	return lib
}

var (
	libOnce sync.Once
	lib     *Library
	libErr  error
)

func TestVersionAndArchs(t *testing.T) {
	l := openLib(t)
	major, minor := l.Version()
	t.Logf("NVRTC %s from %s; archs %v", l.VersionString(), l.Path(), l.SupportedArchs())
	if major < 11 {
		t.Errorf("Version() = %d.%d, want >= 11", major, minor)
	}
	if want := fmt.Sprintf("%d.%d", major, minor); l.VersionString() != want {
		t.Errorf("VersionString() = %q, want %q", l.VersionString(), want)
	}
	archs := l.SupportedArchs()
	for _, a := range []int{80, 90} {
		if !slices.Contains(archs, a) {
			t.Errorf("SupportedArchs() = %v, lacks %d", archs, a)
		}
	}
	if !slices.IsSorted(archs) {
		t.Errorf("SupportedArchs() = %v, not sorted", archs)
	}
	archs[0] = -1 // must not affect the library
	if l.SupportedArchs()[0] == -1 {
		t.Error("SupportedArchs() returns the library's own slice")
	}

	for arch, want := range map[string]bool{
		"sm_80":     true,
		"sm_90":     true,
		"sm_90a":    major >= 12,
		"sm_1":      false,
		"compute_9": false,
		"sm_":       false,
		"sm_x":      false,
		"90":        false,
		"sm_+90":    false,
	} {
		if got := l.SupportsArch(arch); got != want {
			t.Errorf("SupportsArch(%q) = %v, want %v", arch, got, want)
		}
	}
}

const smemSrc = `
#define TILE 256
extern "C" __global__ void scale_sum(float* out, const float* in, int n) {
  __shared__ float tile[TILE];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  float acc = 0.0f;
  for (int j = 0; j < n; j++) {
    acc += tile[(threadIdx.x + j) % TILE] * 1.5f;
  }
  if (i < n) out[i] = acc;
}
`

func TestCompileSharedKernel(t *testing.T) {
	l := openLib(t)
	for _, arch := range []string{"sm_80", "sm_90"} {
		t.Run(arch, func(t *testing.T) {
			res, err := l.Compile(smemSrc, Options{Name: "scale_sum.cu", Arch: arch, Extra: []string{"-lineinfo"}})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(res.CUBIN, []byte("\x7fELF")) {
				t.Errorf("CUBIN starts with %q, want ELF magic", res.CUBIN[:min(4, len(res.CUBIN))])
			}
			for _, want := range []string{".entry scale_sum", ".target " + arch} {
				if !strings.Contains(res.PTX, want) {
					t.Errorf("PTX lacks %q", want)
				}
			}
			r, ok := res.Resources["scale_sum"]
			if !ok {
				t.Fatalf("Resources = %+v, lacks scale_sum", res.Resources)
			}
			t.Logf("%s: %+v; log %q", arch, r, res.Log)
			if r.Registers <= 0 {
				t.Errorf("Registers = %d, want > 0", r.Registers)
			}
			if r.SharedBytes != 256*4 {
				t.Errorf("SharedBytes = %d, want %d", r.SharedBytes, 256*4)
			}
			if r.SpillStores != 0 || r.SpillLoads != 0 || r.StackBytes != 0 {
				t.Errorf("unexpected stack/spills: %+v", r)
			}
			if strings.Contains(res.Log, "ptxas info") || strings.Contains(res.Log, "bytes stack frame") {
				t.Errorf("Log keeps ptxas's verbose report: %q", res.Log)
			}
		})
	}
}

// spillSrc keeps 64 loaded values live across a barrier; with 16 registers
// ptxas has to spill them.
const spillSrc = `
extern "C" __global__ void spill(float* out, const float* in) {
  float r[64];
#pragma unroll
  for (int i = 0; i < 64; i++) r[i] = in[threadIdx.x + i * 32];
  __syncthreads();
#pragma unroll
  for (int i = 0; i < 64; i++) out[threadIdx.x + i * 32] = r[63 - i] * r[i];
}
`

func TestCompileSpills(t *testing.T) {
	l := openLib(t)
	res, err := l.Compile(spillSrc, Options{Name: "spill.cu", Arch: "sm_80", Extra: []string{"--maxrregcount=16"}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Resources["spill"]
	t.Logf("%+v", r)
	if r.SpillStores <= 0 || r.SpillLoads <= 0 {
		t.Errorf("Resources[spill] = %+v, want spill stores and loads", r)
	}
	// ptxas raises a --maxrregcount below its minimum (24 on sm_80 with
	// NVRTC 11.8), so only check that the limit was roughly honoured.
	if r.Registers <= 0 || r.Registers > 32 {
		t.Errorf("Registers = %d, want 1..32", r.Registers)
	}
}

func TestCompileMangledAndWarnings(t *testing.T) {
	l := openLib(t)
	src := `
template <int N> __device__ __noinline__ float pick(float x) {
  float a[N];
  for (int i = 0; i < N; i++) a[i] = x * i;
  return a[(int)x % N];
}
__global__ void mangled(float* out) { int unused; out[threadIdx.x] = pick<64>(out[0]); }
extern "C" __global__ void plain(float* out) { out[0] = 1.0f; }
`
	res, err := l.Compile(src, Options{Name: "two.cu", Arch: "sm_80"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Resources) != 2 {
		t.Errorf("Resources = %+v, want exactly the two kernels", res.Resources)
	}
	if r, ok := res.Resources["_Z7mangledPf"]; !ok || r.Registers <= 0 {
		t.Errorf("Resources[_Z7mangledPf] = %+v, %v", r, ok)
	}
	if r, ok := res.Resources["plain"]; !ok || r.Registers <= 0 {
		t.Errorf("Resources[plain] = %+v, %v", r, ok)
	}
	if !regexp.MustCompile(`two\.cu\(7\): warning`).MatchString(res.Log) || !strings.Contains(res.Log, "unused") {
		t.Errorf("Log = %q, want the unused-variable warning on line 7", res.Log)
	}
}

func TestCompileError(t *testing.T) {
	l := openLib(t)
	src := "extern \"C\" __global__ void k(float* p) {\n  p[0] = 1.0f\n  p[1] = 2.0f;\n}\n"
	_, err := l.Compile(src, Options{Name: "bad.cu", Arch: "sm_80"})
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v (%T), want *CompileError", err, err)
	}
	t.Logf("%v", err)
	if ce.Name != "bad.cu" {
		t.Errorf("Name = %q", ce.Name)
	}
	if !regexp.MustCompile(`bad\.cu\([23]\): error`).MatchString(ce.Log) {
		t.Errorf("Log does not name the error line: %q", ce.Log)
	}
	if !strings.Contains(err.Error(), ce.Log[:strings.IndexByte(ce.Log, '\n')]) {
		t.Errorf("Error() = %q, lacks the log", err.Error())
	}
}

func TestCompileBadInput(t *testing.T) {
	l := openLib(t)
	if _, err := l.Compile(smemSrc, Options{Arch: "sm_80", Extra: []string{"--no-such-option"}}); err == nil {
		t.Error("unknown option accepted")
	} else {
		var ne *Error
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), "no-such-option") {
			t.Errorf("err = %v (%T), want *Error naming the option", err, err)
		}
		var ce *CompileError
		if errors.As(err, &ce) {
			t.Errorf("bad option reported as a CompileError: %v", err)
		}
	}
	for _, opt := range []Options{
		{Arch: "sm_80", Extra: []string{"--use_fast_math"}},
		{Arch: "sm_80", Extra: []string{"-ftz=true"}},
		{Arch: "compute_80"},
		{Arch: ""},
		{Arch: "sm_1"},
	} {
		if _, err := l.Compile(smemSrc, opt); err == nil {
			t.Errorf("Compile with %+v succeeded", opt)
		}
	}
	if major, _ := l.Version(); major < 12 {
		if _, err := l.Compile(smemSrc, Options{Arch: "sm_90a"}); err == nil {
			t.Error("sm_90a accepted by NVRTC 11")
		}
	}
}

func TestOpenPathMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "libnvrtc-does-not-exist.so")
	_, err := OpenPath(p)
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("OpenPath(%q) = %v, want an error naming the path", p, err)
	}
}

func TestOpenFirstListsEveryPath(t *testing.T) {
	dir := t.TempDir()
	paths := []string{"libnvrtc-convgen-missing.so.99", filepath.Join(dir, "libnvrtc.so")}
	_, err := openFirst(paths)
	if err == nil {
		t.Fatal("openFirst succeeded")
	}
	t.Logf("%v", err)
	for _, p := range paths {
		// Each path appears in the list and in its own dlopen error.
		if c := strings.Count(err.Error(), p); c < 2 {
			t.Errorf("error mentions %q %d times, want >= 2:\n%v", p, c, err)
		}
	}
}

func TestOpenEnv(t *testing.T) {
	l := openLib(t) // before changing the environment
	p := filepath.Join(t.TempDir(), "nope.so")
	t.Setenv(EnvPath, p)
	_, err := Open()
	if err == nil || !strings.Contains(err.Error(), p) || strings.Contains(err.Error(), "libnvrtc.so.12") {
		t.Fatalf("Open() with %s=%s: %v, want an error about that path only", EnvPath, p, err)
	}

	t.Setenv(EnvPath, l.Path())
	l2, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	if l2.Path() != l.Path() {
		t.Errorf("Path() = %q, want %q", l2.Path(), l.Path())
	}
}

func TestCompileConcurrent(t *testing.T) {
	l := openLib(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("k%d", i)
			src := fmt.Sprintf(`extern "C" __global__ void %s(float* p) {
  __shared__ float s[%d];
  s[threadIdx.x] = p[threadIdx.x];
  __syncthreads();
  p[threadIdx.x] = s[(threadIdx.x + 1) %% %d] * %d.0f;
}
`, name, 32*(i+1), 32*(i+1), i)
			arch := []string{"sm_80", "sm_90"}[i%2]
			res, err := l.Compile(src, Options{Name: name + ".cu", Arch: arch})
			if err != nil {
				errs[i] = err
				return
			}
			r, ok := res.Resources[name]
			switch {
			case len(res.Resources) != 1 || !ok:
				errs[i] = fmt.Errorf("%s: Resources = %+v", name, res.Resources)
			case r.SharedBytes != 4*32*(i+1):
				errs[i] = fmt.Errorf("%s: SharedBytes = %d, want %d", name, r.SharedBytes, 4*32*(i+1))
			case !strings.Contains(res.PTX, ".entry "+name) || !strings.Contains(res.PTX, ".target "+arch):
				errs[i] = fmt.Errorf("%s: PTX is for another program", name)
			case !bytes.Contains(res.CUBIN, []byte(name)):
				errs[i] = fmt.Errorf("%s: CUBIN is for another program", name)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestParsePtxasVerbose(t *testing.T) {
	// NVRTC 11.8 format, plus a CUDA 12-style "Used" line with barriers, a
	// non-inlined device function, a ptxas warning and nvcc's unprefixed
	// stack line.
	log := `two.cu(7): warning #177-D: variable "unused" was declared but never referenced

ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z2tkPf' for 'sm_90'
ptxas info    : Function properties for _Z2tkPf
ptxas         .     256 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 30 registers, used 1 barriers, 2048 bytes smem, 360 bytes cmem[0]
ptxas info    : Function properties for _Z3devILi64EEff
ptxas         .     64 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas warning : Registers are spilled to local memory in function 'k'
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 16 registers
ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized due to the presence of Extern calls in the function 'k'
ptxas info    : Compile time = 1.234 ms

`
	gotLog, got := parsePtxasVerbose(log)
	want := map[string]Resources{
		"_Z2tkPf": {Registers: 30, SharedBytes: 2048, StackBytes: 256, SpillStores: 8, SpillLoads: 12},
		"k":       {Registers: 16},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("resources = %+v, want %+v", got, want)
	}
	wantLog := `two.cu(7): warning #177-D: variable "unused" was declared but never referenced

ptxas warning : Registers are spilled to local memory in function 'k'
ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized due to the presence of Extern calls in the function 'k'
`
	if gotLog != wantLog {
		t.Errorf("log = %q, want %q", gotLog, wantLog)
	}
	if l, r := parsePtxasVerbose("\n"); l != "" || len(r) != 0 {
		t.Errorf("empty log: %q, %v", l, r)
	}
}

// TestCompilePTX: a PTX-only compile for sm_90a's virtual base runs on any
// NVRTC that knows sm_90, passes inline PTX through unchecked, and reports
// C++ errors like Compile does.
func TestCompilePTX(t *testing.T) {
	l := openLib(t)
	if !l.SupportsArch("sm_90") {
		t.Skipf("NVRTC %s has no sm_90", l.VersionString())
	}
	src := `extern "C" __global__ void k(float* p) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    p[threadIdx.x] = 1.0f;
}
`
	res, err := l.CompilePTX(src, Options{Name: "ptx.cu", Arch: "sm_90a"})
	if err != nil {
		t.Fatalf("CompilePTX: %v", err)
	}
	if len(res.CUBIN) != 0 || !strings.Contains(res.PTX, ".target sm_90") || !strings.Contains(res.PTX, "wgmma.fence.sync.aligned") {
		t.Errorf("CUBIN %d bytes, PTX target/wgmma present: %v/%v", len(res.CUBIN),
			strings.Contains(res.PTX, ".target sm_90"), strings.Contains(res.PTX, "wgmma.fence"))
	}
	_, err = l.CompilePTX("extern \"C\" __global__ void k(float* p) { p[0] = 1.0f }\n", Options{Name: "bad.cu", Arch: "sm_90a"})
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Errorf("bad source: err = %v (%T), want *CompileError", err, err)
	}
	for _, arch := range []string{"compute_90", "sm_9", "sm_1"} {
		if _, err := l.CompilePTX(src, Options{Arch: arch}); err == nil {
			t.Errorf("CompilePTX(arch %q) succeeded", arch)
		}
	}
	if _, err := l.CompilePTX(src, Options{Arch: "sm_90", Extra: []string{"--use_fast_math"}}); err == nil {
		t.Error("CompilePTX accepted --use_fast_math")
	}
}
