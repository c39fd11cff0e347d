package kernels

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// outFamilies are the families that store an output type other than the
// input's; every other family declines such a problem.
var outFamilies = map[string]bool{"generic": true, "igemm": true, "wgmmaigemm": true, "depthwise": true}

// outShapes: a channel-heavy shape every forward family but depthwise may
// serve (wgmmaigemm in NHWC), and a depthwise one.
func outShapes(t *testing.T) []problem.Shape {
	return parseShapes(t, []string{
		"N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1",
		"N=2,C=16,H=14,W=14,K=16,R=3,S=3,pad=1,groups=16",
	})
}

// TestOutPrecisionDeclined: exactly the families of outFamilies implement
// family.OutPrecisionSupport; the others decline a problem storing another
// type with an *OutPrecisionError naming the type (Serves, Enumerate and
// RenderCandidate), while the problem with the input's type stays theirs;
// Enumerate offers only candidates of outFamilies, and every shape is
// served (generic).
func TestOutPrecisionDeclined(t *testing.T) {
	lim := DefaultLimits(90)
	lim.SM90a = true
	for _, f := range Families() {
		_, ok := f.(family.OutPrecisionSupport)
		if ok != outFamilies[f.Name()] {
			t.Errorf("%s implements OutPrecisionSupport: %v, want %v", f.Name(), ok, outFamilies[f.Name()])
		}
	}
	for _, s := range outShapes(t) {
		for _, oc := range outCases {
			for _, lay := range problem.Layouts {
				p := problem.Problem{Shape: s, Precision: oc.prec, Layout: lay, OutPrecision: oc.out}
				plain := p
				plain.OutPrecision = ""
				for _, f := range Families() {
					err := serves(f, p)
					if outFamilies[f.Name()] {
						if (err == nil) != (serves(f, plain) == nil) {
							t.Errorf("%s: %s serves it: %v, but the same problem without out-precision: %v", p, f.Name(), err, serves(f, plain))
						}
						continue
					}
					var oe *OutPrecisionError
					if !errors.As(err, &oe) || oe.Family != f.Name() || !strings.Contains(err.Error(), "asked for "+string(oc.out)+" output") {
						t.Errorf("%s: %s: %v, want an OutPrecisionError", p, f.Name(), err)
					}
					for _, c := range kept(f.Space(plain, lim)) {
						if _, err := RenderCandidate(p, c); !errors.As(err, &oe) {
							t.Errorf("%s: RenderCandidate(%s) = %v, want an OutPrecisionError", p, c.ID(), err)
						}
						break
					}
				}
				cands, err := Enumerate(p, lim)
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				for _, c := range cands {
					if !outFamilies[c.Family] {
						t.Fatalf("%s: Enumerate offers %s", p, c.ID())
					}
				}
				if err := Serves(p); err != nil {
					t.Errorf("%s: Serves: %v", p, err)
				}
			}
		}
	}
}

// outKernels renders, for each outCase and layout, the first kept
// candidate of every family in outFamilies that serves the problem (sm_90a
// included), every other one with the chain scale_shift,residual(0.5),relu.
// It checks that each renders out_t of the output's type, an output pointer
// and a residual of it, and a source other than the same problem's without
// the out-precision.
func outKernels(t *testing.T) (jobs []compileJob, probs map[string]problem.Problem) {
	t.Helper()
	lim := DefaultLimits(90)
	lim.SM90a = true
	chain := mustChain(t, "scale_shift,residual(0.5),relu")
	probs = map[string]problem.Problem{}
	i := 0
	for si, s := range outShapes(t) {
		for _, oc := range outCases {
			for _, lay := range problem.Layouts {
				for _, f := range Families() {
					p := problem.Problem{Shape: s, Precision: oc.prec, Layout: lay, OutPrecision: oc.out}
					if !outFamilies[f.Name()] || serves(f, p) != nil {
						continue
					}
					if !fullSweep() && si > 0 && f.Name() == "wgmmaigemm" && lay == problem.NCHW {
						continue // wgmmaigemm's NCHW (relayed out): the first shape (all under the full sweep)
					}
					if i++; i%2 == 0 {
						p.Epilogue = chain
					}
					cands := kept(family.AdmitSoft(f.Space(p, lim)))
					if len(cands) == 0 {
						t.Fatalf("%s: %s has no kept candidate", p, f.Name())
					}
					k, err := RenderCandidate(p, cands[0])
					if err != nil {
						t.Fatalf("%s %s: %v", p, cands[0].ID(), err)
					}
					typ := family.NewOutput(p).Type()
					for _, want := range []string{"typedef " + typ + " out_t;", "(out_t* __restrict__ out,", "to_out("} {
						if !strings.Contains(k.Source, want) {
							t.Errorf("%s %s: the source has no %q", p, cands[0].ID(), want)
						}
					}
					if len(p.Epilogue) > 0 && !strings.Contains(k.Source, "const "+typ+"* __restrict__ ep_residual") {
						t.Errorf("%s %s: the residual is not of the output's type %s", p, cands[0].ID(), typ)
					}
					plain := p
					plain.OutPrecision = ""
					if pk, err := RenderCandidate(plain, cands[0]); err != nil || Hash(pk) == Hash(k) || strings.Contains(pk.Source, "out_t") {
						t.Errorf("%s %s: renders as without the out-precision (%v)", p, cands[0].ID(), err)
					}
					id := p.String() + " " + cands[0].ID()
					jobs = append(jobs, compileJob{id, k})
					probs[id] = p
				}
			}
		}
	}
	return jobs, probs
}

// TestOutPrecisionCompile NVRTC-compiles the kernels of outKernels (by
// default those that cover them, coverJobs): for sm_80 and sm_90
// (generic, igemm, depthwise; compileForArchs), wgmmaigemm for sm_90a, or
// through the front end to PTX where NVRTC cannot target sm_90a; and the
// checking kernels of every outCase (compare and gather of out_t,
// convgen_fill_out, the residual read as out_t in double).
func TestOutPrecisionCompile(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	jobs, probs := outKernels(t)
	var plain, sm90a []compileJob
	for _, j := range jobs {
		if j.kernel.ArchSuffix != "" {
			sm90a = append(sm90a, j)
		} else {
			plain = append(plain, j)
		}
	}
	if len(sm90a) == 0 {
		t.Fatal("no wgmmaigemm kernel storing another output type")
	}
	// By default, of these, the kernels that have every family with every
	// (precision, output type), layout and shape, with and without the
	// chain, and every knob value and code path of them all (coverJobs).
	cover := func(j compileJob) []string {
		p, f := probs[j.id], j.kernel.Family
		return []string{f + " " + string(p.Precision) + " to " + string(p.Out()), f + " " + string(p.Layout), f + " shape " + p.Shape.String(), fmt.Sprintf("%s chain %v", f, len(p.Epilogue) > 0)}
	}
	plain, sm90a = coverJobs(plain, cover), coverJobs(sm90a, cover)
	for i, oc := range outCases {
		p := problem.Problem{Shape: outShapes(t)[0], Precision: oc.prec, Layout: problem.Layouts[i%2], OutPrecision: oc.out}
		if i%2 == 0 {
			p.Epilogue = mustChain(t, "scale_shift,residual(0.5),relu")
		}
		k, err := Reference(p)
		if err != nil {
			t.Fatal(err)
		}
		typ := family.NewOutput(p).Type()
		for _, want := range []string{"convgen_compare(const out_t* __restrict__ out,", "convgen_gather(const out_t* __restrict__ out,", "convgen_fill_out(out_t* __restrict__ dst", "typedef " + typ + " out_t;"} {
			if !strings.Contains(k.Source, want) {
				t.Errorf("reference %s: no %q", p, want)
			}
		}
		if len(p.Epilogue) > 0 && !strings.Contains(k.Source, "out_to_double(ep_residual[i])") {
			t.Errorf("reference %s: the residual is not read as the output's type", p)
		}
		plain = append(plain, compileJob{"reference " + p.String(), k})
	}
	compileForArchs(t, lib, plain)
	lim := DefaultLimits(90)
	lim.SM90a = true
	runCompileJobs(t, sm90a, func(j compileJob) string {
		if lib.SupportsArch("sm_90a") {
			return compileOne(lib, "sm_90", lim, j)
		}
		// frontEndOne's per-problem checks are wgmma's and wgmmahalf's:
		// wgmmaigemm's PTX is checked for its entry and a wgmma.
		return frontEndOne(lib, j.kernel, probs[j.id], false)
	})
}
