package kernels

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// genericShapes are shapes the specialised families refuse or reject, each
// of which generic must serve in every precision and layout.
var genericShapes = []string{
	"N=2,C=4,H=16,W=16,K=96,R=3,S=3,groups=2",
	"N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1,groups=32",                                                           // grouped
	"N=2,C=32,H=15,W=17,K=32,R=3,S=3,pad=1,groups=32",                                                           // depthwise
	"N=1,C=8,H=9,W=11,K=24,R=5,S=5,stride=2,pad=2,groups=8",                                                     // depthwise, multiplier 3
	"N=3,C=13,H=19,W=23,K=11,R=3,S=3,pad=1",                                                                     // primes
	"N=2,C=6,H=21,W=25,K=17,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_h=2,dilation_w=1,bias=false", // asymmetric
	"N=1,C=1,H=1,W=1,K=1,R=1,S=1",
	"N=4,C=3,H=7,W=7,K=1,R=7,S=7",
	"N=1,C=5,H=3,W=40,K=3,R=3,S=1,pad_h=2,dilation_h=3,groups=1",
}

func parseShapes(t *testing.T, specs []string) []problem.Shape {
	t.Helper()
	var out []problem.Shape
	for _, s := range specs {
		shape, err := problem.ParseShape(s)
		if err != nil {
			t.Fatalf("ParseShape(%q): %v", s, err)
		}
		out = append(out, shape)
	}
	return out
}

// TestGenericServesEverything: generic serves every listed shape in every
// precision and layout with kept candidates, and the specialised families
// decline groups ≠ 1 with a reason (depthwise serves groups = C, K = m·C).
func TestGenericServesEverything(t *testing.T) {
	lim := DefaultLimits(90)
	for _, s := range parseShapes(t, genericShapes) {
		for _, prec := range problem.Precisions {
			for _, lay := range problem.Layouts {
				p := problem.Problem{Shape: s, Precision: prec, Layout: lay}
				if err := (Generic{}).Serves(p); err != nil {
					t.Errorf("%s: generic does not serve it: %v", p, err)
					continue
				}
				if err := Serves(p); err != nil {
					t.Errorf("%s: Serves: %v", p, err)
				}
				cands, err := Enumerate(p, lim)
				if err != nil {
					t.Errorf("%s: Enumerate: %v", p, err)
					continue
				}
				n := 0
				for _, c := range kept(cands) {
					if c.Family == "generic" {
						n++
					}
				}
				if n == 0 {
					t.Errorf("%s: no kept generic candidate", p)
				}
				if s.Groups == 1 {
					continue
				}
				for _, f := range Families() {
					if f.Name() == "generic" || (f.Name() == "depthwise" && s.Groups == s.C && s.K%s.C == 0) || gradFamily(f) {
						continue
					}
					err := f.Serves(p)
					if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("groups=%d", s.Groups)) {
						t.Errorf("%s: %s.Serves = %v, want a refusal naming groups=%d", p, f.Name(), err, s.Groups)
					}
				}
			}
		}
	}
}

// TestGenericServesOnlyValid: generic refuses what Validate refuses and
// unknown precisions and layouts.
func TestGenericServesOnlyValid(t *testing.T) {
	good := parseShapes(t, genericShapes[:1])[0]
	bad := good
	bad.C = 5 // not divisible by groups=2
	for _, p := range []problem.Problem{
		{Shape: bad, Precision: problem.FP32, Layout: problem.NCHW},
		{Shape: good, Precision: "fp8", Layout: problem.NCHW},
		{Shape: good, Precision: problem.FP32, Layout: "chwn"},
	} {
		if err := (Generic{}).Serves(p); err == nil {
			t.Errorf("generic serves the invalid problem %s", p)
		}
		if _, err := (Generic{}).Render(p, Config{"TileM": 32, "TileN": 8, "TileR": 8, "ThreadM": 1, "ThreadN": 1}); err == nil {
			t.Errorf("generic renders the invalid problem %s", p)
		}
	}
}

// randomShape draws a small valid shape: groups (grouped, depthwise,
// depthwise with a multiplier), odd channel counts, asymmetric stride, pad
// and dilation, with or without bias.
func randomShape(rng *rand.Rand) problem.Shape {
	for {
		g := 1
		switch rng.IntN(4) {
		case 1:
			g = 1 + rng.IntN(8)
		case 2:
			g = 1 + rng.IntN(64) // depthwise below
		}
		cg, kg := 1+rng.IntN(40), 1+rng.IntN(100)
		if g > 8 {
			cg, kg = 1, 1+rng.IntN(3)
		}
		s := problem.Shape{N: 1 + rng.IntN(8), C: g * cg, H: 1 + rng.IntN(60), W: 1 + rng.IntN(60), K: g * kg,
			R: 1 + rng.IntN(7), S: 1 + rng.IntN(7), StrideH: 1 + rng.IntN(4), StrideW: 1 + rng.IntN(4),
			PadH: rng.IntN(4), PadW: rng.IntN(4), DilationH: 1 + rng.IntN(3), DilationW: 1 + rng.IntN(3),
			Groups: g, Bias: rng.IntN(2) == 0}
		if s.Validate() == nil {
			return s
		}
	}
}

// genericKept is generic's kept candidates for p after the soft rules
// (as Enumerate admits them).
func genericKept(p problem.Problem, lim Limits) []Candidate {
	return kept(family.AdmitSoft(Generic{}.Space(p, lim)))
}

// TestGenericSpaceProperty: for 200 random valid problems the generic space
// is non-empty and modest, keeps at least one candidate under the default
// and under tight limits, and every kept candidate renders with a launch
// that covers the output and respects the limits.
func TestGenericSpaceProperty(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	rng := rand.New(rand.NewPCG(19, 1))
	tight := Limits{MaxThreadsPerBlock: 256, MaxSharedPerBlock: 48 * 1024, RegistersPerSM: 65536, MaxRegsPerThread: 255, SMs: 16}
	most := 0
	for i := 0; i < 200; i++ {
		s := randomShape(rng)
		p := problem.Problem{Shape: s, Precision: problem.Precisions[rng.IntN(len(problem.Precisions))],
			Layout: problem.Layouts[rng.IntN(len(problem.Layouts))]}
		for _, lim := range []Limits{DefaultLimits(90), DefaultLimits(80), tight} {
			_, keep, ks := checkSpace(t, Generic{}, p, lim)
			most = max(most, len(keep))
			if len(keep) > 60 {
				t.Errorf("%s: %d kept candidates > 60", p, len(keep))
			}
			for i, c := range keep {
				checkGenericLaunch(t, p, c, ks[i], lim)
			}
		}
	}
	t.Logf("at most %d kept generic candidates per problem", most)
}

// checkGenericLaunch checks a rendered generic kernel's launch against the
// problem and the limits.
func checkGenericLaunch(t *testing.T, p problem.Problem, c Candidate, k Kernel, lim Limits) {
	t.Helper()
	s := p.Shape
	threads := k.Block[0] * k.Block[1] * k.Block[2]
	if threads%32 != 0 || threads > lim.MaxThreadsPerBlock || k.SharedBytes > lim.MaxSharedPerBlock || k.Grid[0] < 1 {
		t.Errorf("%s %s: %d threads, %d B shared, grid %v", p, c.ID(), threads, k.SharedBytes, k.Grid)
	}
	tm, tn := c.Config["TileM"], c.Config["TileN"]
	m := s.N * s.P() * s.Q()
	if need := family.CeilDiv(m, tm) * family.CeilDiv(s.K/s.Groups, tn) * s.Groups; k.Grid[0] != need {
		t.Errorf("%s %s: grid %v, want %d blocks of %dx%d tiles", p, c.ID(), k.Grid, need, tm, tn)
	}
	if threads*c.Config["ThreadM"]*c.Config["ThreadN"] != tm*tn {
		t.Errorf("%s %s: %d threads do not cover the %dx%d tile", p, c.ID(), threads, tm, tn)
	}
}

// TestGenericCompileSample renders one kept candidate of each of 10 random
// problems (every precision and layout among them) and NVRTC-compiles it for
// sm_80 and sm_90.
func TestGenericCompileSample(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	rng := rand.New(rand.NewPCG(19, 2))
	var jobs []compileJob
	for i := 0; i < 10; i++ {
		s := randomShape(rng)
		p := problem.Problem{Shape: s, Precision: problem.Precisions[i%len(problem.Precisions)], Layout: problem.Layouts[i/5%2]}
		keep := genericKept(p, DefaultLimits(80))
		c := keep[rng.IntN(len(keep))]
		k, err := RenderCandidate(p, c)
		if err != nil {
			t.Fatalf("%s %s: %v", p, c.ID(), err)
		}
		jobs = append(jobs, compileJob{p.String() + " " + c.ID(), k})
	}
	// The golden grouped kernel too.
	k := goldenGeneric(t)
	jobs = append(jobs, compileJob{"golden generic", k})
	compileForArchs(t, lib, jobs)
}

// goldenGeneric is the generic kernel whose source is kept in testdata: a
// grouped fp16 NHWC problem with odd channel counts per group.
func goldenGeneric(t *testing.T) Kernel {
	t.Helper()
	s, err := problem.ParseShape("N=2,C=12,H=15,W=17,K=18,R=3,S=3,stride_h=2,pad=1,dilation_w=2,groups=3")
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: s, Precision: problem.FP16, Layout: problem.NHWC}
	k, err := Generic{}.Render(p, Config{"TileM": 64, "TileN": 8, "TileR": 16, "ThreadM": 4, "ThreadN": 2})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestGenericGoldenSource(t *testing.T) {
	checkGolden(t, "TestGenericGoldenSource", goldenPath("generic", "generic_fp16_nhwc_groups3_m64_n8_r16_x4x2"), goldenGeneric(t).Source)
}
