package kernels

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

// cpuMainEpilogue is cpuMain for kernels with the chain
// "scale_shift,residual(0.5),relu": it passes scale, shift and a residual
// of exactly the output's size (so that AddressSanitizer sees any read
// past it) and checks every output against the chain applied in float64.
// %s are the kernel's name, threads, blocks, shared bytes and the error
// bound.
const cpuMainEpilogue = `
static double cpu_rnd(unsigned& s) { s = s * 1664525u + 1013904223u; return ((s >> 8) & 0xffff) / 65536.0 - 0.5; }
int main() {
    const long in_n = (long)N * C * H * W, f_n = (long)K * R * S, out_n = (long)N * K * P * Q;
    std::vector<elem_t> in(in_n), flt(f_n), bias(K), out(out_n), res(out_n);
    std::vector<float> scale(K), shift(K);
    unsigned seed = 11;
    for (auto& v : in) v = from_float((float)cpu_rnd(seed) * 4);
    for (auto& v : flt) v = from_float((float)cpu_rnd(seed));
    for (auto& v : bias) v = from_float((float)cpu_rnd(seed));
    for (auto& v : res) v = from_float((float)cpu_rnd(seed) * 4);
    for (auto& v : scale) v = (float)(1 + cpu_rnd(seed));
    for (auto& v : shift) v = (float)cpu_rnd(seed);
    for (auto& v : out) v = from_float(NAN);
    const int threads = %[2]d, blocks = %[3]d, shared = %[4]d;
    for (int b = 0; b < blocks; ++b) {
        std::vector<float> smem(shared / 4 + 4, NAN);
        std::barrier<> bar(threads);
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t)
            ts.emplace_back([&, t, b] {
                threadIdx = {t, 0, 0}; blockIdx = {b, 0, 0}; cpu_smem = smem.data(); cpu_barrier = &bar;
                %[1]s(out.data(), in.data(), flt.data(), bias.data(), scale.data(), shift.data(), res.data());
            });
        for (auto& th : ts) th.join();
    }
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
        double y = (double)scale[k] * acc + (double)shift[k] + 0.5 * (double)to_float(res[oi]);
        if (y < 0) y = 0;
        const double got = to_float(out[oi]);
        if (isnan(got)) { if (bad++ < 5) printf("output n=%%d k=%%d p=%%d q=%%d not written\n", n, k, p, q); continue; }
        max_err = fmax(max_err, fabs(got - y));
        max_ref = fmax(max_ref, fabs(y));
    }
    printf("max error %%.3g of max |output| %%.3g, %%ld outputs not written\n", max_err, max_ref, bad);
    return bad > 0 || max_err > %[5]g * max_ref ? 1 : 0;
}
`

// TestDepthwiseEpilogueOnCPU runs depthwise kernels with the chain
// scale_shift,residual(0.5),relu on the CPU (as TestDepthwiseOnCPU, built
// with AddressSanitizer) in both layouts and checks every output against
// the chain in float64: the residual's offsets in each layout, and no read
// of the residual past its end (NCHW strips past Q in the last row of the
// last plane once read it). By default the first shape runs every
// precision with a kernel of each OutputsPerThread and VectorWidth, the
// others FP32 with one kernel; everything under CONVGEN_FULL_SWEEP=1.
func TestDepthwiseEpilogueOnCPU(t *testing.T) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skipf("g++ not found: the CPU run of the depthwise kernels needs it (%v)", err)
	}
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe.cpp")
	if err := os.WriteFile(probe, []byte(cpuShim+"int main() { return cpu_f2h(1.0f) == 0x3c00 ? 0 : 1; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	asan := []string{"-std=c++20", "-O1", "-fno-strict-aliasing", "-pthread", "-w", "-fsanitize=address"}
	if out, err := exec.Command(gxx, append(asan, "-o", filepath.Join(dir, "probe"), probe)...).CombinedOutput(); err != nil {
		t.Skipf("%s cannot build the CPU shim with AddressSanitizer (needs C++20 <barrier>, _Float16, libasan): %v\n%s", gxx, err, firstLines(string(out), 10))
	}
	chain, err := epilogue.Parse("scale_shift,residual(0.5),relu")
	if err != nil {
		t.Fatal(err)
	}
	shapes := parseShapes(t, []string{
		"N=1,C=3,H=9,W=9,K=6,R=3,S=3,pad=1,groups=3",                       // Q = 9: strips past Q
		"N=2,C=4,H=10,W=12,K=4,R=3,S=3,pad=1,groups=4",                     // vector loads and stores
		"N=1,C=2,H=11,W=13,K=2,R=3,S=3,stride=2,pad=1,groups=2,bias=false", // Q = 6
	})
	bounds := map[problem.Precision]float64{problem.FP32: 1e-5, problem.FP16: 2e-3, problem.BF16: 1e-2}
	full := os.Getenv("CONVGEN_FULL_SWEEP") == "1"
	n := 0
	for i, s := range shapes {
		for _, prec := range []problem.Precision{problem.FP32, problem.FP16, problem.BF16} {
			if i > 0 && (prec == problem.FP16 || !full && prec != problem.FP32) {
				continue // FP16's and (by default) BF16's residual conversion are checked on the first shape
			}
			for _, lay := range problem.Layouts {
				p := problem.Problem{Shape: s, Precision: prec, Layout: lay, Epilogue: chain}
				cands := coverOutputs(depthwiseKept(p))
				if !full && i > 0 {
					cands = cands[:1] // the first shape covers every OutputsPerThread and VectorWidth
				}
				for _, c := range cands {
					k, err := RenderCandidate(p, c)
					if err != nil {
						t.Fatalf("%s %s: %v", p, c.ID(), err)
					}
					src := cpuSource(k, bounds[prec])
					src = src[:strings.LastIndex(src, cpuMain[:40])] + fmt.Sprintf(cpuMainEpilogue, k.Name, k.Block[0], k.Grid[0], k.SharedBytes, bounds[prec])
					cpp := filepath.Join(dir, fmt.Sprintf("e%d.cpp", n))
					exe := strings.TrimSuffix(cpp, ".cpp")
					n++
					if err := os.WriteFile(cpp, []byte(src), 0o644); err != nil {
						t.Fatal(err)
					}
					id := fmt.Sprintf("%s %s", p, c.ID())
					if out, err := exec.Command(gxx, append(asan, "-o", exe, cpp)...).CombinedOutput(); err != nil {
						t.Errorf("%s: g++: %v\n%s", id, err, firstLines(string(out), 30))
						continue
					}
					out, err := exec.Command(exe).CombinedOutput()
					if err != nil {
						t.Errorf("%s: %v: %s", id, err, firstLines(string(out), 12))
						continue
					}
					t.Logf("%s: %s", id, strings.TrimSpace(string(out)))
				}
			}
		}
	}
	t.Logf("%d kernels with the chain run on the CPU", n)
}
