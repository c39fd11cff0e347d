package kernels

import (
	"fmt"
	"os"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

// cpuScaleShiftResidualReLU is the chain "scale_shift,residual(0.5),relu"
// for cpuMain: scale, shift and a residual of exactly the output's size (so
// that AddressSanitizer sees any read past it), passed after bias, and the
// chain applied in float64.
var cpuScaleShiftResidualReLU = cpuChain{
	setup: `    std::vector<elem_t> res(out_n);
    std::vector<float> scale(K), shift(K);
    for (auto& v : res) v = from_float((float)cpu_rnd(seed) * 4);
    for (auto& v : scale) v = (float)(1 + cpu_rnd(seed));
    for (auto& v : shift) v = (float)cpu_rnd(seed);`,
	args:  ", scale.data(), shift.data(), res.data()",
	apply: "double y = (double)scale[k] * acc + (double)shift[k] + 0.5 * (double)to_float(res[oi]); if (y < 0) y = 0;",
}

// TestDepthwiseEpilogueOnCPU runs depthwise kernels with the chain
// scale_shift,residual(0.5),relu on the CPU (as TestDepthwiseOnCPU, built
// with AddressSanitizer) in both layouts and checks every output against
// the chain in float64: the residual's offsets in each layout, and no read
// of the residual past its end (NCHW strips past Q in the last row of the
// last plane once read it). The first shape is offered in every precision
// and layout, the others in FP32 (and BF16 under the full sweep), one
// kernel per (OutputsPerThread, VectorWidth) pair each; by default the
// ones that run (cpuSample) have every shape in both layouts, every
// (precision, layout), every pair and every code path of those offered;
// every kept candidate is offered and runs under CONVGEN_FULL_SWEEP=1.
func TestDepthwiseEpilogueOnCPU(t *testing.T) {
	t.Parallel() // CPU-bound and independent: overlaps the other CPU runs (the test command's time)
	gxx, dir := cpuCompiler(t, "-fno-strict-aliasing", "-pthread", "-w", "-fsanitize=address")
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
	var offered []Kernel
	var ids, items [][]string // (id, precision) and cpuSample's items of each offered kernel
	for i, s := range shapes {
		for _, prec := range []problem.Precision{problem.FP32, problem.FP16, problem.BF16} {
			if i > 0 && (prec == problem.FP16 || !full && prec != problem.FP32) {
				continue // FP16's and (by default) BF16's residual conversion are checked on the first shape
			}
			for _, lay := range problem.Layouts {
				p := problem.Problem{Shape: s, Precision: prec, Layout: lay, Epilogue: chain}
				cands := depthwiseKept(p)
				if !full {
					cands = coverOutputs(cands)
				}
				for _, c := range cands {
					k, err := RenderCandidate(p, c)
					if err != nil {
						t.Fatalf("%s %s: %v", p, c.ID(), err)
					}
					offered = append(offered, k)
					ids = append(ids, []string{fmt.Sprintf("%s %s", p, c.ID()), string(prec)})
					items = append(items, []string{fmt.Sprintf("shape %d %s", i, lay), "problem " + string(prec) + " " + string(lay),
						fmt.Sprintf("outputs %d vector %d", c.Config["OutputsPerThread"], c.Config["VectorWidth"])})
				}
			}
		}
	}
	var jobs [][2]string // (id, C++ source)
	for _, i := range cpuSample(offered, func(i int) []string { return items[i] }) {
		jobs = append(jobs, [2]string{ids[i][0], cpuSourceWith(offered[i], bounds[problem.Precision(ids[i][1])], cpuScaleShiftResidualReLU)})
	}
	runCPU(t, gxx, dir, jobs, "-fsanitize=address")
	t.Logf("%d kernels with the chain run on the CPU (of %d offered)", len(jobs), len(offered))
}
