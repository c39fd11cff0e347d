package kernels

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// igemmPrecisions are the precisions igemm serves.
var igemmPrecisions = []problem.Precision{problem.FP16, problem.BF16, problem.TF32, problem.TF32x3}

// igemmShapes are channel-heavy and odd groups=1 shapes igemm must serve:
// VGG and ResNet 3x3 layers, 1x1 (strided, on a 7x7 map), odd and prime
// channel counts, asymmetric stride/pad/dilation, a single output pixel.
var igemmShapes = []string{
	"N=16,C=64,H=224,W=224,K=64,R=3,S=3,pad=1",
	"N=32,C=256,H=56,W=56,K=512,R=1,S=1,stride=2",
	"N=32,C=512,H=7,W=7,K=2048,R=1,S=1",
	"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1",
	"N=3,C=13,H=19,W=23,K=11,R=3,S=3,pad=1",
	"N=2,C=6,H=21,W=25,K=17,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_h=2,dilation_w=1,bias=false",
	"N=1,C=1,H=1,W=1,K=1,R=1,S=1",
	"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2",
}

func igemmKept(p problem.Problem, lim Limits) []Candidate {
	return kept(family.AdmitSoft(IGEMM{}.Space(p, lim)))
}

// TestIGEMMServes: igemm serves groups=1 in its four precisions and both
// layouts, and declines fp32, groups ≠ 1 and invalid shapes with a reason.
func TestIGEMMServes(t *testing.T) {
	for _, s := range parseShapes(t, igemmShapes) {
		for _, lay := range problem.Layouts {
			for _, prec := range igemmPrecisions {
				p := problem.Problem{Shape: s, Precision: prec, Layout: lay}
				if err := (IGEMM{}).Serves(p); err != nil {
					t.Errorf("%s: %v", p, err)
				}
			}
			p := problem.Problem{Shape: s, Precision: problem.FP32, Layout: lay}
			if err := (IGEMM{}).Serves(p); err == nil || !strings.Contains(err.Error(), "fp32") {
				t.Errorf("%s: Serves = %v, want a refusal naming fp32", p, err)
			}
		}
	}
	grouped := parseShapes(t, []string{"N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1,groups=32"})[0]
	p := problem.Problem{Shape: grouped, Precision: problem.FP16, Layout: problem.NHWC}
	if err := (IGEMM{}).Serves(p); err == nil || !strings.Contains(err.Error(), "groups=32") {
		t.Errorf("%s: Serves = %v, want a refusal naming groups=32", p, err)
	}
	if _, err := (IGEMM{}).Render(p, Config{"BM": 64, "BN": 64, "BK": 32, "WarpsM": 2, "WarpsN": 2, "Stages": 3}); err == nil {
		t.Errorf("%s: Render succeeded for a grouped problem", p)
	}
	bad := grouped
	bad.Groups, bad.C = 1, 0
	p = problem.Problem{Shape: bad, Precision: problem.FP16, Layout: problem.NHWC}
	if err := (IGEMM{}).Serves(p); err == nil {
		t.Errorf("%s: Serves accepts an invalid shape", p)
	}
}

// TestIGEMMRenderRejectsBadConfigs: configurations whose warp tiles are not
// whole fragments, or that lack a knob, fail to render with an error.
func TestIGEMMRenderRejectsBadConfigs(t *testing.T) {
	s := parseShapes(t, igemmShapes[:1])[0]
	p := problem.Problem{Shape: s, Precision: problem.FP16, Layout: problem.NHWC}
	for _, cfg := range []Config{
		{"BM": 64, "BN": 64, "BK": 32, "WarpsM": 2, "WarpsN": 2},                // no Stages
		{"BM": 64, "BN": 64, "BK": 32, "WarpsM": 4, "WarpsN": 2, "Stages": 3},   // 16-row warp tile
		{"BM": 64, "BN": 40, "BK": 32, "WarpsM": 2, "WarpsN": 1, "Stages": 3},   // 40 channels
		{"BM": 64, "BN": 64, "BK": 24, "WarpsM": 2, "WarpsN": 2, "Stages": 3},   // BK
		{"BM": 64, "BN": 64, "BK": 32, "WarpsM": 2, "WarpsN": 2, "Stages": 1},   // one stage
		{"BM": 64, "BN": 64, "BK": 32, "WarpsM": 0, "WarpsN": 2, "Stages": 3},   // no warps
		{"BM": 512, "BN": 512, "BK": 32, "WarpsM": 8, "WarpsN": 8, "Stages": 3}, // 2048 threads
	} {
		if _, err := (IGEMM{}).Render(p, cfg); err == nil {
			t.Errorf("Render(%s) succeeded, want an error", cfg)
		}
	}
}

// TestIGEMMSpaceProperty: for 300 random valid groups=1 problems of the
// served precisions, under the default and under tight limits, the space
// is at most 40 candidates, at least one is kept, rejections are
// "class: detail", and every kept candidate renders with a launch that
// covers the output and respects the limits. Under sm_75 limits every
// candidate is rejected for the architecture.
func TestIGEMMSpaceProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 9))
	tight := Limits{MaxThreadsPerBlock: 256, MaxSharedPerBlock: 48 * 1024, RegistersPerSM: 65536, MaxRegsPerThread: 255, SMs: 16}
	n := 0
	for n < 300 {
		s := randomShape(rng)
		if s.Groups != 1 {
			continue
		}
		n++
		p := problem.Problem{Shape: s, Precision: igemmPrecisions[rng.IntN(len(igemmPrecisions))],
			Layout: problem.Layouts[rng.IntN(len(problem.Layouts))]}
		if err := (IGEMM{}).Serves(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, lim := range []Limits{DefaultLimits(90), DefaultLimits(80), tight} {
			n, keep, ks := checkSpace(t, IGEMM{}, p, lim)
			if n > 40 {
				t.Fatalf("%s: %d candidates > 40", p, n)
			}
			for i, c := range keep {
				k := ks[i]
				threads := k.Block[0] * k.Block[1] * k.Block[2]
				bm, bn := c.Config["BM"], c.Config["BN"]
				if threads%32 != 0 || threads > lim.MaxThreadsPerBlock || k.SharedBytes > lim.MaxSharedPerBlock {
					t.Errorf("%s %s: %d threads, %d B shared", p, c.ID(), threads, k.SharedBytes)
				}
				if k.Grid[0]*bm < s.N*s.P()*s.Q() || (k.Grid[0]-1)*bm >= s.N*s.P()*s.Q() ||
					k.Grid[1]*bn < s.K || (k.Grid[1]-1)*bn >= s.K || k.Grid[2] != 1 {
					t.Errorf("%s %s: grid %v does not tile M=%d x K=%d by %dx%d", p, c.ID(), k.Grid, s.N*s.P()*s.Q(), s.K, bm, bn)
				}
			}
		}
		for _, c := range (IGEMM{}).Space(p, DefaultLimits(75)) {
			if !strings.HasPrefix(c.Rejected, "arch: ") {
				t.Errorf("%s %s on sm_75: rejection %q, want arch", p, c.ID(), c.Rejected)
			}
		}
	}
}

// TestIGEMMServesChannelHeavy: the shapes of issue 19 that every
// tensor-core family rejected have kept igemm candidates in every precision
// igemm serves and both layouts, through Enumerate.
func TestIGEMMServesChannelHeavy(t *testing.T) {
	for _, s := range parseShapes(t, igemmShapes) {
		for _, prec := range igemmPrecisions {
			for _, lay := range problem.Layouts {
				p := problem.Problem{Shape: s, Precision: prec, Layout: lay}
				cands, err := Enumerate(p, DefaultLimits(80))
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				n := 0
				for _, c := range kept(cands) {
					if c.Family == "igemm" {
						n++
					}
				}
				if n == 0 {
					t.Errorf("%s: no kept igemm candidate", p)
				}
			}
		}
	}
}

// TestIGEMMCompileSample NVRTC-compiles for sm_80 and sm_90 one kept
// candidate of each of 12 problems (the channel-heavy list and random
// shapes; every precision, both layouts, every load width among them) and
// the golden kernel, and checks that the PTX holds mma.sync.
func TestIGEMMCompileSample(t *testing.T) {
	lib := nvrtctest.Open(t)
	rng := rand.New(rand.NewPCG(19, 10))
	shapes := parseShapes(t, igemmShapes[:6])
	for len(shapes) < 12 {
		if s := randomShape(rng); s.Groups == 1 {
			shapes = append(shapes, s)
		}
	}
	var jobs []compileJob
	for i, s := range shapes {
		p := problem.Problem{Shape: s, Precision: igemmPrecisions[i%len(igemmPrecisions)], Layout: problem.Layouts[i/2%2]}
		keep := igemmKept(p, DefaultLimits(80))
		c := keep[rng.IntN(len(keep))]
		k, err := RenderCandidate(p, c)
		if err != nil {
			t.Fatalf("%s %s: %v", p, c.ID(), err)
		}
		jobs = append(jobs, compileJob{p.String() + " " + c.ID(), k})
	}
	jobs = append(jobs, compileJob{"golden igemm", goldenIGEMM(t)})
	compileForArchs(t, lib, jobs)
}

// goldenIGEMM is the igemm kernel whose source is kept in testdata: fp16
// NHWC with C=13 (element loads), K=11 and a dilated, padded 3x3 filter.
func goldenIGEMM(t *testing.T) Kernel {
	t.Helper()
	s, err := problem.ParseShape("N=2,C=13,H=15,W=17,K=11,R=3,S=3,stride_h=2,pad=1,dilation_w=2")
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: s, Precision: problem.FP16, Layout: problem.NHWC}
	k, err := IGEMM{}.Render(p, Config{"BM": 64, "BN": 64, "BK": 32, "WarpsM": 2, "WarpsN": 2, "Stages": 3})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestIGEMMGoldenSource(t *testing.T) {
	checkGolden(t, "TestIGEMMGoldenSource", goldenPath("igemm", "igemm_fp16_nhwc_c13_k11_m64_n64_k32_w2x2_s3"), goldenIGEMM(t).Source)
}

// igemmDgradShapes are the dgrad shapes igemm's CPU tests render and
// compile: ResNet-50's 3x3 stride-1 layers at 56² and 14², a 1x1 (C=64 →
// K=256) at 56², an odd dilated shape (element loads along C, 8-byte loads
// along K), a strided one whose row phases 2 and 3 have no tap, and an
// asymmetric strided, padded, dilated one.
var igemmDgradShapes = []string{
	"N=32,C=64,H=56,W=56,K=64,R=3,S=3,pad=1",
	"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1",
	"N=32,C=64,H=56,W=56,K=256,R=1,S=1",
	"N=3,C=13,H=9,W=11,K=24,R=3,S=3,pad=1,dilation=2",
	"N=2,C=6,H=15,W=16,K=20,R=2,S=3,stride=4,pad=1,dilation_h=4,bias=false",
	"N=3,C=24,H=19,W=23,K=17,R=3,S=5,stride_h=2,pad_h=1,pad_w=2,dilation_w=2",
}

// TestIGEMMDgradServes: igemm serves op=dgrad in its four precisions and
// both layouts with kept candidates (a grid z of one layer per stride
// phase, named for the op), and declines wgrad, fp32 and a dgrad epilogue chain, naming why.
func TestIGEMMDgradServes(t *testing.T) {
	for _, s := range parseShapes(t, igemmDgradShapes) {
		for _, lay := range problem.Layouts {
			for _, prec := range igemmPrecisions {
				p := problem.Problem{Shape: s, Precision: prec, Layout: lay, Op: problem.OpDgrad}
				if err := (IGEMM{}).Serves(p); err != nil {
					t.Errorf("%s: %v", p, err)
					continue
				}
				keep := igemmKept(p, DefaultLimits(90))
				if len(keep) == 0 {
					t.Errorf("%s: no kept candidate", p)
					continue
				}
				k, err := RenderCandidate(p, keep[0])
				if err != nil {
					t.Fatalf("%s %s: %v", p, keep[0].ID(), err)
				}
				if k.Grid[2] != s.StrideH*s.StrideW || !strings.HasPrefix(k.Name, "convgen_igemm_dgrad_") {
					t.Errorf("%s %s: kernel %s, grid %v, want z = %d phases", p, keep[0].ID(), k.Name, k.Grid, s.StrideH*s.StrideW)
				}
			}
		}
	}
	s := parseShapes(t, igemmDgradShapes[:1])[0]
	for _, tc := range []struct {
		p    problem.Problem
		want string
	}{
		{problem.Problem{Shape: s, Precision: problem.FP16, Layout: problem.NHWC, Op: problem.OpWgrad}, "op=wgrad"},
		{problem.Problem{Shape: s, Precision: problem.FP32, Layout: problem.NHWC, Op: problem.OpDgrad}, "fp32"},
		{problem.Problem{Shape: s, Precision: problem.FP16, Layout: problem.NHWC, Op: problem.OpDgrad, Epilogue: mustChain(t, "relu")}, "epilogue"},
	} {
		if err := (IGEMM{}).Serves(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Serves(%s) = %v, want a refusal naming %q", tc.p, err, tc.want)
		}
	}
}

// TestIGEMMDgradCompile NVRTC-compiles for sm_80 one kept dgrad candidate
// per shape, layout and two precisions of igemmDgradShapes (the
// precisions rotate: each precision meets each layout), and the golden
// dgrad kernel for sm_80 and sm_90, and checks that the PTX holds the
// mma.sync of the precision and, for fp16/bf16, the transposing ldmatrix.
func TestIGEMMDgradCompile(t *testing.T) {
	lib := nvrtctest.Open(t)
	rng := rand.New(rand.NewPCG(23, 1))
	var jobs []compileJob
	for i, s := range parseShapes(t, igemmDgradShapes) {
		for li, lay := range problem.Layouts {
			for j := range 2 {
				prec := igemmPrecisions[(i+li+2*j)%len(igemmPrecisions)]
				p := problem.Problem{Shape: s, Precision: prec, Layout: lay, Op: problem.OpDgrad}
				keep := igemmKept(p, DefaultLimits(80))
				c := keep[rng.IntN(len(keep))]
				k, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("%s %s: %v", p, c.ID(), err)
				}
				jobs = append(jobs, compileJob{p.String() + " " + c.ID(), k})
			}
		}
	}
	runCompileJobs(t, jobs, func(j compileJob) string {
		res, err := lib.CompilePTX(j.kernel.Source, nvrtc.Options{Name: j.kernel.Name + ".cu", Arch: "sm_80"})
		if err != nil {
			return err.Error()
		}
		mma := "m16n8k8.row.col.f32.tf32.tf32.f32"
		if strings.Contains(j.id, "fp16") {
			mma = "m16n8k16.row.col.f32.f16.f16.f32"
		} else if strings.Contains(j.id, "bf16") {
			mma = "m16n8k16.row.col.f32.bf16.bf16.f32"
		}
		switch {
		case !strings.Contains(res.PTX, ".entry "+j.kernel.Name) || !strings.Contains(res.PTX, "mma.sync.aligned."+mma):
			return "PTX lacks the entry or mma.sync." + mma
		case mma != "m16n8k8.row.col.f32.tf32.tf32.f32" && !strings.Contains(res.PTX, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"):
			return "PTX lacks ldmatrix .trans"
		case !strings.Contains(res.PTX, "cp.async"):
			return "PTX lacks cp.async"
		}
		return ""
	})
	compileForArchs(t, lib, []compileJob{{"golden igemm dgrad", goldenIGEMMDgrad(t)}})
}

// goldenIGEMMDgrad is the igemm dgrad kernel whose source is kept in
// testdata: fp16 NHWC with C=13 (element loads of W), K=11 (element loads
// of dY), a row stride of 2 (phase tables) and a dilated, padded 3x3 filter.
func goldenIGEMMDgrad(t *testing.T) Kernel {
	t.Helper()
	s, err := problem.ParseShape("N=2,C=13,H=15,W=17,K=11,R=3,S=3,stride_h=2,pad=1,dilation_w=2")
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: s, Precision: problem.FP16, Layout: problem.NHWC, Op: problem.OpDgrad}
	k, err := IGEMM{}.Render(p, Config{"BM": 64, "BN": 64, "BK": 32, "WarpsM": 2, "WarpsN": 2, "Stages": 3})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestIGEMMDgradGoldenSource(t *testing.T) {
	checkGolden(t, "TestIGEMMDgradGoldenSource", goldenPath("igemm", "igemm_dgrad_fp16_nhwc_c13_k11_m64_n64_k32_w2x2_s3"), goldenIGEMMDgrad(t).Source)
}
