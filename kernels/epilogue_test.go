package kernels

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// epilogueChains are the chains the epilogue tests render: a per-channel
// one, a residual one, and one without extra parameters.
var epilogueChains = []string{"scale_shift,relu", "residual(0.5),gelu", "leaky_relu(0.1),clamp(-1,6)"}

// mustChain parses spec.
func mustChain(t testing.TB, spec string) epilogue.Chain {
	t.Helper()
	c, err := epilogue.Parse(spec)
	if err != nil {
		t.Fatalf("Parse(%q): %v", spec, err)
	}
	return c
}

// epilogueCase is a family and a small problem it serves.
type epilogueCase struct {
	family string
	p      problem.Problem
}

// epilogueCases lists, for every family that applies chains, problems of
// each precision it serves, in both layouts, on a small 3x3 shape.
func epilogueCases(t *testing.T) []epilogueCase {
	t.Helper()
	s, err := problem.ParseShape("N=2,C=16,H=12,W=12,K=32,R=3,S=3,pad=1")
	if err != nil {
		t.Fatal(err)
	}
	precs := map[string][]problem.Precision{
		"direct": {problem.FP32}, "winograd": {problem.FP32}, "mma": {problem.TF32, problem.TF32x3},
		"mmahalf": {problem.FP16, problem.BF16}, "igemm": {problem.FP16, problem.BF16, problem.TF32},
		"generic": {problem.FP32, problem.FP16, problem.BF16},
	}
	var out []epilogueCase
	for _, f := range Families() {
		if _, ok := f.(interface{ SupportsEpilogue(epilogue.Chain) error }); !ok {
			continue
		}
		ps, ok := precs[f.Name()]
		if !ok {
			continue // a family this test does not know yet (an sm_90a one)
		}
		for i, prec := range ps {
			for j, l := range problem.Layouts {
				if (i+j)%2 == 1 && len(ps) > 1 {
					continue // every precision and every layout, not every pair
				}
				out = append(out, epilogueCase{f.Name(), problem.Problem{Shape: s, Precision: prec, Layout: l}})
			}
		}
	}
	return out
}

// firstKept is the first kept candidate of family f for p.
func firstKept(t *testing.T, f Family, p problem.Problem) Candidate {
	t.Helper()
	if err := f.Serves(p); err != nil {
		t.Fatalf("%s does not serve %s: %v", f.Name(), p, err)
	}
	for _, c := range family.AdmitSoft(f.Space(p, DefaultLimits(80))) {
		if c.Rejected == "" {
			return c
		}
	}
	t.Fatalf("%s has no kept candidate for %s", f.Name(), p)
	return Candidate{}
}

// TestEpilogueEmptyChainRendersAsBefore: an empty (non-nil) chain renders
// every family's kernels to the source of a problem without one, so the
// committed tuning records stay current (the goldens hold the source).
func TestEpilogueEmptyChainRendersAsBefore(t *testing.T) {
	for _, c := range epilogueCases(t) {
		f, _ := FamilyByName(c.family)
		cand := firstKept(t, f, c.p)
		plain, err := RenderCandidate(c.p, cand)
		if err != nil {
			t.Fatal(err)
		}
		q := c.p
		q.Epilogue = epilogue.Chain{}
		empty, err := RenderCandidate(q, cand)
		if err != nil {
			t.Fatal(err)
		}
		if plain.Source != empty.Source || Hash(plain) != Hash(empty) {
			t.Errorf("%s %s: the empty chain changes the source", c.p, cand.ID())
		}
		if strings.Contains(plain.Source, "convgen_ep") || strings.Contains(plain.Source, "EP_OFF") {
			t.Errorf("%s %s: the source without a chain mentions the epilogue", c.p, cand.ID())
		}
	}
}

// TestEpilogueRendered: with a chain, every wired family's kernel defines
// the chain, takes exactly the extra parameters the chain needs (the
// residual in the output's element type) and applies it at its stores; a
// different chain gives a different kernel hash.
func TestEpilogueRendered(t *testing.T) {
	for _, c := range epilogueCases(t) {
		f, _ := FamilyByName(c.family)
		cand := firstKept(t, f, c.p)
		plain, err := RenderCandidate(c.p, cand)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range epilogueChains {
			p := c.p
			p.Epilogue = mustChain(t, spec)
			k, err := RenderCandidate(p, cand)
			if err != nil {
				t.Fatalf("%s %s: %v", p, cand.ID(), err)
			}
			id := p.String() + " " + cand.ID()
			if Hash(k) == Hash(plain) {
				t.Errorf("%s: same hash as without the chain", id)
			}
			if !strings.Contains(k.Source, "// convgen epilogue: "+p.Epilogue.String()) {
				t.Errorf("%s: the chain's device function is missing", id)
			}
			if n := strings.Count(k.Source, "convgen_ep("); n < 2 { // the definition and at least one store
				t.Errorf("%s: convgen_ep appears %d times; the stores do not apply the chain", id, n)
			}
			sig := k.Source[strings.Index(k.Source, k.Name+"("):]
			sig = sig[:strings.Index(sig, ")")]
			res := "float"
			if p.Precision.ElementBytes() == 2 {
				res = "unsigned short"
			}
			for _, want := range []struct {
				param string
				need  bool
			}{
				{"const float* __restrict__ ep_scale, const float* __restrict__ ep_shift", p.Epilogue.NeedsScaleShift()},
				{"const " + res + "* __restrict__ ep_residual", p.Epilogue.NeedsResidual()},
			} {
				if strings.Contains(sig, want.param) != want.need {
					t.Errorf("%s: kernel parameters %q: want %q %v", id, sig, want.param, want.need)
				}
			}
		}
	}
}

// TestEpilogueCompile NVRTC-compiles, for sm_80 and sm_90, one kept
// candidate of every wired family in every case with each chain.
func TestEpilogueCompile(t *testing.T) {
	lib := nvrtctest.Open(t)
	var jobs []compileJob
	for i, c := range epilogueCases(t) {
		f, _ := FamilyByName(c.family)
		cand := firstKept(t, f, c.p)
		p := c.p
		p.Epilogue = mustChain(t, epilogueChains[i%len(epilogueChains)])
		k, err := RenderCandidate(p, cand)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, compileJob{p.String() + " " + cand.ID(), k})
	}
	// The chain goldens too.
	for _, g := range epilogueGoldens(t) {
		jobs = append(jobs, compileJob{"golden " + g.name, g.kernel})
	}
	compileForArchs(t, lib, jobs)
}

// epilogueGolden is a kernel with a chain whose source is kept in
// testdata.
type epilogueGolden struct {
	name   string
	kernel Kernel
}

// epilogueGoldens renders the chain goldens: generic and igemm, each with
// scale_shift,relu and residual(0.5),gelu.
func epilogueGoldens(t *testing.T) []epilogueGolden {
	t.Helper()
	var out []epilogueGolden
	for _, spec := range []struct{ name, chain string }{{"scale_shift_relu", "scale_shift,relu"}, {"residual05_gelu", "residual(0.5),gelu"}} {
		g := goldenGeneric(t)
		s, err := problem.ParseShape("N=2,C=12,H=15,W=17,K=18,R=3,S=3,stride_h=2,pad=1,dilation_w=2,groups=3")
		if err != nil {
			t.Fatal(err)
		}
		p := problem.Problem{Shape: s, Precision: problem.FP16, Layout: problem.NHWC, Epilogue: mustChain(t, spec.chain)}
		k, err := RenderCandidate(p, Candidate{Family: "generic", Config: g.Config})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, epilogueGolden{"generic_fp16_nhwc_groups3_" + spec.name, k})
		ip := flagship(t, problem.TF32, problem.NCHW)
		ip.Epilogue = mustChain(t, spec.chain)
		ik, err := RenderCandidate(ip, Candidate{Family: "igemm", Config: firstKept(t, IGEMM{}, ip).Config})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, epilogueGolden{"igemm_tf32_nchw_" + spec.name, ik})
	}
	return out
}

func TestEpilogueGoldenSource(t *testing.T) {
	for _, g := range epilogueGoldens(t) {
		t.Run(g.name, func(t *testing.T) {
			checkGolden(t, "TestEpilogueGoldenSource", goldenPath(g.kernel.Family, g.name), g.kernel.Source)
		})
	}
}

// noEpilogue is a family that does not know of chains: the Family methods
// of the one it wraps, without EpilogueSupport.
type noEpilogue struct{ Family }

// TestEpilogueDeclined: a family that does not apply chains (no
// EpilogueSupport) is not offered a problem with one: serves names it with
// an *EpilogueError (Serves and Enumerate leave it out for that reason,
// RenderCandidate refuses its candidates the same way); without a chain it
// serves as before. The nine families that predate chains apply them.
func TestEpilogueDeclined(t *testing.T) {
	p := flagship(t, problem.TF32, problem.NHWC)
	f := noEpilogue{Generic{}}
	if err := serves(f, p); err != nil {
		t.Fatalf("without a chain: %v", err)
	}
	p.Epilogue = mustChain(t, "scale_shift,relu")
	err := serves(f, p)
	var ee *EpilogueError
	if !errors.As(err, &ee) || ee.Family != "generic" || ee.Chain != "scale_shift,relu" {
		t.Errorf("serves = %v, want an *EpilogueError naming generic and the chain", err)
	}
	wired := []string{"direct", "winograd", "mma", "mmahalf", "wgmma", "wgmmahalf", "wgmmarow", "igemm", "generic"}
	for _, f := range Families() {
		if _, ok := f.(family.EpilogueSupport); !ok && slices.Contains(wired, f.Name()) {
			t.Errorf("%s does not apply epilogue chains", f.Name())
			if _, err := RenderCandidate(p, Candidate{Family: f.Name(), Config: Config{}}); !errors.As(err, &ee) {
				t.Errorf("%s: RenderCandidate = %v, want an *EpilogueError", f.Name(), err)
			}
		}
	}
}

// TestEpilogueSM90a puts kernels of the sm_90a families that apply chains
// through NVRTC with a chain: compiled for sm_90a where this NVRTC targets
// it, else through the front end for compute_90 (TestCompileWGMMAFrontEnd's
// check). For each family and each (precision, layout) of the flagship it
// serves, the kept candidates that differ in Overlap and PredicatedStores
// (the two store paths) are taken, each with one of epilogueChains.
func TestEpilogueSM90a(t *testing.T) {
	lib := nvrtctest.Open(t)
	lim := DefaultLimits(90)
	lim.SM90a = true
	var jobs []compileJob
	probs := map[string]problem.Problem{}
	i := 0
	for _, f := range Families() {
		if _, ok := f.(family.EpilogueSupport); !ok {
			continue
		}
		for _, prec := range problem.Precisions {
			for _, layout := range problem.Layouts {
				p := flagship(t, prec, layout)
				if f.Serves(p) != nil || !strings.HasPrefix(sm90aGate(f, p), "arch:") {
					continue
				}
				seen := map[string]bool{}
				for _, c := range kept(f.Space(p, lim)) {
					key := fmt.Sprintf("%d/%d", c.Config["Overlap"], c.Config["PredicatedStores"])
					if seen[key] {
						continue
					}
					seen[key] = true
					q := p
					q.Epilogue = mustChain(t, epilogueChains[i%len(epilogueChains)])
					i++
					k, err := RenderCandidate(q, c)
					if err != nil {
						t.Fatalf("%s %s: %v", q, c.ID(), err)
					}
					id := q.String() + " " + c.ID()
					jobs = append(jobs, compileJob{id, k})
					probs[id] = q
				}
			}
		}
	}
	if len(jobs) == 0 {
		t.Fatal("no sm_90a family applies chains")
	}
	runCompileJobs(t, jobs, func(j compileJob) string {
		if lib.SupportsArch("sm_90a") {
			return compileOne(lib, "sm_90", lim, j)
		}
		p, ok := probs[j.id]
		return frontEndOne(lib, j.kernel, p, ok)
	})
}

// TestEpilogueReferenceKernel: the checking kernels' reference applies the
// chain in double (convgen_ep64 at its store, the chain's parameters after
// bias) and compiles for every precision with a chain of each kind.
func TestEpilogueReferenceKernel(t *testing.T) {
	lib := nvrtctest.Open(t)
	var jobs []compileJob
	for i, prec := range problem.Precisions {
		p := flagship(t, prec, problem.Layouts[i%2])
		p.Epilogue = mustChain(t, epilogueChains[i%len(epilogueChains)])
		k, err := Reference(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(k.Source, "out[idx] = convgen_ep64(acc, k, idx") || !strings.Contains(k.Source, "double convgen_epilogue64(") {
			t.Errorf("%s: the reference does not apply the chain in double", p)
		}
		if got, want := strings.Contains(k.Source, "ep_residual"), p.Epilogue.NeedsResidual(); got != want {
			t.Errorf("%s: reads the residual: %v, want %v", p, got, want)
		}
		jobs = append(jobs, compileJob{"reference " + p.String(), k})
	}
	compileForArchs(t, lib, jobs)
}
