package kernels

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

var update = flag.Bool("update", false, "rewrite golden files")

// flagshipSpec is AlexNet's first layer, the shape convgen is tuned on first.
const flagshipSpec = "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2"

func flagshipShape(t testing.TB) problem.Shape {
	t.Helper()
	s, err := problem.ParseShape(flagshipSpec)
	if err != nil {
		t.Fatalf("ParseShape(%q): %v", flagshipSpec, err)
	}
	return s
}

func flagship(t testing.TB, prec problem.Precision, layout problem.Layout) problem.Problem {
	return problem.Problem{Shape: flagshipShape(t), Precision: prec, Layout: layout}
}

// served is one (precision, layout) problem that Enumerate serves, with its
// candidates.
type served struct {
	prob  problem.Problem
	cands []Candidate
}

// servedFlagship enumerates the flagship for every precision × layout and
// returns the combinations some family serves. fp32/nchw must be one of them.
func servedFlagship(t testing.TB, lim Limits) []served {
	t.Helper()
	var out []served
	for _, prec := range problem.Precisions {
		for _, layout := range problem.Layouts {
			p := flagship(t, prec, layout)
			cands, err := Enumerate(p, lim)
			if err != nil {
				if prec == problem.FP32 && layout == problem.NCHW {
					t.Fatalf("Enumerate(flagship fp32 nchw): %v", err)
				}
				continue
			}
			out = append(out, served{p, cands})
		}
	}
	return out
}

func kept(cands []Candidate) []Candidate {
	var out []Candidate
	for _, c := range cands {
		if c.Rejected == "" {
			out = append(out, c)
		}
	}
	return out
}

var cIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reasonClass is a rejection reason's "class: detail" form.
var reasonClass = regexp.MustCompile(`^[a-z][a-z ]*[a-z]: \S`)

func TestEnumerateFlagship(t *testing.T) {
	lim := DefaultLimits(90)
	p := flagship(t, problem.FP32, problem.NCHW)
	cands, err := Enumerate(p, lim)
	if err != nil {
		t.Fatalf("Enumerate: %v", err)
	}
	k := kept(cands)
	rejected := len(cands) - len(k)
	t.Logf("flagship fp32 nchw: %d candidates, %d kept, %d rejected", len(cands), len(k), rejected)
	if len(k) == 0 {
		t.Fatal("no candidate kept")
	}
	if rejected == 0 {
		t.Fatal("no candidate rejected: the static filter does nothing")
	}
	checkCandidates(t, p, cands, lim)

	again, err := Enumerate(p, lim)
	if err != nil {
		t.Fatalf("second Enumerate: %v", err)
	}
	if len(again) != len(cands) {
		t.Fatalf("second Enumerate gave %d candidates, first %d", len(again), len(cands))
	}
	for i := range cands {
		if cands[i].ID() != again[i].ID() || cands[i].Rejected != again[i].Rejected {
			t.Fatalf("Enumerate is not deterministic at %d: %s (%q) then %s (%q)",
				i, cands[i].ID(), cands[i].Rejected, again[i].ID(), again[i].Rejected)
		}
	}
}

// TestEnumerateServed runs the same checks on every (precision, layout)
// combination some family serves.
func TestEnumerateServed(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lim := DefaultLimits(90)
	for _, s := range servedFlagship(t, lim) {
		t.Run(string(s.prob.Precision)+"_"+string(s.prob.Layout), func(t *testing.T) {
			if len(kept(s.cands)) == 0 {
				t.Fatal("Enumerate serves the problem but keeps no candidate")
			}
			checkCandidates(t, s.prob, s.cands, lim)
		})
	}
}

// checkCandidates checks every candidate's static verdict and renders every
// kept one to check its launch geometry against lim.
func checkCandidates(t *testing.T, p problem.Problem, cands []Candidate, lim Limits) {
	t.Helper()
	families := map[string]bool{}
	for _, f := range Families() {
		families[f.Name()] = true
	}
	ids := map[string]bool{}
	names := map[string]string{}
	for _, c := range cands {
		id := c.ID()
		if ids[id] {
			t.Errorf("duplicate candidate ID %s", id)
		}
		ids[id] = true
		if !families[c.Family] {
			t.Errorf("%s: unknown family %q", id, c.Family)
		}
		if !strings.HasPrefix(id, c.Family+"/") || len(c.Config) == 0 {
			t.Errorf("ID %q: want family/knobs", id)
		}
		if c.Rejected != "" {
			if !reasonClass.MatchString(c.Rejected) {
				t.Errorf("%s: rejection reason %q is not of the form \"class: detail\"", id, c.Rejected)
			}
			continue
		}
		k, err := RenderCandidate(p, c)
		if err != nil {
			t.Errorf("%s: render: %v", id, err)
			continue
		}
		threads := k.Block[0] * k.Block[1] * k.Block[2]
		switch {
		case threads <= 0 || threads%32 != 0:
			t.Errorf("%s: block %v has %d threads, not a positive multiple of 32", id, k.Block, threads)
		case threads > 1024 || threads > lim.MaxThreadsPerBlock:
			t.Errorf("%s: block %v has %d threads > %d", id, k.Block, threads, min(1024, lim.MaxThreadsPerBlock))
		}
		if k.SharedBytes < 0 || k.SharedBytes > lim.MaxSharedPerBlock {
			t.Errorf("%s: %d B of shared memory, limit %d", id, k.SharedBytes, lim.MaxSharedPerBlock)
		}
		if k.Grid[0] <= 0 || k.Grid[1] <= 0 || k.Grid[2] <= 0 {
			t.Errorf("%s: grid %v has a dimension that is not positive", id, k.Grid)
		}
		checkCoverage(t, id, p.Shape, k)
		if k.Family != c.Family || k.Config.String() != c.Config.String() {
			t.Errorf("%s: rendered kernel says family %q config %s", id, k.Family, k.Config)
		}
		if !cIdent.MatchString(k.Name) {
			t.Errorf("%s: kernel name %q is not a C identifier", id, k.Name)
		}
		if !strings.Contains(k.Source, k.Name+"(") || !strings.Contains(k.Source, `extern "C" __global__`) {
			t.Errorf("%s: source does not define extern \"C\" __global__ %s", id, k.Name)
		}
		if other, dup := names[k.Name]; dup {
			t.Errorf("%s and %s render the same kernel name %s", other, id, k.Name)
		}
		names[k.Name] = id
	}
}

// checkSpace checks family f's space for p under lim, as the property
// tests do: at least one candidate is kept after the soft rules (as
// Enumerate admits them), every rejection reads "class: detail", and every
// kept candidate renders. It returns the space's size, the kept candidates
// and their kernels.
func checkSpace(t *testing.T, f Family, p problem.Problem, lim Limits) (int, []Candidate, []Kernel) {
	t.Helper()
	space := f.Space(p, lim)
	keep := kept(family.AdmitSoft(f.Space(p, lim)))
	if len(keep) == 0 {
		t.Fatalf("%s %s: %d candidates, none kept", f.Name(), p, len(space))
	}
	for _, c := range space {
		if c.Rejected != "" && !reasonClass.MatchString(c.Rejected) {
			t.Errorf("%s: rejection %q is not \"class: detail\"", c.ID(), c.Rejected)
		}
	}
	ks := make([]Kernel, len(keep))
	for i, c := range keep {
		k, err := RenderCandidate(p, c)
		if err != nil {
			t.Fatalf("%s %s: %v", p, c.ID(), err)
		}
		ks[i] = k
	}
	return len(space), keep, ks
}

// checkCoverage checks, for families with the usual tile knobs, that the
// grid has enough blocks to cover every output element.
func checkCoverage(t *testing.T, id string, s problem.Shape, k Kernel) {
	t.Helper()
	tp, ok1 := k.Config["TileP"]
	tq, ok2 := k.Config["TileQ"]
	tk, ok3 := k.Config["TileK"]
	tpb, ok4 := k.Config["TilesPerBlock"]
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return
	}
	blocks := k.Grid[0] * k.Grid[1] * k.Grid[2]
	if covered, need := blocks*tpb*tp*tq*tk, s.N*s.K*s.P()*s.Q(); covered < need {
		t.Errorf("%s: grid %v × %d tiles of %dx%dx%d covers %d outputs < %d", id, k.Grid, tpb, tp, tq, tk, covered, need)
	}
}

// TestEnumerateLimits checks that every kept candidate respects tighter
// limits than the defaults, and that the sm_80 limits keep fewer.
func TestEnumerateLimits(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	p := flagship(t, problem.FP32, problem.NCHW)
	l90, l80 := DefaultLimits(90), DefaultLimits(80)
	if l90.MaxSharedPerBlock != 232448 || l80.MaxSharedPerBlock != 166912 ||
		l90.MaxThreadsPerBlock != 1024 || l90.RegistersPerSM != 65536 || l90.MaxRegsPerThread != 255 {
		t.Errorf("DefaultLimits: 90 %+v, 80 %+v", l90, l80)
	}
	tests := []struct {
		name string
		lim  Limits
	}{
		{"sm_80", l80},
		{"48 KiB shared", Limits{MaxThreadsPerBlock: 1024, MaxSharedPerBlock: 48 * 1024, RegistersPerSM: 65536, MaxRegsPerThread: 255}},
		{"256 threads", Limits{MaxThreadsPerBlock: 256, MaxSharedPerBlock: 232448, RegistersPerSM: 65536, MaxRegsPerThread: 255}},
	}
	full, err := Enumerate(p, l90)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cands, err := Enumerate(p, tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			if len(cands) != len(full) {
				t.Fatalf("%d candidates, %d with the sm_90 limits: limits should change verdicts, not the space", len(cands), len(full))
			}
			if len(kept(cands)) > len(kept(full)) {
				t.Errorf("tighter limits keep %d > %d", len(kept(cands)), len(kept(full)))
			}
			for _, c := range kept(cands) {
				k, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("%s: %v", c.ID(), err)
				}
				if k.SharedBytes > tt.lim.MaxSharedPerBlock {
					t.Errorf("%s: kept with %d B shared > %d", c.ID(), k.SharedBytes, tt.lim.MaxSharedPerBlock)
				}
				if th := k.Block[0] * k.Block[1] * k.Block[2]; th > tt.lim.MaxThreadsPerBlock {
					t.Errorf("%s: kept with %d threads > %d", c.ID(), th, tt.lim.MaxThreadsPerBlock)
				}
			}
		})
	}
}

// TestEnumerateOldArch: below sm_80 the mma.sync families keep no
// candidate and say why ("arch:"); the FFMA families are unaffected.
func TestEnumerateOldArch(t *testing.T) {
	for _, prec := range []problem.Precision{problem.TF32, problem.FP16} {
		p := flagship(t, prec, problem.NHWC)
		cands, err := Enumerate(p, DefaultLimits(70))
		if err != nil {
			t.Fatal(err)
		}
		mma := 0
		for _, c := range cands {
			if !strings.HasPrefix(c.Family, "mma") {
				continue
			}
			mma++
			if !strings.HasPrefix(c.Rejected, "arch: ") || !strings.Contains(c.Rejected, "sm_70") {
				t.Errorf("%s on sm_70: verdict %q, want an arch: rejection", c.ID(), c.Rejected)
			}
		}
		if mma == 0 {
			t.Errorf("%s: no mma.sync candidates enumerated", prec)
		}
	}
	p := flagship(t, problem.FP32, problem.NCHW)
	old, err := Enumerate(p, DefaultLimits(70))
	if err != nil {
		t.Fatal(err)
	}
	if len(kept(old)) == 0 {
		t.Errorf("fp32 on sm_70: no candidate kept; the FFMA families need no sm_80 feature")
	}
}

// TestEnumerateUnserved: a problem no family serves (generic serves every
// valid one, so an unknown precision) is refused with every family's reason.
func TestEnumerateUnserved(t *testing.T) {
	g2, err := problem.ParseShape("N=2,C=4,H=16,W=16,K=96,R=3,S=3,groups=2")
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		name string
		p    problem.Problem
		want string
	}
	var tests []tc
	for _, layout := range problem.Layouts {
		tests = append(tests, tc{"fp8 " + string(layout),
			problem.Problem{Shape: g2, Precision: "fp8", Layout: layout}, "fp8"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cands, err := Enumerate(tt.p, DefaultLimits(90))
			if err == nil {
				t.Fatalf("Enumerate(%s) = %d candidates, want an error", tt.p, len(cands))
			}
			if cands != nil {
				t.Errorf("Enumerate returned %d candidates with its error", len(cands))
			}
			msg := err.Error()
			if !strings.Contains(msg, "no kernel family serves") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q: want it to say no family serves and to mention %q", msg, tt.want)
			}
			for _, f := range Families() {
				if !strings.Contains(msg, f.Name()+":") {
					t.Errorf("error %q does not give family %s's reason", msg, f.Name())
				}
				if _, err := f.Render(tt.p, Config{}); err == nil {
					t.Errorf("%s.Render of an unserved problem succeeded", f.Name())
				}
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	p := flagship(t, problem.FP32, problem.NCHW)
	if _, err := FamilyByName("nope"); err == nil {
		t.Error(`FamilyByName("nope") succeeded`)
	}
	for _, f := range Families() {
		got, err := FamilyByName(f.Name())
		if err != nil || got.Name() != f.Name() {
			t.Errorf("FamilyByName(%q) = %v, %v", f.Name(), got, err)
		}
	}
	if _, err := RenderCandidate(p, Candidate{Family: "nope", Config: Config{"TileP": 1}}); err == nil {
		t.Error("RenderCandidate of an unknown family succeeded")
	}
	cands, err := Enumerate(p, DefaultLimits(90))
	if err != nil {
		t.Fatal(err)
	}
	c := kept(cands)[0]
	for knob := range c.Config {
		cfg := Config{}
		for k, v := range c.Config {
			if k != knob {
				cfg[k] = v
			}
		}
		_, err := RenderCandidate(p, Candidate{Family: c.Family, Config: cfg})
		if err == nil || !strings.Contains(err.Error(), knob) {
			t.Errorf("rendering %s without %s: err = %v, want one naming the knob", c.ID(), knob, err)
		}
	}
}

// TestHopperTileChecks checks that both Hopper families refuse tile knobs
// that are not whole m64 sub-tiles and wgmma N values (zero included, which
// would otherwise divide by zero in the geometry) with an error.
func TestHopperTileChecks(t *testing.T) {
	lim := DefaultLimits(90)
	lim.SM90a = true
	for _, f := range []Family{WGMMA{}, WGMMAHalf{}} {
		p := flagship(t, problem.FP16, problem.NHWC)
		cands := kept(f.Space(p, lim))
		if len(cands) == 0 {
			t.Fatalf("%s: no kept candidate for %s", f.Name(), p)
		}
		for _, bad := range []struct {
			knob string
			v    int
		}{{"TileP", 0}, {"TileQ", 0}, {"TileK", 0}, {"TileP", 12}, {"TileK", 36}, {"TileK", 264}} {
			cfg := Config{}
			for k, v := range cands[0].Config {
				cfg[k] = v
			}
			cfg[bad.knob] = bad.v
			if _, err := f.Render(p, cfg); err == nil || !strings.Contains(err.Error(), "multiple of 8") {
				t.Errorf("%s with %s=%d: err = %v, want the tile check's", f.Name(), bad.knob, bad.v, err)
			}
		}
	}
}

// TestRegisterAChecks checks that wgmma refuses RegisterA where the
// template does not implement it (other precisions, Overlap) and AGroup
// values it cannot hold, and that the space offers it for 3xtf32 only.
func TestRegisterAChecks(t *testing.T) {
	lim := DefaultLimits(90)
	lim.SM90a = true
	x3 := flagship(t, problem.TF32x3, problem.NCHW)
	var base Config
	for _, c := range kept(WGMMA{}.Space(x3, lim)) {
		if c.Config["RegisterA"] == 1 {
			base = c.Config
			break
		}
	}
	if base == nil {
		t.Fatal("no RegisterA candidate kept for the flagship's 3xtf32")
	}
	if _, err := (WGMMA{}).Render(x3, base); err != nil {
		t.Fatalf("%s: %v", base, err)
	}
	with := func(kv ...int) Config {
		c := Config{}
		for k, v := range base {
			c[k] = v
		}
		names := []string{"RegisterA", "AGroup", "Overlap", "Producer"}
		for i, v := range kv {
			if v >= 0 {
				c[names[i]] = v
			}
		}
		return c
	}
	for _, tc := range []struct {
		p   problem.Problem
		cfg Config
	}{
		{x3, with(2, -1, -1)}, {x3, with(1, 0, -1)}, {x3, with(1, 9, -1)}, {x3, with(0, 4, -1)}, {x3, with(1, 4, 1)},
		{x3, with(1, 2, 0, 0)},
	} {
		if _, err := (WGMMA{}).Render(tc.p, tc.cfg); err == nil || !strings.Contains(err.Error(), "RegisterA") {
			t.Errorf("%s %s: err = %v, want the RegisterA check's", tc.p.Precision, tc.cfg, err)
		}
	}
	for _, prec := range []problem.Precision{problem.TF32, problem.FP16, problem.BF16} {
		for _, c := range (WGMMA{}).Space(flagship(t, prec, problem.NHWC), lim) {
			if _, ok := c.Config["RegisterA"]; ok {
				t.Fatalf("%s offers %s", prec, c.ID())
			}
		}
	}
	// Render accepts RegisterA for tf32 in both layouts (the search does
	// not offer it), and the packed taps need fewer k steps (46 for the
	// flagship's 363 taps) than the padded ones (50): tf32RegisterA.
	for _, layout := range problem.Layouts {
		tf := flagship(t, problem.TF32, layout)
		desc, ra := tf32RegisterA(t, tf, lim)
		for _, tc := range []struct {
			cfg    Config
			ksteps int
		}{{ra, 46}, {desc, 50}} {
			k, err := (WGMMA{}).Render(tf, tc.cfg)
			if err != nil {
				t.Fatalf("tf32 %s %s: %v", layout, tc.cfg, err)
			}
			if want := fmt.Sprintf("#define KSTEPS %d ", tc.ksteps); !strings.Contains(k.Source, want) {
				t.Errorf("tf32 %s %s: source lacks %q", layout, tc.cfg, want)
			}
		}
	}
}

// tf32RegisterA returns the first kept tf32 candidate of p with a producer
// and without Overlap, and the same with RegisterA = 1, AGroup = 2.
func tf32RegisterA(t *testing.T, p problem.Problem, lim Limits) (desc, ra Config) {
	t.Helper()
	for _, c := range kept(WGMMA{}.Space(p, lim)) {
		if c.Config["Producer"] > 0 && c.Config["Overlap"] == 0 {
			desc, ra = c.Config, Config{"RegisterA": 1, "AGroup": 2}
			for k, v := range desc {
				ra[k] = v
			}
			return desc, ra
		}
	}
	t.Fatalf("%s %s: no kept wgmma candidate with a producer and without Overlap", p.Precision, p.Layout)
	return nil, nil
}

func TestReferenceKernel(t *testing.T) {
	for _, prec := range problem.Precisions {
		for _, layout := range problem.Layouts {
			p := flagship(t, prec, layout)
			k, err := Reference(p)
			if err != nil {
				t.Errorf("Reference(%s): %v", p, err)
				continue
			}
			_, _, _, outputs := p.Shape.Elements()
			if k.Name != ReferenceName || k.Family != "reference" || k.Block != [3]int{256, 1, 1} ||
				k.Grid != [3]int{(outputs + 255) / 256, 1, 1} || k.SharedBytes != 0 {
				t.Errorf("Reference(%s): name %s family %s grid %v block %v shared %d", p, k.Name, k.Family, k.Grid, k.Block, k.SharedBytes)
			}
			if k.Grid[0]*256 < outputs {
				t.Errorf("Reference(%s): %d blocks of 256 do not cover %d outputs", p, k.Grid[0], outputs)
			}
			if !strings.Contains(k.Source, p.Shape.String()) {
				t.Errorf("Reference(%s): source does not name the shape", p)
			}
			nhwc := p.Layout == problem.NHWC
			if strings.Contains(k.Source, "#define NHWC 1") != nhwc {
				t.Errorf("Reference(%s): NHWC define does not match the layout", p)
			}
			if strings.Contains(k.Source, "typedef unsigned short elem_t") != (p.Precision.ElementBytes() == 2) {
				t.Errorf("Reference(%s): element type does not match the precision", p)
			}
		}
	}
}

// goldenKernels are the fixed kernels whose CUDA source is kept in their
// family's testdata (goldenPath).
func goldenKernels(t *testing.T) map[string]Kernel {
	t.Helper()
	p := flagship(t, problem.FP32, problem.NCHW)
	ref, err := Reference(p)
	if err != nil {
		t.Fatalf("Reference: %v", err)
	}
	out := map[string]Kernel{"reference_fp32_nchw": ref}
	for name, cfg := range map[string]Config{
		// All input channels staged at once, the filter kept across 4 tiles.
		"direct_p16_q4_k32_x16_tpb4": {"TileP": 16, "TileQ": 4, "TileK": 32, "PixelsPerThread": 2,
			"ChannelsPerThread": 16, "StageC": 3, "TilesPerBlock": 4},
		// One input channel staged at a time, wide tiles.
		"direct_p8_q16_k48_x8_sc1": {"TileP": 8, "TileQ": 16, "TileK": 48, "PixelsPerThread": 4,
			"ChannelsPerThread": 8, "StageC": 1, "TilesPerBlock": 1},
	} {
		k, err := Direct{}.Render(p, cfg)
		if err != nil {
			t.Fatalf("render %s: %v", name, err)
		}
		out[name] = k
	}
	nhwc, err := Direct{}.Render(flagship(t, problem.FP32, problem.NHWC), Config{"TileP": 4, "TileQ": 32, "TileK": 96,
		"PixelsPerThread": 2, "ChannelsPerThread": 16, "StageC": 3, "TilesPerBlock": 1})
	if err != nil {
		t.Fatalf("render direct nhwc: %v", err)
	}
	out["direct_nhwc_p4_q32_k96_x16_sc3"] = nhwc
	for name, c := range map[string]struct {
		f   Family
		p   problem.Problem
		cfg Config
	}{
		"mma_tf32_nchw_p8_q16_k96_w32x32": {MMA{}, flagship(t, problem.TF32, problem.NCHW),
			Config{"TileP": 8, "TileQ": 16, "TileK": 96, "WarpM": 32, "WarpN": 32, "TilesPerBlock": 8, "Stages": 1}},
		"mma_3xtf32_nhwc_p8_q32_k96_w32x48_s2": {MMA{}, flagship(t, problem.TF32x3, problem.NHWC),
			Config{"TileP": 8, "TileQ": 32, "TileK": 96, "WarpM": 32, "WarpN": 48, "TilesPerBlock": 8, "Stages": 2}},
		"mmahalf_fp16_nhwc_p8_q28_k96_w32x48": {MMAHalf{}, flagship(t, problem.FP16, problem.NHWC),
			Config{"TileP": 8, "TileQ": 28, "TileK": 96, "WarpM": 32, "WarpN": 48, "TilesPerBlock": 8}},
		"wgmma_tf32_nchw_p8_q8_k96_wg2_s2": {WGMMA{}, flagship(t, problem.TF32, problem.NCHW),
			Config{"TileP": 8, "TileQ": 8, "TileK": 96, "Warpgroups": 2, "TilesPerWarpgroup": 48, "Stages": 2, "Producer": 0, "RoundInput": 1, "Overlap": 0, "PredicatedStores": 0, "VecStage": 0}},
		"wgmma_3xtf32_nchw_p8_q8_k48_wg2_prod2": {WGMMA{}, flagship(t, problem.TF32x3, problem.NCHW),
			Config{"TileP": 8, "TileQ": 8, "TileK": 48, "Warpgroups": 2, "TilesPerWarpgroup": 48, "Stages": 2, "Producer": 1, "RoundInput": 1, "Overlap": 0, "PredicatedStores": 1, "VecStage": 0}},
		"wgmma_3xtf32_nchw_p8_q8_k48_wg2_prod1_rega3": {WGMMA{}, flagship(t, problem.TF32x3, problem.NCHW),
			Config{"TileP": 8, "TileQ": 8, "TileK": 48, "Warpgroups": 2, "TilesPerWarpgroup": 96, "Stages": 2, "Producer": 1, "RoundInput": 1, "Overlap": 0, "PredicatedStores": 0, "VecStage": 1, "RegisterA": 1, "AGroup": 3}},
		"wgmma_tf32_nhwc_p8_q8_k96_wg2_prod4": {WGMMA{}, flagship(t, problem.TF32, problem.NHWC),
			Config{"TileP": 8, "TileQ": 8, "TileK": 96, "Warpgroups": 2, "TilesPerWarpgroup": 48, "Stages": 2, "Producer": 1, "RoundInput": 0, "Overlap": 1, "PredicatedStores": 1, "VecStage": 0}},
		"wgmma_tf32_nhwc_p8_q8_k96_wg2_prod4_vec": {WGMMA{}, flagship(t, problem.TF32, problem.NHWC),
			Config{"TileP": 8, "TileQ": 8, "TileK": 96, "Warpgroups": 2, "TilesPerWarpgroup": 48, "Stages": 4, "Producer": 1, "RoundInput": 1, "Overlap": 1, "PredicatedStores": 1, "VecStage": 1}},
		"wgmma_fp16_nhwc_p8_q8_k96_wg2_prod4": {WGMMA{}, flagship(t, problem.FP16, problem.NHWC),
			Config{"TileP": 8, "TileQ": 8, "TileK": 96, "Warpgroups": 2, "TilesPerWarpgroup": 48, "Stages": 4, "Producer": 1, "RoundInput": 0, "Overlap": 1, "PredicatedStores": 1, "VecStage": 1}},
		"wgmmahalf_fp16_nhwc_p8_q8_k96_wg4_prod2": {WGMMAHalf{}, flagship(t, problem.FP16, problem.NHWC),
			Config{"TileP": 8, "TileQ": 8, "TileK": 96, "Warpgroups": 4, "TilesPerWarpgroup": 24, "Stages": 4, "Producer": 2, "Overlap": 0, "PredicatedStores": 0}},
		// The flagship's fp32 winner at the time the family landed.
		"winograd_fp32_nchw_t32_k48_x8x8_c12": {Winograd{}, flagship(t, problem.FP32, problem.NCHW),
			Config{"TileT": 32, "TileK": 48, "ThreadT": 8, "ThreadK": 8, "Chunk": 12, "StepsPerBlock": 96}},
		"winograd_fp32_nhwc_t64_k32_x4x8_c8": {Winograd{}, flagship(t, problem.FP32, problem.NHWC),
			Config{"TileT": 64, "TileK": 32, "ThreadT": 8, "ThreadK": 4, "Chunk": 8, "StepsPerBlock": 72}},
		// The flagship's tf32 NCHW configuration measured fastest when the
		// family landed (docs/performance.md).
		"wgmmarow_tf32_nchw_k96_wg3_lag2": {WGMMARow{}, flagship(t, problem.TF32, problem.NCHW),
			Config{"TileK": 96, "Warpgroups": 3, "Lag": 2, "RowsPerBlock": 107, "Slots": 7}},
		"wgmmahalf_bf16_nchw_p16_q16_k48_wg2_prod1": {WGMMAHalf{}, flagship(t, problem.BF16, problem.NCHW),
			Config{"TileP": 16, "TileQ": 16, "TileK": 48, "Warpgroups": 2, "TilesPerWarpgroup": 16, "Stages": 2, "Producer": 1, "Overlap": 1, "PredicatedStores": 1}},
	} {
		k, err := c.f.Render(c.p, c.cfg)
		if err != nil {
			t.Fatalf("render %s: %v", name, err)
		}
		out[name] = k
	}
	return out
}

// goldenPath is where the golden source name of a family's kernel is kept:
// in the family's folder (the checking kernels' in this package's).
func goldenPath(family, name string) string {
	if family == "reference" {
		return filepath.Join("testdata", name+".cu.golden")
	}
	return filepath.Join(family, "testdata", name+".cu.golden")
}

func TestGoldenSource(t *testing.T) {
	kernels := goldenKernels(t)
	names := make([]string, 0, len(kernels))
	for name := range kernels {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			checkGolden(t, "TestGoldenSource", goldenPath(kernels[name].Family, name), kernels[name].Source)
		})
	}
}

// checkGolden compares src with the golden file at path, or rewrites the
// file under -update; test names the test that -update must run.
func checkGolden(t *testing.T, test, path, src string) {
	t.Helper()
	got := []byte(src)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./kernels -run %s -update to create it)", err, test)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the rendered source (go test ./kernels -run %s -update rewrites it): %s",
			path, test, firstDiff(got, want))
	}
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if i >= len(g) || i >= len(w) || gl != wl {
			return fmt.Sprintf("line %d:\n  got:  %q\n  want: %q", i+1, gl, wl)
		}
	}
	return "identical lines, different bytes"
}

// leadingComment is the block of // lines a source starts with.
func leadingComment(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "//") {
			break
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

var levelWords = []*regexp.Regexp{
	regexp.MustCompile(`\bBlock\b`), regexp.MustCompile(`\bWarp\b`), regexp.MustCompile(`\bThread\b`),
}

func TestLeadingComment(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	if c := leadingComment("// a\n// b\ncode\n// c\n"); c != "// a\n// b\n" {
		t.Fatalf("leadingComment helper is broken: %q", c)
	}
	check := func(id, src string) {
		t.Helper()
		c := leadingComment(src)
		if c == "" {
			t.Errorf("%s: source does not start with a comment", id)
			return
		}
		for _, re := range levelWords {
			if !re.MatchString(c) {
				t.Errorf("%s: the leading comment does not say what a %s computes", id, re.String()[2:len(re.String())-2])
			}
		}
	}
	for _, prec := range problem.Precisions {
		for _, layout := range problem.Layouts {
			k, err := Reference(flagship(t, prec, layout))
			if err != nil {
				t.Fatal(err)
			}
			check("reference "+string(prec)+" "+string(layout), k.Source)
		}
	}
	for _, s := range servedFlagship(t, DefaultLimits(90)) {
		for _, c := range kept(s.cands) {
			k, err := RenderCandidate(s.prob, c)
			if err != nil {
				t.Errorf("%s: %v", c.ID(), err)
				continue
			}
			check(string(s.prob.Precision)+" "+string(s.prob.Layout)+" "+c.ID(), k.Source)
		}
	}
}

// checkArchGate checks that an sm_90a family rejects every configuration
// of p with an "arch:" reason under the sm_90 defaults without SM90a, and
// returns those limits with SM90a set, for the rest of the test.
func checkArchGate(t *testing.T, f Family, p problem.Problem) Limits {
	t.Helper()
	lim := DefaultLimits(90)
	cands := f.Space(p, lim)
	if len(cands) == 0 {
		t.Fatalf("%s: empty space for %s", f.Name(), p)
	}
	for _, c := range cands {
		if !strings.HasPrefix(c.Rejected, "arch:") {
			t.Fatalf("%s without SM90a: rejected %q, want an arch: reason", c.ID(), c.Rejected)
		}
	}
	lim.SM90a = true
	return lim
}

// renderTF32WGMMA renders a kept candidate of a TF32 wgmma family and checks
// that it is sm_90a code issuing its m64nNk8 TF32 wgmma (N = TileK).
func renderTF32WGMMA(t *testing.T, p problem.Problem, c Candidate) Kernel {
	t.Helper()
	kern, err := RenderCandidate(p, c)
	if err != nil {
		t.Fatalf("%s: %v", c.ID(), err)
	}
	want := fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32", c.Config["TileK"])
	if kern.ArchSuffix != "a" || !strings.Contains(kern.Source, want) {
		t.Fatalf("%s: ArchSuffix %q, source has %q: %v", c.ID(), kern.ArchSuffix, want, strings.Contains(kern.Source, want))
	}
	return kern
}

// TestWGMMAGate checks that the sm_90a family is offered only with
// Limits.SM90a, that it serves only what its A-operand trick allows, and
// that every kept configuration renders an sm_90a kernel issuing wgmma.
func TestWGMMAGate(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	p := flagship(t, problem.TF32, problem.NCHW)
	on := checkArchGate(t, WGMMA{}, p)
	for _, pl := range []struct {
		prec   problem.Precision
		layout problem.Layout
	}{{problem.TF32, problem.NCHW}, {problem.TF32, problem.NHWC}, {problem.TF32x3, problem.NCHW}, {problem.TF32x3, problem.NHWC},
		{problem.FP16, problem.NHWC}, {problem.BF16, problem.NCHW}} {
		layout := pl.layout
		p := flagship(t, pl.prec, layout)
		cands := (WGMMA{}).Space(p, on)
		k := kept(cands)
		if len(k) == 0 {
			t.Fatalf("%s %s: no wgmma candidate kept with SM90a", pl.prec, layout)
		}
		checkCandidates(t, p, cands, on)
		vec := 0
		for _, c := range k {
			vec += c.Config["VecStage"]
			if half := pl.prec == problem.FP16 || pl.prec == problem.BF16; half && (c.Config["VecStage"] != 1 || c.Config["RoundInput"] != 0) {
				t.Fatalf("%s: %s kept without register staging or with rounding", c.ID(), pl.prec)
			}
			kern := renderTF32WGMMA(t, p, c)
			if want := 128 * (c.Config["Warpgroups"] + c.Config["Producer"]); kern.Block[0] != want {
				t.Fatalf("%s: block %v, want %d threads", c.ID(), kern.Block, want)
			}
		}
		if vec == 0 {
			t.Errorf("%s %s: no register-staging (VecStage=1) candidate kept", pl.prec, layout)
		}
	}
	// A small odd shape where only soft rules' exceptions keep candidates:
	// whatever Enumerate keeps must render (a hard rule must never be lifted).
	odd, err := problem.ParseShape("N=3,C=2,H=45,W=51,K=24,R=5,S=6,stride=4,pad_h=2,pad_w=1,bias=false")
	if err != nil {
		t.Fatal(err)
	}
	for _, prec := range []problem.Precision{problem.TF32, problem.TF32x3} {
		q := problem.Problem{Shape: odd, Precision: prec, Layout: problem.NCHW}
		cands, err := Enumerate(q, on)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range kept(cands) {
			if c.Family != "wgmma" {
				continue
			}
			n++
			if _, err := RenderCandidate(q, c); err != nil {
				t.Errorf("%s: kept but does not render: %v", c.ID(), err)
			}
		}
		if n == 0 {
			t.Errorf("%s: no wgmma candidate kept", q)
		}
	}
	// Two accumulator sets (96 registers) with 768 threads (80 registers
	// each) cannot compile: ptxas needs about 26 besides the accumulators.
	crowded := 0
	for _, c := range (WGMMA{}).Space(flagship(t, problem.FP16, problem.NHWC), on) {
		if c.Config["Overlap"] == 1 && c.Config["Warpgroups"] == 4 && c.Config["Producer"] == 2 && c.Config["TileK"] == 96 {
			crowded++
			if !strings.HasPrefix(c.Rejected, "registers:") {
				t.Errorf("%s: rejected %q, want a registers: reason", c.ID(), c.Rejected)
			}
		}
	}
	if crowded == 0 {
		t.Error("no Overlap=1, Warpgroups=4, Producer=2 configuration in the space")
	}
	// 2-byte input needs aligned register staging: an NHWC image row of an
	// odd number of halves leaves none, and every candidate says why.
	oddRow := flagship(t, problem.FP16, problem.NHWC)
	oddRow.Shape.W = 223
	for _, c := range (WGMMA{}).Space(oddRow, on) {
		if c.Config["VecStage"] == 1 && !strings.HasPrefix(c.Rejected, "align:") {
			t.Fatalf("%s with W=223: rejected %q, want an align: reason", c.ID(), c.Rejected)
		}
		if c.Config["VecStage"] == 0 && !strings.HasPrefix(c.Rejected, "staging:") {
			t.Fatalf("%s: rejected %q, want a staging: reason", c.ID(), c.Rejected)
		}
	}
	for _, bad := range []struct {
		prec problem.Precision
		mut  func(*problem.Shape)
	}{
		{problem.FP32, func(*problem.Shape) {}},
		{problem.TF32, func(s *problem.Shape) { s.StrideW = 2 }},
		{problem.TF32, func(s *problem.Shape) { s.DilationW = 2 }},
		{problem.TF32, func(s *problem.Shape) { s.K = 100 }},
		{problem.FP16, func(s *problem.Shape) { s.StrideW = 2 }},
	} {
		q := flagship(t, bad.prec, problem.NCHW)
		bad.mut(&q.Shape)
		if err := (WGMMA{}).Serves(q); err == nil {
			t.Errorf("wgmma serves %s", q)
		}
	}
}

// TestEnumerateExtremeShapes: the largest sizes a shape allows (each at
// most 2^29 − 1: huge strides and channel counts, whose products overflow
// 64 bits) enumerate at once in every precision, layout and op, and each
// kept candidate renders; where a family's arithmetic would overflow it
// declines the shape instead of keeping a wrapped configuration.
func TestEnumerateExtremeShapes(t *testing.T) {
	t.Parallel()
	lim := DefaultLimits(90)
	lim.SM90a = true
	start := time.Now()
	for _, spec := range []string{
		"N=1,C=1,H=1,W=1,K=1,R=1,S=1,stride=536870911",
		"N=1,C=268435456,H=1,W=1,K=4,R=1,S=1,stride=262144",
		"N=1,C=536870911,H=1,W=1,K=4,R=1,S=1",
		"N=1,C=64,H=4096,W=4096,K=64,R=1,S=1,stride=1024",
		"N=1,C=3,H=7,W=536870911,K=8,R=1,S=3,stride_w=536870911",
	} {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		for _, prec := range problem.Precisions {
			for _, layout := range problem.Layouts {
				for _, op := range []problem.Op{problem.OpFprop, problem.OpDgrad, problem.OpWgrad} {
					p := problem.Problem{Shape: s, Precision: prec, Layout: layout, Op: op}
					cands, err := Enumerate(p, lim)
					if err != nil {
						continue // declined with a reason: what matters here is that it answers
					}
					for i, c := range kept(cands) {
						if i == 3 {
							break
						}
						if _, err := RenderCandidate(p, c); err != nil {
							t.Errorf("%s: kept %s does not render: %v", p, c.ID(), err)
						}
					}
				}
			}
		}
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("enumerating the extreme shapes took %v", d)
	}
}
