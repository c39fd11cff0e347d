package kernels

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/kernels/depthwise"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// depthwiseOddShapes are depthwise shapes beyond MobileNetV2's: stride 2 on
// odd sizes, dilation 2, R ≠ S, channel multipliers 2 and 3, C = 1, odd C,
// N = 1, asymmetric stride/pad/dilation, no bias, a 7x7 filter, a single
// output pixel.
var depthwiseOddShapes = []string{
	"N=3,C=32,H=15,W=13,K=32,R=3,S=3,stride=2,pad=1,groups=32,bias=false",
	"N=2,C=24,H=20,W=21,K=24,R=3,S=3,pad=2,dilation=2,groups=24",
	"N=2,C=10,H=17,W=19,K=10,R=3,S=5,pad_h=1,pad_w=2,groups=10",
	"N=2,C=16,H=14,W=14,K=32,R=3,S=3,pad=1,groups=16",
	"N=1,C=8,H=9,W=11,K=24,R=5,S=5,stride=2,pad=2,groups=8",
	"N=4,C=1,H=23,W=17,K=1,R=3,S=3,pad=1,groups=1",
	"N=2,C=1,H=12,W=12,K=2,R=3,S=3,groups=1,bias=false",
	"N=2,C=13,H=11,W=9,K=13,R=3,S=3,pad=1,groups=13",
	"N=1,C=7,H=31,W=29,K=21,R=3,S=2,stride_h=2,stride_w=3,pad_h=2,pad_w=1,dilation_h=1,dilation_w=2,groups=7",
	"N=2,C=96,H=28,W=28,K=96,R=7,S=7,pad=3,groups=96",
	"N=1,C=5,H=3,W=3,K=5,R=3,S=3,groups=5",
}

// mobileNetDepthwise reads the depthwise (groups = C) shapes of the
// MobileNetV2 suite at N=32.
func mobileNetDepthwise(t *testing.T) []problem.Shape {
	t.Helper()
	f, err := os.Open("../bench/suites/mobilenetv2.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []problem.Shape
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		_, spec, ok := strings.Cut(line, "|")
		if !ok {
			t.Fatalf("%q is not 'name | shape'", line)
		}
		s, err := problem.ParseShape("N=32," + strings.TrimSpace(spec))
		if err != nil {
			t.Fatal(err)
		}
		if s.Groups == s.C && s.C > 1 {
			out = append(out, s)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 8 {
		t.Fatalf("only %d depthwise shapes in the MobileNetV2 suite", len(out))
	}
	return out
}

// depthwiseKept is depthwise's kept candidates for p on sm_90 after the
// soft rules (as Enumerate admits them).
func depthwiseKept(p problem.Problem) []Candidate {
	return kept(family.AdmitSoft(Depthwise{}.Space(p, DefaultLimits(90))))
}

// depthwiseShapes are the MobileNetV2 depthwise shapes and the odd ones.
func depthwiseShapes(t *testing.T) []problem.Shape {
	return append(mobileNetDepthwise(t), parseShapes(t, depthwiseOddShapes)...)
}

// TestDepthwiseServes: every depthwise shape has kept depthwise candidates
// in every precision and layout on sm_80 and sm_90 (after the soft rules,
// as Enumerate admits them, and 24 at most), which render with the launch
// their geometry implies, and Enumerate offers them.
func TestDepthwiseServes(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	for _, s := range depthwiseShapes(t) {
		for _, arch := range []int{80, 90} {
			lim := DefaultLimits(arch)
			for _, prec := range problem.Precisions {
				for _, lay := range problem.Layouts {
					p := problem.Problem{Shape: s, Precision: prec, Layout: lay}
					if err := (Depthwise{}).Serves(p); err != nil {
						t.Errorf("%s: %v", p, err)
						continue
					}
					cands := Depthwise{}.Space(p, lim)
					keep := kept(family.AdmitSoft(cands))
					if len(keep) == 0 || len(keep) > 24 {
						t.Errorf("%s sm_%d: %d kept of %d, want 1 to 24", p, arch, len(keep), len(cands))
						continue
					}
					if arch == 90 && lay == problem.NHWC && prec == problem.FP16 {
						t.Logf("%s: %d kept of %d", p, len(keep), len(cands))
					}
					for _, c := range keep {
						k, err := RenderCandidate(p, c)
						if err != nil {
							t.Fatalf("%s %s: %v", p, c.ID(), err)
						}
						if k.Block[0]%32 != 0 || k.Block[0] > 1024 || k.Grid[0] < 1 || k.SharedBytes > lim.MaxSharedPerBlock {
							t.Errorf("%s %s: launch %+v", p, c.ID(), k.Launch)
						}
						if !strings.Contains(k.Source, k.Name+"(") {
							t.Errorf("%s %s: source lacks its kernel %s", p, c.ID(), k.Name)
						}
					}
					all, err := Enumerate(p, lim)
					if err != nil {
						t.Fatalf("%s: Enumerate: %v", p, err)
					}
					n := 0
					for _, c := range kept(all) {
						if c.Family == "depthwise" {
							n++
						}
					}
					if n != len(keep) {
						t.Errorf("%s sm_%d: Enumerate keeps %d depthwise candidates, the family %d", p, arch, n, len(keep))
					}
				}
			}
		}
	}
}

// TestDepthwiseDeclines: shapes other than groups = C with K = m·C, and
// invalid problems, are declined with a typed reason naming what is wrong;
// Render refuses them too.
func TestDepthwiseDeclines(t *testing.T) {
	for _, tc := range []struct {
		spec, rule, want string
	}{
		{"N=2,C=16,H=8,W=8,K=16,R=3,S=3,pad=1", "shape", "groups=1"},
		{"N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1,groups=32", "shape", "groups=32"},
		{"N=2,C=4,H=16,W=16,K=96,R=3,S=3,groups=2", "shape", "groups=2"},
		{"N=2,C=3,H=8,W=8,K=1,R=3,S=3,groups=1", "shape", "K=1"},
	} {
		s := parseShapes(t, []string{tc.spec})[0]
		for _, lay := range problem.Layouts {
			p := problem.Problem{Shape: s, Precision: problem.FP32, Layout: lay}
			err := Depthwise{}.Serves(p)
			var d *depthwise.Declined
			if !errors.As(err, &d) || d.Reason.Rule != tc.rule || !strings.Contains(err.Error(), tc.want) || d.Reason.Soft {
				t.Errorf("%s: Serves = %v (%#v), want a hard %q refusal naming %q", p, err, d, tc.rule, tc.want)
			}
			if _, err := (Depthwise{}).Render(p, Config{"TileH": 4, "TileW": 32, "OutputsPerThread": 4}); err == nil {
				t.Errorf("%s: Render succeeded for a problem the family declines", p)
			}
		}
	}
	// Invalid problems: an unknown precision, an unknown layout.
	s := parseShapes(t, depthwiseOddShapes[:1])[0]
	for _, p := range []problem.Problem{
		{Shape: s, Precision: "fp8", Layout: problem.NCHW},
		{Shape: s, Precision: problem.FP32, Layout: "chwn"},
	} {
		var d *depthwise.Declined
		if err := (Depthwise{}).Serves(p); !errors.As(err, &d) || d.Reason.Rule != "problem" {
			t.Errorf("%s: Serves = %v, want a %q refusal", p, err, "problem")
		}
	}
	// 2^31-element tensors: generic's 64-bit path.
	wide := parseShapes(t, []string{"N=1024,C=512,H=64,W=64,K=512,R=3,S=3,pad=1,groups=512"})[0]
	if !wide.Needs64BitIndex() {
		t.Fatal("the wide shape does not need 64-bit indices")
	}
	var d *depthwise.Declined
	p := problem.Problem{Shape: wide, Precision: problem.FP16, Layout: problem.NHWC}
	if err := (Depthwise{}).Serves(p); !errors.As(err, &d) || d.Reason.Rule != "index" || !strings.Contains(err.Error(), "generic serves") {
		t.Errorf("%s: Serves = %v, want an %q refusal naming generic", p, err, "index")
	}
}

// TestDepthwiseRenderRejectsBadConfigs: configurations the template cannot
// run, or that lack or mix up a layout's knobs, fail to render.
func TestDepthwiseRenderRejectsBadConfigs(t *testing.T) {
	s := parseShapes(t, depthwiseOddShapes[:1])[0]
	nchw := problem.Problem{Shape: s, Precision: problem.FP32, Layout: problem.NCHW}
	nhwc := problem.Problem{Shape: s, Precision: problem.FP16, Layout: problem.NHWC}
	for _, tc := range []struct {
		p   problem.Problem
		cfg Config
	}{
		{nchw, Config{"TileH": 4, "TileW": 32}},                                               // no OutputsPerThread
		{nchw, Config{"TileH": 4, "TileW": 30, "OutputsPerThread": 4}},                        // 4 does not divide 30
		{nchw, Config{"TileH": 3, "TileW": 32, "OutputsPerThread": 4}},                        // 24 threads
		{nchw, Config{"TileH": 4, "TileW": 32, "OutputsPerThread": 1, "VectorWidth": 2}},      // an NHWC knob
		{nhwc, Config{"TileH": 1, "TileW": 8, "OutputsPerThread": 2, "ChannelsPerBlock": 32}}, // no VectorWidth
		{nhwc, Config{"TileH": 1, "TileW": 8, "OutputsPerThread": 2, "ChannelsPerBlock": 32, "VectorWidth": 3}},
		{nhwc, Config{"TileH": 1, "TileW": 8, "OutputsPerThread": 2, "ChannelsPerBlock": 30, "VectorWidth": 4}},
		{nhwc, Config{"TileH": 1, "TileW": 8, "OutputsPerThread": 2, "ChannelsPerBlock": 512, "VectorWidth": 4, "Tile": 1}},
		{nhwc, Config{"TileH": 64, "TileW": 32, "OutputsPerThread": 1, "ChannelsPerBlock": 32, "VectorWidth": 1}},                                                                   // 65536 threads
		{problem.Problem{Shape: s, Precision: problem.FP32, Layout: problem.NHWC}, Config{"TileH": 1, "TileW": 8, "OutputsPerThread": 1, "ChannelsPerBlock": 64, "VectorWidth": 8}}, // 8 fp32 channels
	} {
		if k, err := (Depthwise{}).Render(tc.p, tc.cfg); err == nil {
			t.Errorf("%s %s: rendered %s", tc.p, tc.cfg, k.Name)
		}
	}
	// VectorWidth must divide K: K=13 takes element loads only.
	odd := problem.Problem{Shape: parseShapes(t, []string{"N=2,C=13,H=11,W=9,K=13,R=3,S=3,pad=1,groups=13"})[0], Precision: problem.FP16, Layout: problem.NHWC}
	if _, err := (Depthwise{}).Render(odd, Config{"TileH": 1, "TileW": 8, "OutputsPerThread": 2, "ChannelsPerBlock": 16, "VectorWidth": 2}); err == nil {
		t.Errorf("%s: VectorWidth=2 rendered for K=13", odd)
	}
	for _, c := range (Depthwise{}).Space(odd, DefaultLimits(90)) {
		if c.Config["VectorWidth"] != 1 {
			t.Errorf("%s: %s offered for K=13", odd, c.ID())
		}
	}
}

// TestDepthwiseVectorised: where K allows, NHWC candidates load and store 4
// (fp32) or 4 and 8 (fp16: 8- and 16-byte) channels per access, and NCHW ones store 2 or 4
// adjacent outputs at once where Q allows; a channel multiplier > 1 loads
// input elements one at a time (lanes read different channels).
func TestDepthwiseVectorised(t *testing.T) {
	dw := mobileNetDepthwise(t)[2] // C=144, 56x56
	for _, prec := range []problem.Precision{problem.FP32, problem.FP16} {
		p := problem.Problem{Shape: dw, Precision: prec, Layout: problem.NHWC}
		widths := map[int]bool{}
		for _, c := range depthwiseKept(p) {
			v := c.Config["VectorWidth"]
			widths[v] = true
			if v != 4 && (v != 8 || prec != problem.FP16) {
				t.Errorf("%s: %s: VectorWidth %d, want 4 (or 8 for fp16)", p, c.ID(), v)
			}
			k, err := RenderCandidate(p, c)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(k.Source, "#define VEC_LOAD 1") || !strings.Contains(k.Source, "#define VEC_STORE 1") {
				t.Errorf("%s %s: not vectorised", p, c.ID())
			}
		}
		if prec == problem.FP16 && !widths[8] {
			t.Errorf("%s: no candidate with 16-byte accesses", p)
		}
	}
	mult := parseShapes(t, []string{"N=2,C=16,H=14,W=14,K=32,R=3,S=3,pad=1,groups=16"})[0]
	p := problem.Problem{Shape: mult, Precision: problem.FP32, Layout: problem.NHWC}
	k, err := RenderCandidate(p, depthwiseKept(p)[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(k.Source, "#define VEC_LOAD 0") || !strings.Contains(k.Source, "#define VEC_STORE 1") {
		t.Errorf("%s: want element loads and vector stores", p)
	}
	p = problem.Problem{Shape: dw, Precision: problem.FP32, Layout: problem.NCHW}
	vec := 0
	for _, c := range depthwiseKept(p) {
		k, err := RenderCandidate(p, c)
		if err != nil {
			t.Fatal(err)
		}
		if want := c.Config["OutputsPerThread"] > 1; strings.Contains(k.Source, "#define VEC_STORE 1") != want {
			t.Errorf("%s %s: VEC_STORE is not %v", p, c.ID(), want)
		}
		if c.Config["OutputsPerThread"] > 1 {
			vec++
		}
	}
	if vec == 0 {
		t.Errorf("%s: no candidate with vector stores", p)
	}
}

// goldenDepthwise are the depthwise kernels whose sources are kept in
// testdata: fp16 NHWC with a channel multiplier and an odd channel count,
// fp32 NCHW with stride 2 on odd sizes.
func goldenDepthwise(t *testing.T) map[string]Kernel {
	t.Helper()
	out := map[string]Kernel{}
	for _, g := range []struct {
		name, spec string
		prec       problem.Precision
		lay        problem.Layout
		cfg        Config
	}{
		{"depthwise_fp16_nhwc_c144_56_h1_w16_o2_c64_v4", "N=32,C=144,H=56,W=56,K=144,R=3,S=3,pad=1,groups=144", problem.FP16, problem.NHWC,
			Config{"TileH": 1, "TileW": 16, "OutputsPerThread": 2, "ChannelsPerBlock": 64, "VectorWidth": 4}},
		{"depthwise_bf16_nhwc_mult3_h2_w8_o4_c8_v1", "N=1,C=7,H=31,W=29,K=21,R=3,S=2,stride_h=2,stride_w=3,pad_h=2,pad_w=1,dilation_w=2,groups=7", problem.BF16, problem.NHWC,
			Config{"TileH": 4, "TileW": 8, "OutputsPerThread": 4, "ChannelsPerBlock": 16, "VectorWidth": 1}},
		{"depthwise_fp16_nhwc_c144_56_h1_w16_o1_c64_v8", "N=32,C=144,H=56,W=56,K=144,R=3,S=3,pad=1,groups=144", problem.FP16, problem.NHWC,
			Config{"TileH": 1, "TileW": 16, "OutputsPerThread": 1, "ChannelsPerBlock": 64, "VectorWidth": 8}},
		{"depthwise_fp32_nchw_s2_h8_w32_o4", "N=3,C=32,H=15,W=13,K=32,R=3,S=3,stride=2,pad=1,groups=32,bias=false", problem.FP32, problem.NCHW,
			Config{"TileH": 8, "TileW": 32, "OutputsPerThread": 4}},
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{g.spec})[0], Precision: g.prec, Layout: g.lay}
		k, err := Depthwise{}.Render(p, g.cfg)
		if err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		out[g.name] = k
	}
	return out
}

func TestDepthwiseGoldenSource(t *testing.T) {
	for name, k := range goldenDepthwise(t) {
		checkGolden(t, "TestDepthwiseGoldenSource", goldenPath("depthwise", name), k.Source)
	}
}

// TestDepthwiseCompile NVRTC-compiles, for sm_80 and sm_90 (compileOne's
// checks: CUBIN, PTX target, registers, shared memory), the golden kernels
// and one kept candidate of every precision and layout across the
// depthwise shapes (a different candidate and shape each time, so that the
// knobs and shapes rotate); under the full sweep (CONVGEN_FULL_SWEEP=1)
// every kept candidate of every depthwise shape in every mode.
func TestDepthwiseCompile(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	full := os.Getenv("CONVGEN_FULL_SWEEP") == "1"
	rng := rand.New(rand.NewPCG(19, 3))
	shapes := depthwiseShapes(t)
	var jobs []compileJob
	for name, k := range goldenDepthwise(t) {
		jobs = append(jobs, compileJob{"golden " + name, k})
	}
	for i, prec := range problem.Precisions {
		for j, lay := range problem.Layouts {
			for si, s := range shapes {
				if !full && si != (2*i+j*7)%len(shapes) {
					continue
				}
				p := problem.Problem{Shape: s, Precision: prec, Layout: lay}
				keep := depthwiseKept(p)
				if !full {
					keep = keep[rng.IntN(len(keep)):][:1]
				}
				for _, c := range keep {
					k, err := RenderCandidate(p, c)
					if err != nil {
						t.Fatalf("%s %s: %v", p, c.ID(), err)
					}
					jobs = append(jobs, compileJob{fmt.Sprintf("%s %s", p, c.ID()), k})
				}
			}
		}
	}
	compileForArchs(t, lib, jobs)
}

// TestDepthwiseEpilogue: depthwise applies every epilogue chain at its
// store in both layouts (the chain's parameters on the kernel, convgen_ep
// at each stored value), Enumerate offers it for a problem with a chain,
// and the kernels NVRTC-compile for sm_80 and sm_90.
func TestDepthwiseEpilogue(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	s := parseShapes(t, []string{"N=2,C=16,H=14,W=14,K=32,R=3,S=3,pad=1,groups=16"})[0]
	var jobs []compileJob
	for i, spec := range epilogueChains {
		for j, lay := range problem.Layouts {
			prec := []problem.Precision{problem.FP32, problem.FP16, problem.BF16}[(i+j)%3]
			p := problem.Problem{Shape: s, Precision: prec, Layout: lay, Epilogue: mustChain(t, spec)}
			cands, err := Enumerate(p, DefaultLimits(90))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			var c *Candidate
			for _, cand := range kept(cands) {
				if cand.Family == "depthwise" {
					c = &cand
					break
				}
			}
			if c == nil {
				t.Fatalf("%s: no kept depthwise candidate", p)
			}
			k, err := RenderCandidate(p, *c)
			if err != nil {
				t.Fatalf("%s %s: %v", p, c.ID(), err)
			}
			ep := family.NewEpilogue(p)
			if !strings.Contains(k.Source, "bias"+ep.Params()+")") || !strings.Contains(k.Source, "convgen_ep(acc[i]") {
				t.Errorf("%s %s: the chain's parameters or its application are missing", p, c.ID())
			}
			plain := p
			plain.Epilogue = nil
			k0, err := RenderCandidate(plain, *c)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(k0.Source, "convgen_ep") {
				t.Errorf("%s %s: the empty chain renders convgen_ep", plain, c.ID())
			}
			jobs = append(jobs, compileJob{fmt.Sprintf("%s %s", p, c.ID()), k})
		}
	}
	compileForArchs(t, nvrtctest.Open(t), jobs)
}

// TestDepthwiseSpaceProperty: for 300 random valid depthwise problems
// (multipliers 1 to 4, sizes 1 to 80, filters 1 to 9, strides, pads and
// dilations up to 4 per axis, every precision and layout) the space has
// at most 24 candidates, at least one kept after the soft rules, every
// rejection reads "class: detail", and every kept candidate renders with a
// grid that covers the output: blocks × threads × OutputsPerThread ×
// (K/C in NCHW, VectorWidth in NHWC) ≥ N·K·P·Q.
func TestDepthwiseSpaceProperty(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	rng := rand.New(rand.NewPCG(19, 4))
	lim := DefaultLimits(90)
	for i := 0; i < 300; i++ {
		var s problem.Shape
		for {
			c := 1 + rng.IntN(200)
			s = problem.Shape{N: 1 + rng.IntN(8), C: c, K: c * (1 + rng.IntN(4)), H: 1 + rng.IntN(80), W: 1 + rng.IntN(80),
				R: 1 + rng.IntN(9), S: 1 + rng.IntN(9), StrideH: 1 + rng.IntN(4), StrideW: 1 + rng.IntN(4),
				PadH: rng.IntN(5), PadW: rng.IntN(5), DilationH: 1 + rng.IntN(4), DilationW: 1 + rng.IntN(4),
				Groups: c, Bias: rng.IntN(2) == 0}
			if s.Validate() == nil {
				break
			}
		}
		p := problem.Problem{Shape: s, Precision: problem.Precisions[i%len(problem.Precisions)], Layout: problem.Layouts[i/5%2]}
		if err := (Depthwise{}).Serves(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		size, keep, ks := checkSpace(t, Depthwise{}, p, lim)
		if size > 24 {
			t.Errorf("%s: %d candidates, want at most 24", p, size)
		}
		for j, k := range ks {
			c := keep[j]
			lanes := c.Config["OutputsPerThread"] * s.K / s.C // NCHW: every output plane of the input plane
			if p.Layout == problem.NHWC {
				lanes = c.Config["OutputsPerThread"] * c.Config["VectorWidth"]
			}
			if got, need := k.Grid[0]*k.Block[0]*lanes, s.N*s.K*s.P()*s.Q(); got < need {
				t.Errorf("%s %s: %d blocks × %d threads × %d outputs < %d outputs", p, c.ID(), k.Grid[0], k.Block[0], lanes, need)
			}
		}
	}
}
