package epilogue

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/nvrtc"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenChain is the chain whose emitted source is kept in
// testdata/all.cu.golden: every element once.
const goldenChain = "scale_shift,residual(0.5),relu,relu6,leaky_relu(0.1),clamp(-1.5,6),sigmoid,tanh,gelu,gelu_tanh,silu,hardswish,mish"

// testKernel wraps an emitted epilogue in a kernel that calls it, so that
// NVRTC compiles (not only parses) the device function.
const testKernel = `
extern "C" __global__ void epilogue_test(float* out, const float* in, const float* scale,
                                         const float* shift, const float* res, int n, int channels)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = convgen_epilogue(in[i], i % channels, scale, shift, res[i]);
    }
}
`

// TestCUDACompiles NVRTC-compiles, for sm_80, the emitted function of the
// empty chain, of every element alone and of a few chains, each called from
// a kernel, and checks that it needs no stack frame and no spills (the
// accurate float functions it uses are inlined, without slow paths through
// local memory).
func TestCUDACompiles(t *testing.T) {
	lib := nvrtctest.Open(t)
	specs := []string{"", goldenChain, "scale_shift,relu", "residual,relu", "scale_shift,residual(-0.25),gelu", "clamp(-1e-07,3.4028235e+38)"}
	for _, op := range Ops() {
		specs = append(specs, op.String()+map[Op]string{LeakyReLU: "(0.01)", Clamp: "(-1,1)"}[op])
	}
	for _, spec := range specs {
		c, err := Parse(spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", spec, err)
		}
		src := CUDA(c) + testKernel
		res, err := lib.Compile(src, nvrtc.Options{Name: "epilogue.cu", Arch: "sm_80"})
		if err != nil {
			t.Errorf("%q: %v\nsource:\n%s", spec, err, src)
			continue
		}
		if res.Log != "" {
			t.Errorf("%q: NVRTC warnings:\n%s", spec, res.Log)
		}
		r, ok := res.Resources["epilogue_test"]
		if !ok {
			t.Errorf("%q: no resources reported for epilogue_test: %v", spec, res.Resources)
			continue
		}
		if r.StackBytes != 0 || r.SpillStores != 0 || r.SpillLoads != 0 {
			t.Errorf("%q: stack %d B, spills %d/%d B; want none", spec, r.StackBytes, r.SpillStores, r.SpillLoads)
		}
	}
}

// TestCUDAGolden compares the emitted source of goldenChain with
// testdata/all.cu.golden (go test ./epilogue -run TestCUDAGolden -update
// rewrites it).
func TestCUDAGolden(t *testing.T) {
	c, err := Parse(goldenChain)
	if err != nil {
		t.Fatal(err)
	}
	got := []byte(CUDA(c))
	path := filepath.Join("testdata", "all.cu.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./epilogue -run TestCUDAGolden -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the emitted source (go test ./epilogue -run TestCUDAGolden -update rewrites it); got:\n%s", path, got)
	}
}

var (
	readsScale = regexp.MustCompile(`\b(scale|shift)\b`)
	readsZ     = regexp.MustCompile(`\bz\b`)
)

// TestCUDAReadsOnlyWhatItNeeds checks that the emitted code reads scale and
// shift only for scale_shift, z only for residual, and that the empty
// chain is the identity.
func TestCUDAReadsOnlyWhatItNeeds(t *testing.T) {
	for _, spec := range []string{"", "relu", "scale_shift", "residual", "scale_shift,residual(2),mish"} {
		c, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		body := strings.Replace(CUDA(c), "(void)k; (void)scale; (void)shift; (void)z;", "", 1)
		body = body[strings.Index(body, "{"):]
		if got := readsScale.MatchString(body); got != c.NeedsScaleShift() {
			t.Errorf("%q: reads scale/shift = %v, NeedsScaleShift = %v:\n%s", spec, got, c.NeedsScaleShift(), body)
		}
		if got := readsZ.MatchString(body); got != c.NeedsResidual() {
			t.Errorf("%q: reads z = %v, NeedsResidual = %v:\n%s", spec, got, c.NeedsResidual(), body)
		}
	}
}

// TestFloatLiteral checks that every literal is valid C++ float syntax and
// reads back as the same float32.
func TestFloatLiteral(t *testing.T) {
	for _, tc := range []struct {
		v    float32
		want string
	}{
		{0, "0.0f"},
		{6, "6.0f"},
		{0.1, "0.1f"},
		{-1, "(-1.0f)"},
		{-1.5, "(-1.5f)"},
		{1e-7, "1e-07f"},
		{1e-45, "1e-45f"},
		{3.4028235e38, "3.4028235e+38f"},
		{-3.4028235e38, "(-3.4028235e+38f)"},
		{123456789, "1.2345679e+08f"},
	} {
		got := floatLiteral(tc.v)
		if got != tc.want {
			t.Errorf("floatLiteral(%v) = %q, want %q", tc.v, got, tc.want)
		}
		num := strings.TrimSuffix(strings.Trim(got, "()"), "f")
		back, err := strconv.ParseFloat(num, 32)
		if err != nil || float32(back) != tc.v {
			t.Errorf("floatLiteral(%v) = %q reads back as %v, %v", tc.v, got, back, err)
		}
	}
}

// ExampleCUDA shows the device function of a folded batch norm and ReLU.
func ExampleCUDA() {
	c, err := Parse("scale_shift, relu")
	if err != nil {
		panic(err)
	}
	fmt.Print(CUDA(c))
	// Output:
	// // convgen epilogue: scale_shift,relu
	// __device__ __forceinline__ float convgen_epilogue(float y, int k, const float* __restrict__ scale, const float* __restrict__ shift, float z)
	// {
	//     (void)k; (void)scale; (void)shift; (void)z;
	//     { // scale_shift
	//         y = fmaf(scale[k], y, shift[k]);
	//     }
	//     { // relu
	//         y = (y < 0.0f) ? 0.0f : y;
	//     }
	//     return y;
	// }
}

// TestCUDAPanicsOnInvalidChain: CUDA refuses, as documented, every chain
// Validate rejects, rather than emitting source that is not C++ (a NaN
// parameter) or that computes something else (clamp with lo > hi).
func TestCUDAPanicsOnInvalidChain(t *testing.T) {
	for _, c := range []Chain{
		{{Op: LeakyReLU, Alpha: float32(math.NaN())}},
		{{Op: Residual, Alpha: float32(math.Inf(1))}},
		{{Op: Clamp, Lo: 6, Hi: -1}},
		{{Op: ReLU, Alpha: 2}},
		{{Op: ScaleShift}, {Op: ScaleShift}},
		{{Op: Op(99)}},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("CUDA(%#v) did not panic", c)
				}
			}()
			src := CUDA(c)
			t.Errorf("CUDA(%#v) returned source:\n%s", c, src)
		}()
	}
}

// TestCUDA64Compiles NVRTC-compiles the double-precision emitter's function
// of the all-elements chain, called from a kernel.
func TestCUDA64Compiles(t *testing.T) {
	lib := nvrtctest.Open(t)
	c, err := Parse(goldenChain)
	if err != nil {
		t.Fatal(err)
	}
	src := CUDA64(c) + `
extern "C" __global__ void epilogue64_test(double* out, const double* in, const float* scale,
                                           const float* shift, const double* res, int n, int channels)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = convgen_epilogue64(in[i], i % channels, scale, shift, res[i]);
}
`
	res, err := lib.Compile(src, nvrtc.Options{Name: "epilogue64.cu", Arch: "sm_80"})
	if err != nil {
		t.Fatalf("%v\nsource:\n%s", err, src)
	}
	if res.Log != "" {
		t.Errorf("NVRTC warnings:\n%s", res.Log)
	}
}

// TestCUDA64Exact checks that the double emitter writes the chain's float32
// parameters exactly (0.1f as 0.10000000149011612, not 0.1) and uses the
// double math functions.
func TestCUDA64Exact(t *testing.T) {
	c, err := Parse("leaky_relu(0.1),gelu,mish")
	if err != nil {
		t.Fatal(err)
	}
	src := CUDA64(c)
	for _, want := range []string{"double convgen_epilogue64(double y", "0.10000000149011612 * y", "erfc(", "log1p(exp(-fabs(y)))"} {
		if !strings.Contains(src, want) {
			t.Errorf("CUDA64 lacks %q:\n%s", want, src)
		}
	}
	for _, bad := range []string{"expf", "erfcf", "0.0f"} {
		if strings.Contains(src, bad) {
			t.Errorf("CUDA64 has float %q:\n%s", bad, src)
		}
	}
}
