package kernels

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// The depthwise kernels run here, without a GPU, by compiling their CUDA
// source as C++ with cpuShim (one std::thread per CUDA thread of a block,
// __syncthreads a std::barrier, shared memory a per-block buffer, __ldg a
// plain load, FP16 conversions through _Float16) and comparing every output
// against a float64 depthwise convolution written independently of the
// kernel (PyTorch's groups semantics: output channel k reads input channel
// k / (K/C)). It checks the indexing, the tiling, the predication and the
// vector loads and stores of the rendered source, not the GPU's
// arithmetic; the GPU check is autotune's TestDepthwiseShapes.

// cpuShim stands in for the CUDA runtime the kernels use.
const cpuShim = `#include <math.h>
#include <string.h>
#include <stdio.h>
#include <cmath>
#include <vector>
#include <thread>
#include <barrier>
using std::isnan;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __restrict__ __restrict
#define __align__(x) alignas(x)
struct cpu_dim3 { int x, y, z; };
static thread_local cpu_dim3 threadIdx, blockIdx, gridDim;
static thread_local float* cpu_smem;
static thread_local std::barrier<>* cpu_barrier;
static inline void __syncthreads() { cpu_barrier->arrive_and_wait(); }
// cpu_launch runs kernel() on a 1-D grid of blocks, block after block, one
// std::thread per CUDA thread, with NaN-filled shared memory and a barrier.
template <class F> static void cpu_launch(int blocks, int threads, int shared, F kernel) {
    for (int b = 0; b < blocks; ++b) {
        std::vector<float> smem(shared / 4 + 4, NAN);
        std::barrier<> bar(threads);
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t)
            ts.emplace_back([&, t, b] {
                threadIdx = {t, 0, 0}; blockIdx = {b, 0, 0}; gridDim = {blocks, 1, 1};
                cpu_smem = smem.data(); cpu_barrier = &bar;
                kernel();
            });
        for (auto& th : ts) th.join();
    }
}
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
struct uint2 { unsigned int x, y; };
struct uint4 { unsigned int x, y, z, w; };
static inline float2 make_float2(float a, float b) { return {a, b}; }
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
static inline uint2 make_uint2(unsigned int a, unsigned int b) { return {a, b}; }
static inline uint4 make_uint4(unsigned int a, unsigned int b, unsigned int c, unsigned int d) { return {a, b, c, d}; }
template <class T> static inline T __ldg(const T* p) { return *p; }
static inline float __uint_as_float(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
static inline unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
static inline float cpu_h2f(unsigned short h) { _Float16 x; memcpy(&x, &h, 2); return (float)x; }
static inline unsigned short cpu_f2h(float f) { _Float16 x = (_Float16)f; unsigned short h; memcpy(&h, &x, 2); return h; }
`

// cpuMain launches the kernel block by block and checks it; %s are the
// kernel's name, threads, blocks, shared bytes and the error bound.
const cpuMain = `
static double cpu_rnd(unsigned& s) { s = s * 1664525u + 1013904223u; return ((s >> 8) & 0xffff) / 65536.0 - 0.5; }
int main() {
    const long in_n = (long)N * C * H * W, f_n = (long)K * R * S, out_n = (long)N * K * P * Q;
    std::vector<elem_t> in(in_n), flt(f_n), bias(K), out(out_n);
    unsigned seed = 7;
    for (auto& v : in) v = from_float((float)cpu_rnd(seed) * 4);
    for (auto& v : flt) v = from_float((float)cpu_rnd(seed));
    for (auto& v : bias) v = from_float((float)cpu_rnd(seed));
%[6]s
    for (auto& v : out) v = from_float(NAN);
    cpu_launch(%[3]d, %[2]d, %[4]d, [&] { %[1]s(out.data(), in.data(), flt.data(), bias.data()%[7]s); });
    const int mult = K / C;
    double max_err = 0, max_ref = 0;
    long bad = 0;
    for (int n = 0; n < N; ++n) for (int k = 0; k < K; ++k) for (int p = 0; p < P; ++p) for (int q = 0; q < Q; ++q) {
        double acc = HAS_BIAS ? to_float(bias[k]) : 0.0;
        const int c = k / mult;
        for (int r = 0; r < R; ++r) for (int s = 0; s < S; ++s) {
            const int h = p * STRIDE_H - PAD_H + r * DIL_H, w = q * STRIDE_W - PAD_W + s * DIL_W;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const long ii = NHWC ? (((long)n * H + h) * W + w) * C + c : (((long)n * C + c) * H + h) * W + w;
            acc += (double)to_float(in[ii]) * (double)to_float(flt[((long)k * R + r) * S + s]);
        }
        const long oi = NHWC ? (((long)n * P + p) * Q + q) * K + k : (((long)n * K + k) * P + p) * Q + q;
        %[8]s
        const double got = to_float(out[oi]);
        if (isnan(got)) { if (bad++ < 5) printf("output n=%%d k=%%d p=%%d q=%%d not written\n", n, k, p, q); continue; }
        max_err = fmax(max_err, fabs(got - y));
        max_ref = fmax(max_ref, fabs(y));
    }
    printf("max error %%.3g of max |output| %%.3g, %%ld outputs not written\n", max_err, max_ref, bad);
    return bad > 0 || max_err > %[5]g * max_ref ? 1 : 0;
}
`

var (
	sharedDecl = regexp.MustCompile(`extern __shared__ __align__\(16\) float (\w+)\[\];`)
	cvtToF32   = regexp.MustCompile(`asm\("cvt\.f32\.f16 %0, %1;" : "=f"\((\w+)\) : "h"\(([\w\[\]]+)\)\);`)
	cvtToF16   = regexp.MustCompile(`asm\("cvt\.rn\.f16\.f32 %0, %1;" : "=h"\((\w+)\) : "f"\((\w+)\)\);`)
)

// cpuSource is kernel k as C++ for cpuShim, with cpuMain checking it
// against bound (relative to the largest output).
func cpuSource(k Kernel, bound float64) string {
	return cpuSourceWith(k, bound, cpuPlain)
}

// cpuChain is what a kernel with an epilogue chain adds to cpuMain: the
// setup of the chain's arrays, the kernel's extra arguments and the
// reference's y from acc (the convolution with the bias, in float64) at
// output offset oi.
type cpuChain struct {
	setup, args, apply string
}

// cpuPlain is cpuMain for a kernel without a chain.
var cpuPlain = cpuChain{apply: "const double y = acc;"}

// cpuSourceWith is cpuSource for a kernel with the chain ch.
func cpuSourceWith(k Kernel, bound float64, ch cpuChain) string {
	src := sharedDecl.ReplaceAllString(k.Source, "float* $1 = cpu_smem;")
	src = cvtToF32.ReplaceAllString(src, "$1 = cpu_h2f($2);")
	src = cvtToF16.ReplaceAllString(src, "$1 = cpu_f2h($2);")
	return cpuShim + src + fmt.Sprintf(cpuMain, k.Name, k.Block[0], k.Grid[0], k.SharedBytes, bound, ch.setup, ch.args, ch.apply)
}

// cpuCompiler finds g++ and checks, in a temporary directory it returns,
// that it builds and runs the CPU shim with flags (C++20 barriers, _Float16,
// and whatever flags add, such as AddressSanitizer); it skips the test,
// saying why, where it cannot.
func cpuCompiler(t *testing.T, flags ...string) (gxx, dir string) {
	t.Helper()
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skipf("g++ not found: the CPU run of the depthwise kernels needs it (%v)", err)
	}
	dir = t.TempDir()
	probe := filepath.Join(dir, "probe.cpp")
	if err := os.WriteFile(probe, []byte(cpuShim+"int main() { return cpu_f2h(1.0f) == 0x3c00 ? 0 : 1; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-std=c++20", "-pthread"}, flags...)
	if out, err := exec.Command(gxx, append(args, "-o", filepath.Join(dir, "probe"), probe)...).CombinedOutput(); err != nil {
		t.Skipf("%s %v cannot build the CPU shim (needs C++20 <barrier> and _Float16, g++ 12 or newer): %v\n%s", gxx, flags, err, firstLines(string(out), 10))
	}
	if err := exec.Command(filepath.Join(dir, "probe")).Run(); err != nil {
		t.Fatalf("the CPU shim's FP16 conversion does not round 1.0 to 0x3c00: %v", err)
	}
	return gxx, dir
}

// TestDepthwiseOnCPU runs depthwise kernels of small depthwise shapes (odd
// sizes, stride 2, dilation, R ≠ S, multipliers 2 and 3, C = 1, odd C, no
// bias) in every precision and both layouts on the CPU and checks every
// output against float64. Of the kept candidates of each (shape, precision,
// layout), one per (OutputsPerThread, VectorWidth) pair (coverOutputs) is
// offered; by default the ones that run (cpuSample) have every shape,
// every (precision, layout), every pair and every code path of those
// offered; every offered one runs, and every kept candidate is offered,
// under CONVGEN_FULL_SWEEP=1. It needs g++ 12 or newer (C++20 barriers,
// _Float16).
func TestDepthwiseOnCPU(t *testing.T) {
	t.Parallel() // CPU-bound and independent: overlaps the other CPU runs (the test command's time)
	gxx, dir := cpuCompiler(t)
	full := os.Getenv("CONVGEN_FULL_SWEEP") == "1"
	shapes := parseShapes(t, []string{
		"N=2,C=3,H=15,W=13,K=3,R=3,S=3,stride=2,pad=1,groups=3,bias=false",
		"N=1,C=4,H=12,W=14,K=8,R=3,S=3,pad=2,dilation=2,groups=4",
		"N=1,C=16,H=20,W=18,K=16,R=3,S=3,pad=1,groups=16",
		"N=2,C=5,H=9,W=11,K=5,R=3,S=5,pad_h=1,pad_w=2,groups=5",
		"N=1,C=3,H=11,W=10,K=9,R=3,S=2,stride_h=2,stride_w=3,pad_h=2,pad_w=1,dilation_w=2,groups=3",
		"N=2,C=1,H=9,W=16,K=1,R=3,S=3,pad=1,groups=1",
		"N=1,C=8,H=7,W=7,K=8,R=3,S=3,pad=1,groups=8",
		"N=1,C=12,H=6,W=9,K=24,R=1,S=1,groups=12",
		"N=1,C=6,H=10,W=10,K=6,R=5,S=5,stride=2,pad=2,groups=6",
		"N=1,C=2,H=40,W=36,K=2,R=3,S=3,pad=1,groups=2",
	})
	bounds := map[problem.Precision]float64{problem.FP32: 1e-5, problem.TF32: 1e-5, problem.TF32x3: 1e-5, problem.FP16: 2e-3, problem.BF16: 1e-2}
	var offered []Kernel
	var ids, items [][]string // (id, precision) and cpuSample's items of each offered kernel
	for i, s := range shapes {
		for _, prec := range problem.Precisions {
			for _, lay := range problem.Layouts {
				p := problem.Problem{Shape: s, Precision: prec, Layout: lay}
				keep := depthwiseKept(p)
				if !full {
					keep = coverOutputs(keep)
				}
				for _, c := range keep {
					k, err := RenderCandidate(p, c)
					if err != nil {
						t.Fatalf("%s %s: %v", p, c.ID(), err)
					}
					offered = append(offered, k)
					ids = append(ids, []string{fmt.Sprintf("%s %s", p, c.ID()), string(prec)})
					items = append(items, []string{fmt.Sprint("shape ", i), "problem " + string(prec) + " " + string(lay),
						fmt.Sprintf("outputs %d vector %d", c.Config["OutputsPerThread"], c.Config["VectorWidth"])})
				}
			}
		}
	}
	var jobs [][2]string // (id, C++ source)
	for _, i := range cpuSample(offered, func(i int) []string { return items[i] }) {
		jobs = append(jobs, [2]string{ids[i][0], cpuSource(offered[i], bounds[problem.Precision(ids[i][1])])})
	}
	runCPU(t, gxx, dir, jobs)
	t.Logf("%d kernels run on the CPU (of %d offered)", len(jobs), len(offered))
}

// coverOutputs is the first of cands for each pair of OutputsPerThread and
// VectorWidth values.
func coverOutputs(cands []Candidate) []Candidate {
	seen := map[[2]int]bool{}
	var out []Candidate
	for _, c := range cands {
		if o := [2]int{c.Config["OutputsPerThread"], c.Config["VectorWidth"]}; !seen[o] {
			seen[o] = true
			out = append(out, c)
		}
	}
	return out
}

// firstLines is the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// TestDepthwisePlanesOnCPU runs kept NCHW candidates with several planes
// per block (Planes > 1) on the CPU for small planes: 7×7 at stride 1, 14²
// at stride 2 into 7², a channel multiplier, dilation, R ≠ S, and N·C that
// the planes do not divide (a partial last block), in fp32, fp16 and bf16:
// by default the ones (cpuSample) that have every shape with every
// precision, every (Planes, OutputsPerThread) pair and every code path of
// them all; every one under CONVGEN_FULL_SWEEP=1. The space must offer
// such candidates for each shape.
func TestDepthwisePlanesOnCPU(t *testing.T) {
	t.Parallel()
	gxx, dir := cpuCompiler(t)
	bounds := map[problem.Precision]float64{problem.FP32: 1e-5, problem.FP16: 2e-3, problem.BF16: 1e-2}
	shapes := parseShapes(t, []string{
		"N=3,C=5,H=7,W=7,K=5,R=3,S=3,pad=1,groups=5",
		"N=1,C=9,H=14,W=14,K=18,R=3,S=3,stride=2,pad=1,groups=9",
		"N=2,C=3,H=12,W=11,K=3,R=3,S=5,pad_h=2,pad_w=1,dilation_h=2,groups=3,bias=false",
	})
	var offered []Kernel
	var ids, items [][]string // (id, precision) and cpuSample's items of each offered kernel
	for i, s := range shapes {
		for _, prec := range []problem.Precision{problem.FP32, problem.FP16, problem.BF16} {
			p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NCHW}
			n := 0
			for _, c := range depthwiseKept(p) {
				if c.Config["Planes"] <= 1 {
					continue
				}
				n++
				k, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("%s %s: %v", p, c.ID(), err)
				}
				offered = append(offered, k)
				ids = append(ids, []string{fmt.Sprintf("%s %s", p, c.ID()), string(prec)})
				items = append(items, []string{fmt.Sprintf("shape %d %s", i, prec), fmt.Sprintf("planes %d outputs %d", c.Config["Planes"], c.Config["OutputsPerThread"])})
			}
			if n == 0 {
				t.Errorf("%s: no kept candidate with Planes > 1", p)
			}
		}
	}
	var jobs [][2]string
	for _, i := range cpuSample(offered, func(i int) []string { return items[i] }) {
		jobs = append(jobs, [2]string{ids[i][0], cpuSource(offered[i], bounds[problem.Precision(ids[i][1])])})
	}
	runCPU(t, gxx, dir, jobs)
	t.Logf("%d kernels run on the CPU (of %d offered)", len(jobs), len(offered))
}
