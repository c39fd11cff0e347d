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
// last plane once read it). By default the first shape runs every
// precision and layout, each (OutputsPerThread, VectorWidth) pair in one
// of them, the others FP32 with one kernel; everything under
// CONVGEN_FULL_SWEEP=1.
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
	var jobs [][2]string         // (id, C++ source)
	covered := map[[2]int]bool{} // (OutputsPerThread, VectorWidth) pairs run on the first shape
	for i, s := range shapes {
		for _, prec := range []problem.Precision{problem.FP32, problem.FP16, problem.BF16} {
			if i > 0 && (prec == problem.FP16 || !full && prec != problem.FP32) {
				continue // FP16's and (by default) BF16's residual conversion are checked on the first shape
			}
			for _, lay := range problem.Layouts {
				p := problem.Problem{Shape: s, Precision: prec, Layout: lay, Epilogue: chain}
				cands := coverOutputs(depthwiseKept(p))
				switch {
				case !full && i > 0:
					cands = cands[:1] // the first shape covers every OutputsPerThread and VectorWidth
				case !full:
					cands = coverOutputsOnce(cands, covered, len(jobs)) // each pair once over its precisions and layouts
				}
				for _, c := range cands {
					k, err := RenderCandidate(p, c)
					if err != nil {
						t.Fatalf("%s %s: %v", p, c.ID(), err)
					}
					jobs = append(jobs, [2]string{fmt.Sprintf("%s %s", p, c.ID()), cpuSourceWith(k, bounds[prec], cpuScaleShiftResidualReLU)})
				}
			}
		}
	}
	runCPU(t, gxx, dir, jobs, "-fsanitize=address")
	t.Logf("%d kernels with the chain run on the CPU", len(jobs))
}
