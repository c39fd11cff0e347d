package kernels

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/nvrtc"
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

// TestEpilogueCompile NVRTC-compiles one kept candidate of every wired
// family in every case (epilogueCases), each with one of epilogueChains in
// turn, and the chain goldens, for sm_80 and sm_90 (compileForArchs: every
// family for both, every kernel for one of them; every kernel for both
// under the full sweep).
func TestEpilogueCompile(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
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
// (the two store paths) are taken, each with one of epilogueChains; by
// default, of those, the ones that have every family with every precision,
// every layout, every store path and every chain and every code path of
// them all (coverJobs), all under the full sweep.
func TestEpilogueSM90a(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
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
	// By default every family with every precision, every layout, every
	// store path and every chain, and every code path of the kernels above.
	jobs = coverJobs(jobs, func(j compileJob) []string {
		q, f, cfg := probs[j.id], j.kernel.Family, j.kernel.Config
		return []string{f + " " + string(q.Precision), f + " " + string(q.Layout), fmt.Sprintf("%s stores %d/%d", f, cfg["Overlap"], cfg["PredicatedStores"]), f + " chain " + q.Epilogue.String()}
	})
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
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
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

// residualPrefetchProblems are the flagship problems with a residual chain
// of the two families that read the residual early (ResidualPrefetch):
// wgmmarow in tf32 NCHW, wgmmahalf in every precision and layout it serves.
func residualPrefetchProblems(t *testing.T) []epilogueCase {
	t.Helper()
	var out []epilogueCase
	for _, c := range []struct {
		family string
		prec   problem.Precision
		layout problem.Layout
	}{
		{"wgmmarow", problem.TF32, problem.NCHW},
		{"wgmmahalf", problem.FP16, problem.NHWC}, {"wgmmahalf", problem.BF16, problem.NCHW},
		{"wgmmahalf", problem.BF16, problem.NHWC}, {"wgmmahalf", problem.FP16, problem.NCHW},
	} {
		p := flagship(t, c.prec, c.layout)
		p.Epilogue = mustChain(t, "residual(0.5),relu")
		out = append(out, epilogueCase{c.family, p})
	}
	return out
}

// residualAtStore and residualLoaded match the chain's application to an
// output value (wgmmahalf's acc[...], wgmmarow's w[u]) reading the residual
// at the store (convgen_ep) or given it read beforehand (convgen_epilogue).
var (
	residualAtStore = regexp.MustCompile(`convgen_ep\((acc\[|w\[u\])`)
	residualLoaded  = regexp.MustCompile(`convgen_epilogue\((acc\[|w\[u\])`)
)

// TestResidualPrefetchSpace: ResidualPrefetch is in the space only with a
// residual in the chain (wgmmahalf's 1 beside its kept configurations' 0
// where its registers fit; 2, and wgmmarow's 1 and 2, only for a pin), a configuration without the knob (the
// records that predate it) renders as with 0, and Render refuses a value
// out of range or one without a residual. The sources read the residual
// as each value says.
func TestResidualPrefetchSpace(t *testing.T) {
	lim := DefaultLimits(90)
	lim.SM90a = true
	for _, c := range residualPrefetchProblems(t) {
		f, _ := FamilyByName(c.family)
		plain := c.p
		plain.Epilogue = mustChain(t, "scale_shift,relu")
		for _, cand := range f.Space(plain, lim) {
			if _, ok := cand.Config["ResidualPrefetch"]; ok {
				t.Fatalf("%s %s: ResidualPrefetch without a residual", plain, cand.ID())
			}
		}
		counts := map[int]int{}
		var pick [3]*Candidate
		for _, cand := range kept(f.Space(c.p, lim)) {
			rp := cand.Config["ResidualPrefetch"]
			counts[rp]++
			if pick[rp] == nil {
				pick[rp] = &cand
			}
		}
		// wgmmarow searches only 0, wgmmahalf 0 and 1 (1 only where its
		// registers fit); the other values render for a pin.
		switch {
		case c.family == "wgmmarow" && (counts[0] == 0 || counts[1] != 0 || counts[2] != 0):
			t.Fatalf("%s %s: kept candidates per ResidualPrefetch %v, want only 0", c.family, c.p, counts)
		case c.family == "wgmmahalf" && (counts[0] == 0 || counts[1] == 0 || counts[1] > counts[0] || counts[2] != 0):
			t.Fatalf("%s %s: kept candidates per ResidualPrefetch %v, want 0, 1 at most as many, no 2", c.family, c.p, counts)
		}
		base := pick[0].Config
		for rp := range 3 {
			cfg := Config{"ResidualPrefetch": rp}
			for k, v := range base {
				cfg[k] = v
			}
			k, err := f.Render(c.p, cfg)
			if err != nil {
				t.Fatalf("%s %s: %v", c.family, cfg, err)
			}
			src := k.Source
			regs := strings.Contains(src, "load_residual(z,") && strings.Contains(src, "ld.global.cs.") &&
				residualLoaded.MatchString(src)
			l2 := strings.Contains(src, "prefetch_residual(ep_residual,") && strings.Contains(src, "prefetch.L2 [")
			atStore := residualAtStore.MatchString(src)
			if regs != (rp == 1) || l2 != (rp == 2) || atStore == (rp == 1) {
				t.Errorf("%s %s: registers %v, L2 prefetch %v, read at the store %v", c.family, cfg, regs, l2, atStore)
			}
			if rp == 0 {
				old, err := f.Render(c.p, base) // no ResidualPrefetch: an old record
				if err != nil || old.Source != src || k.Config.String() != base.String() {
					t.Errorf("%s %s: without the knob: %v, same source %v, config %s", c.family, base, err, err == nil && old.Source == src, k.Config)
				}
			}
		}
		for _, bad := range []struct {
			p  problem.Problem
			rp int
		}{{c.p, 3}, {c.p, -1}, {plain, 1}, {plain, 2}} {
			cfg := Config{"ResidualPrefetch": bad.rp}
			for k, v := range base {
				cfg[k] = v
			}
			if _, err := f.Render(bad.p, cfg); err == nil || !strings.Contains(err.Error(), "ResidualPrefetch") {
				t.Errorf("%s %s %s: Render error %v, want one naming ResidualPrefetch", c.family, bad.p.Epilogue, cfg, err)
			}
		}
	}
}

// residualHelperMarker is where each family's residual helpers end in its
// source: the next definition after them.
var residualHelperMarker = map[string]string{"wgmmarow": "// store_row adds the bias", "wgmmahalf": "template <bool PRED>"}

// TestResidualPrefetchCompile puts the ResidualPrefetch variants of both
// families through NVRTC with a residual chain: every kept variant 1 and 2
// of each store path (Overlap x PredicatedStores) of every problem,
// compiled for sm_90a where this NVRTC targets it, else through the front
// end (whose PTX must hold the early reads: inline PTX is not checked
// there). Since the front end leaves the inline PTX unchecked, the
// rendered helpers (the source up to its store function, with a kernel
// that calls them) are also compiled to CUBIN for sm_80, through ptxas.
func TestResidualPrefetchCompile(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	lim := DefaultLimits(90)
	lim.SM90a = true
	var jobs []compileJob
	probs := map[string]problem.Problem{}
	for _, c := range residualPrefetchProblems(t) {
		f, _ := FamilyByName(c.family)
		seen := map[string]bool{}
		for _, cand := range kept(f.Space(c.p, lim)) {
			rp := cand.Config["ResidualPrefetch"]
			key := fmt.Sprintf("%d/%d/%d", rp, cand.Config["Overlap"], cand.Config["PredicatedStores"])
			if rp == 0 || seen[key] {
				continue
			}
			seen[key] = true
			k, err := RenderCandidate(c.p, cand)
			if err != nil {
				t.Fatalf("%s %s: %v", c.p, cand.ID(), err)
			}
			id := c.p.String() + " " + cand.ID()
			jobs = append(jobs, compileJob{id, k})
			probs[id] = c.p
			if len(seen) <= 2 { // the helpers of the first of each value
				jobs = append(jobs, compileJob{"helpers " + id, residualHelpers(t, c.family, c.p, k, rp)})
			}
		}
	}
	runCompileJobs(t, jobs, func(j compileJob) string {
		if strings.HasPrefix(j.id, "helpers ") {
			return compileOne(lib, "sm_80", DefaultLimits(80), j)
		}
		if lib.SupportsArch("sm_90a") {
			return compileOne(lib, "sm_90", lim, j)
		}
		if msg := frontEndOne(lib, j.kernel, probs[j.id], true); msg != "" {
			return msg
		}
		res, err := memoCompile(lib, true, j.kernel.Source, nvrtc.Options{Name: j.kernel.Name + ".cu", Arch: "sm_90a"})
		if err != nil {
			return err.Error()
		}
		want := "ld.global.cs."
		if j.kernel.Config["ResidualPrefetch"] == 2 {
			want = "prefetch.L2 ["
		}
		if !strings.Contains(res.PTX, want) {
			return "PTX lacks " + want
		}
		return ""
	})
}

// residualHelpers is kernel k's source up to the end of its residual
// helpers, with a kernel that calls them (load_residual for variant 1,
// prefetch_residual for 2) on one tile, as a sm_80 kernel.
func residualHelpers(t *testing.T, family string, p problem.Problem, k Kernel, rp int) Kernel {
	t.Helper()
	src, _, ok := strings.Cut(k.Source, residualHelperMarker[family])
	if !ok {
		t.Fatalf("%s: no %q in the source", k.Name, residualHelperMarker[family])
	}
	elem, n := "float", "ACC"
	if family == "wgmmahalf" {
		elem, n = "elem_t", "1"
	}
	name := "residual_helpers_" + family
	var call string
	switch {
	case rp == 1 && family == "wgmmarow":
		call = "    float z[ACC];\n    load_residual(z, r, blockIdx.x, 0, threadIdx.x);\n    for (int i = 0; i < ACC; ++i) out[threadIdx.x * ACC + i] = z[i];\n"
	case rp == 1:
		call = "    residual z;\n    load_residual(z, r, blockIdx.x, 0, threadIdx.x, true);\n    out[threadIdx.x] = res_float(z, RES_PAIRS - 1, 1) + res_float(z, 0, 0);\n"
	default:
		call = "    prefetch_residual(r, blockIdx.x, 0, threadIdx.x);\n"
	}
	src += fmt.Sprintf("extern \"C\" __global__ void %s(float* out, const %s* __restrict__ r)\n{\n    (void)out; (void)%s;\n%s}\n", name, elem, n, call)
	return Kernel{Family: "residual-helpers", Config: k.Config, Name: name, Source: src, Launch: Launch{Block: [3]int{128, 1, 1}, Grid: [3]int{1, 1, 1}}}
}
