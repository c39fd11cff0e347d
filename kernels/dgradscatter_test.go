package kernels

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// dgradScatterSpecs are the strided, few-channel data gradients the
// dgradscatter tests render: the flagship (16 phases of 2 or 3 taps per
// axis), ResNet's stem (7×7, stride 2), a dilated filter whose row phases
// meet no tap (their dX pixels are zeros), odd channel counts with one
// axis strided, and the most columns a phase may have (C=32, 2 × 2 taps).
var dgradScatterSpecs = []string{flagshipSpec,
	"N=32,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3",
	"N=2,C=6,H=15,W=16,K=20,R=2,S=3,stride=4,pad=1,dilation_h=4,bias=false",
	"N=3,C=13,H=19,W=23,K=17,R=3,S=3,stride_h=2,pad_h=1,pad_w=2,dilation_w=2",
	"N=2,C=32,H=20,W=21,K=40,R=3,S=3,stride=2,pad=1",
}

// TestDgradScatter renders dgradscatter for dgradScatterSpecs in every
// tensor-core precision and both layouts and compiles them for sm_80
// (through the NVRTC servers, memoCompile): the PTX holds the precision's
// mma and barriers and no atomics (the sums are gathered in a fixed order).
// By default each shape in one precision and one layout, in turn (each
// precision and each layout met), the configuration the cost model ranks
// first (every precision and layout and the three best under the full
// sweep). The family declines what it does not serve,
// each with a reason. Results are checked on the GPU (autotune's
// TestDgradScatter).
func TestDgradScatter(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	lim := DefaultLimits(90)
	for si, spec := range dgradScatterSpecs {
		for pi, prec := range []problem.Precision{problem.TF32, problem.TF32x3, problem.FP16, problem.BF16} {
			for li, lay := range problem.Layouts {
				p := gradProblem(t, spec, prec, lay, problem.OpDgrad)
				if err := (DgradScatter{}).Serves(p); err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				if !fullSweep() && (pi != si%4 || li != (si/2+si)%2) {
					continue // one precision and layout a shape, in turn
				}
				ranked := rankedKept(t, p, lim, DgradScatter{})
				if len(ranked) == 0 {
					t.Fatalf("%s: no candidate kept", p)
				}
				n := 1
				if fullSweep() {
					n = min(3, len(ranked))
				}
				for _, c := range ranked[:n] {
					k, ptx := renderPTX(t, lib, DgradScatter{}, p, c.Config, "sm_80")
					mma := map[problem.Precision]string{problem.TF32: "m16n8k8.row.col.f32.tf32.tf32.f32", problem.TF32x3: "m16n8k8.row.col.f32.tf32.tf32.f32",
						problem.FP16: "m16n8k16.row.col.f32.f16.f16.f32", problem.BF16: "m16n8k16.row.col.f32.bf16.bf16.f32"}[prec]
					if !strings.Contains(ptx, ".entry "+k.Name) || !strings.Contains(ptx, "mma.sync.aligned."+mma) || !strings.Contains(ptx, "bar.sync") {
						t.Errorf("%s %v: PTX lacks the entry, %q or barriers", p, c.Config, mma)
					}
					if atomics.MatchString(ptx) {
						t.Errorf("%s %v: PTX has atomics", p, c.Config)
					}
				}
			}
		}
	}
	for _, p := range []problem.Problem{
		gradProblem(t, flagshipSpec, problem.TF32, problem.NCHW, problem.OpWgrad),                                       // another op
		gradProblem(t, flagshipSpec, problem.FP32, problem.NCHW, problem.OpDgrad),                                       // FFMA
		gradProblem(t, "N=2,C=8,H=9,W=9,K=8,R=3,S=3,stride=2,groups=2", problem.FP16, problem.NHWC, problem.OpDgrad),    // grouped
		gradProblem(t, "N=2,C=64,H=9,W=9,K=8,R=3,S=3,stride=2", problem.FP16, problem.NHWC, problem.OpDgrad),            // C > 32
		gradProblem(t, "N=2,C=3,H=9,W=9,K=8,R=3,S=3", problem.FP16, problem.NHWC, problem.OpDgrad),                      // stride 1
		gradProblem(t, "N=2,C=13,H=19,W=23,K=17,R=3,S=5,stride_h=2,pad=1", problem.TF32, problem.NCHW, problem.OpDgrad), // 13·2·5 = 130 columns
	} {
		if err := (DgradScatter{}).Serves(p); err == nil {
			t.Errorf("dgradscatter serves %s", p)
		} else if !strings.Contains(err.Error(), "dgradscatter") {
			t.Errorf("%s: %v does not name the family", p, err)
		}
	}
}

// atomics matches a PTX atomic or reduction instruction.
var atomics = regexp.MustCompile(`(?m)^\s*(atom|red)\.`)

// rankedKept is f's candidates for p that no rule rejects (the soft rules
// lifted where they would reject all), cheapest first in f's cost model.
func rankedKept(t *testing.T, p problem.Problem, lim Limits, f Family) []Candidate {
	t.Helper()
	cm, ok := f.(CostModel)
	if !ok {
		t.Fatalf("%s has no cost model", f.Name())
	}
	ranked := kept(family.AdmitSoft(f.Space(p, lim)))
	slices.SortStableFunc(ranked, func(a, b Candidate) int {
		return cmp.Compare(cm.Cost(p, a.Config, lim), cm.Cost(p, b.Config, lim))
	})
	return ranked
}

// TestDgradScatterGoldenSource keeps the CUDA source of two dgradscatter
// kernels in kernels/dgradscatter/testdata (go test ./kernels -run
// TestDgradScatterGoldenSource -update rewrites them): the flagship in
// fp16 NHWC and a dilated shape with tap-less phases in tf32 NCHW.
func TestDgradScatterGoldenSource(t *testing.T) {
	for name, c := range map[string]struct {
		p   problem.Problem
		cfg Config
	}{
		"dgradscatter_fp16_nhwc": {gradProblem(t, flagshipSpec, problem.FP16, problem.NHWC, problem.OpDgrad), Config{"TP": 10, "TQ": 19, "WM": 16}},
		"dgradscatter_tf32_nchw_zero_phases": {gradProblem(t, dgradScatterSpecs[2], problem.TF32, problem.NCHW, problem.OpDgrad),
			Config{"TP": 2, "TQ": 2, "WM": 4}},
	} {
		t.Run(name, func(t *testing.T) {
			k, err := DgradScatter{}.Render(c.p, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "TestDgradScatterGoldenSource", goldenPath(k.Family, name), k.Source)
		})
	}
}
