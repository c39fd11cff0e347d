package kernels

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// outCases are the (precision, output type) pairs the output-precision
// tests run: FP32 stored as BF16, FP16 stored as FP32, TF32 stored as FP16
// and BF16 stored as FP16.
var outCases = []struct {
	prec problem.Precision
	out  problem.Storage
}{
	{problem.FP32, problem.StorageBF16},
	{problem.FP16, problem.StorageFP32},
	{problem.TF32, problem.StorageFP16},
	{problem.BF16, problem.StorageFP16},
}

// outCPUBound is the CPU check's bound for p, relative to the largest
// output, against the float64 reference rounded to the output type: the
// arithmetic's own error (FP32 for every family the CPU runs; FP16 and BF16
// data are exact in FP32) plus one unit in the last place of the output
// type, for a value whose FP32 result and float64 reference round to
// neighbours.
func outCPUBound(p problem.Problem) float64 {
	switch p.Out() {
	case problem.StorageBF16:
		return 1e-5 + 1.0/128
	case problem.StorageFP16:
		return 1e-5 + 1.0/1024
	}
	return 1e-5
}

// cpuOutSource is cpuSourceWith for a kernel storing p.Out(): the output
// (and a residual, which the chain's setup declares of out_t) is a vector of
// out_t read with out_to_float, and the reference is rounded to the output
// type before the comparison.
func cpuOutSource(t *testing.T, k Kernel, p problem.Problem, ch cpuChain) string {
	t.Helper()
	if ch.apply == cpuPlain.apply {
		ch.apply = "double y = acc;" // rounded to the output type below
	}
	src := cpuSourceWith(k, outCPUBound(p), ch)
	for _, r := range [][2]string{
		{"bias(K), out(out_n);", "bias(K);\n    std::vector<out_t> out(out_n);"},
		{"for (auto& v : out) v = from_float(NAN);", "for (auto& v : out) v = to_out(NAN);"},
		{"const double got = to_float(out[oi]);", "const double got = out_to_float(out[oi]);\n        y = out_to_float(to_out((float)y));"},
	} {
		if !strings.Contains(src, r[0]) {
			t.Fatalf("the CPU harness has no %q to replace", r[0])
		}
		src = strings.Replace(src, r[0], r[1], 1)
	}
	return src
}

// cpuOutResidualChain is cpuScaleShiftResidualReLU with the residual of
// the output's type (out_t), as the kernel reads it.
var cpuOutResidualChain = cpuChain{
	setup: `    std::vector<out_t> res(out_n);
    std::vector<float> scale(K), shift(K);
    for (auto& v : res) v = to_out((float)cpu_rnd(seed) * 4);
    for (auto& v : scale) v = (float)(1 + cpu_rnd(seed));
    for (auto& v : shift) v = (float)cpu_rnd(seed);`,
	args:  ", scale.data(), shift.data(), res.data()",
	apply: "double y = (double)scale[k] * acc + (double)shift[k] + 0.5 * (double)out_to_float(res[oi]); if (y < 0) y = 0;",
}

// cpuGenericMain is cpuMain for generic: a grouped convolution in either
// layout against float64 (filter KCRS or KRSC over C/groups channels),
// output of out_t. %s are the kernel's name, threads, blocks, shared bytes,
// bound, the chain's setup, arguments and reference.
const cpuGenericMain = `
static double cpu_rnd(unsigned& s) { s = s * 1664525u + 1013904223u; return ((s >> 8) & 0xffff) / 65536.0 - 0.5; }
int main() {
    const long in_n = (long)N * C * H * W, f_n = (long)K * (C / GROUPS) * R * S, out_n = (long)N * K * P * Q;
    std::vector<elem_t> in(in_n), flt(f_n), bias(K);
    std::vector<out_t> out(out_n);
    unsigned seed = 11;
    for (auto& v : in) v = from_float((float)cpu_rnd(seed) * 4);
    for (auto& v : flt) v = from_float((float)cpu_rnd(seed));
    for (auto& v : bias) v = from_float((float)cpu_rnd(seed));
%[6]s
    for (auto& v : out) v = to_out(NAN);
    cpu_launch(%[3]d, %[2]d, %[4]d, [&] { %[1]s(out.data(), in.data(), flt.data(), bias.data()%[7]s); });
    const int cg = C / GROUPS, kg = K / GROUPS;
    double max_err = 0, max_ref = 0;
    long bad = 0;
    for (int n = 0; n < N; ++n) for (int k = 0; k < K; ++k) for (int p = 0; p < P; ++p) for (int q = 0; q < Q; ++q) {
        double acc = HAS_BIAS ? to_float(bias[k]) : 0.0;
        const int c0 = k / kg * cg;
        for (int c = 0; c < cg; ++c) for (int r = 0; r < R; ++r) for (int s = 0; s < S; ++s) {
            const int h = p * STRIDE_H - PAD_H + r * DIL_H, w = q * STRIDE_W - PAD_W + s * DIL_W;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const long ii = NHWC ? (((long)n * H + h) * W + w) * C + c0 + c : (((long)n * C + c0 + c) * H + h) * W + w;
            const long fi = NHWC ? (((long)k * R + r) * S + s) * cg + c : (((long)k * cg + c) * R + r) * S + s;
            acc += (double)to_float(in[ii]) * (double)to_float(flt[fi]);
        }
        const long oi = NHWC ? (((long)n * P + p) * Q + q) * K + k : (((long)n * K + k) * P + p) * Q + q;
        %[8]s
        y = out_to_float(to_out((float)y));
        const double got = out_to_float(out[oi]);
        if (isnan(got)) { if (bad++ < 5) printf("output n=%%d k=%%d p=%%d q=%%d not written\n", n, k, p, q); continue; }
        max_err = fmax(max_err, fabs(got - y));
        max_ref = fmax(max_ref, fabs(y));
    }
    printf("max error %%.3g of max |output| %%.3g, %%ld outputs not written\n", max_err, max_ref, bad);
    return bad > 0 || max_err > %[5]g * max_ref ? 1 : 0;
}
`

// cpuGenericSource is a generic kernel as C++ for cpuShim, checked by
// cpuGenericMain.
func cpuGenericSource(t *testing.T, k Kernel, p problem.Problem, ch cpuChain) string {
	t.Helper()
	if k.Grid[1] != 1 || k.Grid[2] != 1 {
		t.Fatalf("%s: a %v grid: the CPU harness launches x only", k.Name, k.Grid)
	}
	if ch.apply == cpuPlain.apply {
		ch.apply = "double y = acc;"
	}
	src := sharedDecl.ReplaceAllString(k.Source, "float* $1 = cpu_smem;")
	src = cvtToF32.ReplaceAllString(src, "$1 = cpu_h2f($2);")
	src = cvtToF16.ReplaceAllString(src, "$1 = cpu_f2h($2);")
	return cpuShim + src + fmt.Sprintf(cpuGenericMain, k.Name, k.Block[0], k.Grid[0], k.SharedBytes, outCPUBound(p), ch.setup, ch.args, ch.apply)
}

// runCPU compiles and runs the C++ sources of jobs (id → source), two at a
// time, failing the test for any that does not build or whose check fails.
func runCPU(t *testing.T, gxx, dir string, jobs [][2]string, flags ...string) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			cpp := filepath.Join(dir, fmt.Sprintf("o%d.cpp", i))
			exe := strings.TrimSuffix(cpp, ".cpp")
			if err := os.WriteFile(cpp, []byte(j[1]), 0o644); err != nil {
				t.Error(err)
				return
			}
			if out, err := cpuBuild(gxx, exe, cpp, flags...); err != nil {
				t.Errorf("%s: g++: %v\n%s", j[0], err, firstLines(string(out), 30))
				return
			}
			out, err := exec.Command(exe).CombinedOutput()
			if err != nil {
				t.Errorf("%s: %v: %s", j[0], err, firstLines(string(out), 12))
				return
			}
			t.Logf("%s: %s", j[0], strings.TrimSpace(string(out)))
		}()
	}
	wg.Wait()
}

// TestOutPrecisionOnCPU runs generic and depthwise kernels storing an
// output type other than the input's (outCases) on the CPU, in both
// layouts, and checks every output against the float64 reference rounded
// to the output type (outCPUBound): the out_t stores (depthwise's vector
// stores of every VectorWidth and OutputsPerThread), and, with the chain
// scale_shift,residual(0.5),relu, a residual of the output's type read at
// its offsets (built with AddressSanitizer, which catches a residual read
// as the input's type, past its end). Offered, for every case, layout and
// shape: generic's first and last kept candidates and one depthwise
// candidate per store shape (every kept one under the full sweep), with
// the chain every other time; by default the ones that run (cpuSample)
// have, for each family, every case, layout, shape and store shape, with
// and without the chain, and every code path of those offered; everything
// under the full sweep.
func TestOutPrecisionOnCPU(t *testing.T) {
	t.Parallel() // CPU-bound and independent: overlaps the other CPU runs (the test command's time)
	asan := []string{"-fsanitize=address"}
	gxx, dir := cpuCompiler(t, asan...)
	chain, err := epilogue.Parse("scale_shift,residual(0.5),relu")
	if err != nil {
		t.Fatal(err)
	}
	generic := parseShapes(t, []string{
		"N=2,C=6,H=9,W=7,K=10,R=3,S=3,stride=2,pad=1,groups=2",
		"N=1,C=5,H=8,W=8,K=7,R=3,S=2,pad_h=1,dilation_w=2,bias=false",
	})
	depthwise := parseShapes(t, []string{
		"N=2,C=4,H=10,W=12,K=8,R=3,S=3,pad=1,groups=4",
		"N=1,C=8,H=9,W=9,K=8,R=3,S=3,stride=2,pad=1,groups=8",
	})
	var offered []Kernel
	var sources [][2]string // (id, C++ source) of each offered kernel
	var items [][]string    // cpuSample's items of each offered kernel
	offer := func(p problem.Problem, c Candidate, si int, ch cpuChain, source func(Kernel) string) {
		k, err := RenderCandidate(p, c)
		if err != nil {
			t.Fatalf("%s %s: %v", p, c.ID(), err)
		}
		if !strings.Contains(k.Source, "typedef "+family.NewOutput(p).Type()+" out_t;") {
			t.Fatalf("%s %s: no out_t of the output's type", p, c.ID())
		}
		f := c.Family
		offered = append(offered, k)
		sources = append(sources, [2]string{fmt.Sprintf("%s %s", p, c.ID()), source(k)})
		items = append(items, []string{f + " " + string(p.Precision) + " to " + string(p.Out()), f + " " + string(p.Layout), fmt.Sprintf("%s shape %d", f, si),
			fmt.Sprintf("%s chain %v", f, len(p.Epilogue) > 0), fmt.Sprintf("%s outputs %d vector %d", f, c.Config["OutputsPerThread"], c.Config["VectorWidth"])})
	}
	for ci, oc := range outCases {
		for li, lay := range problem.Layouts {
			for si, s := range generic {
				p := problem.Problem{Shape: s, Precision: oc.prec, Layout: lay, OutPrecision: oc.out}
				ch := cpuPlain
				if (ci+li+si)%2 == 1 {
					p.Epilogue, ch = chain, cpuOutResidualChain
				}
				cands := kept(family.AdmitSoft(Generic{}.Space(p, DefaultLimits(90))))
				for _, c := range []Candidate{cands[0], cands[len(cands)-1]} {
					offer(p, c, si, ch, func(k Kernel) string { return cpuGenericSource(t, k, p, ch) })
				}
			}
			for si, s := range depthwise {
				p := problem.Problem{Shape: s, Precision: oc.prec, Layout: lay, OutPrecision: oc.out}
				ch := cpuPlain
				if (ci+li+si)%2 == 0 {
					p.Epilogue, ch = chain, cpuOutResidualChain
				}
				keep := depthwiseKept(p)
				if !fullSweep() {
					keep = coverOutputs(keep)
				}
				for _, c := range keep {
					offer(p, c, si, ch, func(k Kernel) string { return cpuOutSource(t, k, p, ch) })
				}
			}
		}
	}
	var jobs [][2]string
	for _, i := range cpuSample(offered, func(i int) []string { return items[i] }) {
		jobs = append(jobs, sources[i])
	}
	runCPU(t, gxx, dir, jobs, asan...)
	t.Logf("%d kernels storing another output type run on the CPU (of %d offered)", len(jobs), len(offered))
}
