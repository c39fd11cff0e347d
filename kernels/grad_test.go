package kernels

import (
	"errors"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// gradFamily says whether f serves a gradient op (and so declines every
// forward problem, whatever its shape).
func gradFamily(f Family) bool { return familyOp(f.Name()) != problem.OpFprop }

// servesOp says whether family name computes op: its own (familyOp), and
// for igemm and wgmmaigemm the data gradient too.
func servesOp(name string, op problem.Op) bool {
	return familyOp(name) == op || ((name == "igemm" || name == "wgmmaigemm") && op == problem.OpDgrad)
}

// familyOp is the op a family computes: wgradmma is a wgrad family too.
func familyOp(name string) problem.Op {
	switch name {
	case "dgrad", "dgradmma", "dgradscatter", "dgradwin":
		return problem.OpDgrad
	case "wgrad", "wgradmma":
		return problem.OpWgrad
	}
	return problem.OpFprop
}

// gradProblem is spec as a problem of op in prec and lay.
func gradProblem(t testing.TB, spec string, prec problem.Precision, lay problem.Layout, op problem.Op) problem.Problem {
	t.Helper()
	s, err := problem.ParseShape(spec)
	if err != nil {
		t.Fatalf("ParseShape(%q): %v", spec, err)
	}
	return problem.Problem{Shape: s, Precision: prec, Layout: lay, Op: op}
}

// TestGradServes: each op is served by its own family alone. The forward
// families decline the gradients, naming the op; dgrad and wgrad decline
// fprop and each other's op; Enumerate keeps candidates of the op's family
// only, for every precision and layout of shapes with groups, depthwise,
// strides and dilation.
func TestGradServes(t *testing.T) {
	for _, spec := range append([]string{flagshipSpec}, gradShapes...) {
		for _, op := range problem.Ops {
			for _, prec := range problem.Precisions {
				for _, lay := range problem.Layouts {
					p := gradProblem(t, spec, prec, lay, op)
					for _, f := range Families() {
						err := f.Serves(p)
						mine := servesOp(f.Name(), op)
						switch {
						case op != problem.OpFprop && f.Name() == op.String() && err != nil: // the op's general family serves every shape
							t.Errorf("%s declines %s: %v", f.Name(), p, err)
						case op != problem.OpFprop && !mine && (err == nil || !strings.Contains(err.Error(), "op=") || !errors.Is(err, family.ErrOtherOp)):
							t.Errorf("%s on %s: %v, want a refusal naming the op (family.ErrOtherOp)", f.Name(), p, err)
						case op == problem.OpFprop && gradFamily(f) && err != nil && !errors.Is(err, family.ErrOtherOp):
							t.Errorf("%s on the forward %s: %v is not family.ErrOtherOp", f.Name(), p, err)
						case op == problem.OpFprop && gradFamily(f) && err == nil:
							t.Errorf("%s serves the forward %s", f.Name(), p)
						}
					}
					if op == problem.OpFprop {
						continue
					}
					cands, err := Enumerate(p, DefaultLimits(90))
					if err != nil {
						t.Fatalf("Enumerate(%s): %v", p, err)
					}
					if len(kept(cands)) == 0 {
						t.Errorf("Enumerate(%s): no kept candidate", p)
					}
					for _, c := range cands {
						if !servesOp(c.Family, op) {
							t.Errorf("Enumerate(%s): candidate %s of another family", p, c.ID())
						}
					}
				}
			}
		}
	}
}

// TestGradEpilogueRefused: a gradient problem with an epilogue chain is
// served by no family (problem.Validate refuses it).
func TestGradEpilogueRefused(t *testing.T) {
	for _, op := range []problem.Op{problem.OpDgrad, problem.OpWgrad} {
		p := gradProblem(t, gradShapes[0], problem.FP32, problem.NCHW, op)
		p.Epilogue = mustChain(t, "relu")
		if err := Serves(p); err == nil {
			t.Errorf("Serves(%s) = nil, want a refusal", p)
		}
	}
}

// TestGradRenderedGeometry: every kept candidate of the gradient families
// (a third of the shape, op, precision and layout combinations in turn;
// all under the full sweep) renders with a launch within CUDA's and the device's limits (a 1-D grid
// for dgrad and wgrad), a leading comment saying what a block, warp and
// thread compute, and, for these small shapes, the 32-bit path.
func TestGradRenderedGeometry(t *testing.T) {
	t.Parallel() // CPU-bound and independent: overlaps the other CPU runs (the test command's time)
	lim := DefaultLimits(90)
	for si, spec := range append([]string{flagshipSpec}, gradShapes...) {
		for oi, op := range []problem.Op{problem.OpDgrad, problem.OpWgrad} {
			for pi, prec := range problem.Precisions {
				for li, lay := range problem.Layouts {
					if !fullSweep() && (si+oi+pi+li)%3 != 0 {
						continue // a third of the combinations in turn (all under the full sweep)
					}
					p := gradProblem(t, spec, prec, lay, op)
					cands, err := Enumerate(p, lim)
					if err != nil {
						t.Fatal(err)
					}
					for ci, c := range kept(cands) {
						if !fullSweep() && ci%3 != (si+oi)%3 {
							continue // a third of the kept candidates in turn (all under the full sweep)
						}
						k, err := RenderCandidate(p, c)
						if err != nil {
							t.Fatalf("%s %s: %v", p, c.ID(), err)
						}
						threads := k.Block[0] * k.Block[1] * k.Block[2]
						if threads > lim.MaxThreadsPerBlock || k.SharedBytes > lim.MaxSharedPerBlock || k.Grid[0] < 1 || k.Grid[1] < 1 || k.Grid[1] > 65535 || k.Grid[2] < 1 || k.Grid[2] > 65535 {
							t.Errorf("%s %s: launch %+v outside the limits", p, c.ID(), k.Launch)
						}
						if (c.Family == "dgrad" || c.Family == "wgrad") && (k.Grid[1] != 1 || k.Grid[2] != 1) {
							t.Errorf("%s %s: grid %v: the direct families launch a 1-D grid", p, c.ID(), k.Grid)
						}
						lead := leadingComment(k.Source)
						for _, re := range levelWords {
							if !re.MatchString(lead) {
								t.Errorf("%s %s: leading comment lacks %s", p, c.ID(), re)
							}
						}
						if strings.Contains(k.Source, "#define IDX64 1") {
							t.Errorf("%s %s: a small shape renders 64-bit offsets", p, c.ID())
						}
					}
				}
			}
		}
	}
}

// TestGradIndex64: shapes with a tensor of 2^31 elements or more render
// the 64-bit path (long long offsets), and a filter gradient of more than
// 2^31−1 blocks caps its grid at CUDA's limit (the kernel strides over the
// rest).
func TestGradIndex64(t *testing.T) {
	for _, op := range []problem.Op{problem.OpDgrad, problem.OpWgrad} {
		for _, spec := range []string{kb87Spec, foldedSpec} {
			p := gradProblem(t, spec, problem.FP16, problem.NHWC, op)
			cands, err := Enumerate(p, DefaultLimits(90))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range kept(cands) {
				k, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(k.Source, "#define IDX64 1") || !strings.Contains(k.Source, "typedef long long idx_t;") {
					t.Errorf("%s %s: 64-bit offsets not rendered", p, c.ID())
				}
				if k.Grid[0] > 1<<31-1 {
					t.Errorf("%s %s: grid %d past CUDA's limit", p, c.ID(), k.Grid[0])
				}
			}
		}
	}
	// 2^33 dW elements: one block each passes 2^31−1 blocks.
	big := gradProblem(t, "N=1,C=65536,H=2,W=2,K=32768,R=2,S=2,bias=false", problem.FP32, problem.NCHW, problem.OpWgrad)
	k, err := Wgrad{}.Render(big, Config{"Threads": 64, "Outs": 1})
	if err != nil {
		t.Fatal(err)
	}
	if k.Grid[0] != 1<<31-1 || !strings.Contains(k.Source, "#define IDX64 1") {
		t.Errorf("wgrad of 2^33 dW elements: grid %d, IDX64 %v", k.Grid[0], strings.Contains(k.Source, "#define IDX64 1"))
	}
}

// gradCompileSpec is the shape TestGradCompile compiles: groups, stride 2,
// large enough that most configurations are kept.
const gradCompileSpec = "N=8,C=24,H=30,W=28,K=32,R=3,S=3,stride=2,pad=1,groups=2"

// TestGradCompile NVRTC-compiles for sm_90 the gradient families' kept
// candidates of gradCompileSpec in every precision and layout (by default
// each precision in one layout, in turn, so that each op meets every
// precision and every layout), one configuration each in turn, the
// configurations of the first that have every knob value and every code
// path of its kept ones (pathCover), and
// the 64-bit path of both, plus the gradients' reference kernels that have
// every op with every precision and every layout and every code path of
// the reference kernels of every precision and layout; every kept
// candidate and every reference kernel under the full sweep.
func TestGradCompile(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	const arch = "sm_90"
	lim := DefaultLimits(90)
	var jobs, refs []compileJob
	var refItems [][]string
	turn := 0
	for _, op := range []problem.Op{problem.OpDgrad, problem.OpWgrad} {
		for i, prec := range problem.Precisions {
			for j, lay := range problem.Layouts {
				p := gradProblem(t, gradCompileSpec, prec, lay, op)
				ref, err := Reference(p)
				if err != nil {
					t.Fatal(err)
				}
				refs = append(refs, compileJob{"reference " + p.String(), ref})
				refItems = append(refItems, []string{op.String() + " " + string(prec), op.String() + " " + string(lay)})
				cands, err := Enumerate(p, lim)
				if err != nil {
					t.Fatal(err)
				}
				ks := kept(cands)
				if !fullSweep() && (i > 0 || j > 0) {
					if j != i%2 {
						continue // one layout per precision, in turn (both under the full sweep)
					}
					ks = ks[turn%len(ks) : turn%len(ks)+1]
					turn++
				}
				var kerns []Kernel
				for _, c := range ks {
					k, err := RenderCandidate(p, c)
					if err != nil {
						t.Fatal(err)
					}
					kerns = append(kerns, k)
				}
				idx := make([]int, len(kerns))
				for i := range idx {
					idx[i] = i
				}
				if !fullSweep() && len(kerns) > 1 {
					// The first problem's: every knob value and every code path.
					idx = pathCover(kerns, nil)
				}
				for _, i := range idx {
					jobs = append(jobs, compileJob{p.String() + " " + ks[i].ID(), kerns[i]})
				}
			}
		}
		p := gradProblem(t, kb87Spec, problem.BF16, problem.NCHW, op)
		cands, err := Enumerate(p, lim)
		if err != nil {
			t.Fatal(err)
		}
		k, err := RenderCandidate(p, kept(cands)[0])
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, compileJob{p.String() + " " + kept(cands)[0].ID(), k})
	}
	if fullSweep() {
		jobs = append(jobs, refs...)
	} else {
		kerns := make([]Kernel, len(refs))
		for i, r := range refs {
			kerns[i] = r.kernel
		}
		for _, i := range pathCover(kerns, func(i int) []string { return refItems[i] }) {
			jobs = append(jobs, refs[i])
		}
	}
	runCompileJobs(t, jobs, func(j compileJob) string { return compileOne(lib, arch, lim, j) })
}

// TestGradGoldenSource keeps the CUDA source of one dgrad and one wgrad
// kernel of each layout in their families' testdata (go test ./kernels
// -run TestGradGoldenSource -update rewrites them): grouped, strided and
// padded shapes, fp16 NHWC and fp32 NCHW, bias.
func TestGradGoldenSource(t *testing.T) {
	for name, c := range map[string]struct {
		f   Family
		p   problem.Problem
		cfg Config
	}{
		"dgrad_fp32_nchw_t128_e2": {Dgrad{}, gradProblem(t, gradShapes[1], problem.FP32, problem.NCHW, problem.OpDgrad), Config{"Threads": 128, "Elems": 2}},
		"dgrad_fp16_nhwc_t256_e1": {Dgrad{}, gradProblem(t, gradShapes[1], problem.FP16, problem.NHWC, problem.OpDgrad), Config{"Threads": 256, "Elems": 1}},
		"wgrad_fp32_nchw_t256_o4": {Wgrad{}, gradProblem(t, gradShapes[1], problem.FP32, problem.NCHW, problem.OpWgrad), Config{"Threads": 256, "Outs": 4}},
		"wgrad_bf16_nhwc_t128_o2": {Wgrad{}, gradProblem(t, gradShapes[1], problem.BF16, problem.NHWC, problem.OpWgrad), Config{"Threads": 128, "Outs": 2}},
	} {
		t.Run(name, func(t *testing.T) {
			k, err := c.f.Render(c.p, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "TestGradGoldenSource", goldenPath(k.Family, name), k.Source)
		})
	}
	for _, op := range []problem.Op{problem.OpDgrad, problem.OpWgrad} {
		k, err := Reference(gradProblem(t, gradShapes[1], problem.FP16, problem.NHWC, op))
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "TestGradGoldenSource", goldenPath("reference", "reference_"+op.String()+"_fp16_nhwc"), k.Source)
	}
}
