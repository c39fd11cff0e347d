package kernels

import (
	"fmt"
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

// TestIGEMMSpaceProperty: for 120 (300 under the full sweep) random valid groups=1 problems of the
// served precisions, under the default and under tight limits, the space
// is at most 46 candidates (40, and 6 split-K ones), at least one is kept,
// rejections are "class: detail", and every kept candidate renders with a
// launch that covers the output and respects the limits. Under sm_75
// limits every candidate is rejected for the architecture.
func TestIGEMMSpaceProperty(t *testing.T) {
	t.Parallel() // CPU-bound and independent: overlaps the other CPU runs (the test command's time)
	rng := rand.New(rand.NewPCG(19, 9))
	tight := Limits{MaxThreadsPerBlock: 256, MaxSharedPerBlock: 48 * 1024, RegistersPerSM: 65536, MaxRegsPerThread: 255, SMs: 16}
	n, count := 0, 120 // 300 under the full sweep
	if fullSweep() {
		count = 300
	}
	for n < count {
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
			if n > 46 {
				t.Fatalf("%s: %d candidates > 46", p, n)
			}
			for i, c := range keep {
				k := ks[i]
				threads := k.Block[0] * k.Block[1] * k.Block[2]
				bm, bn := c.Config["BM"], c.Config["BN"]
				if threads%32 != 0 || threads > lim.MaxThreadsPerBlock || k.SharedBytes > lim.MaxSharedPerBlock {
					t.Errorf("%s %s: %d threads, %d B shared", p, c.ID(), threads, k.SharedBytes)
				}
				if k.Grid[0]*bm < s.N*s.P()*s.Q() || (k.Grid[0]-1)*bm >= s.N*s.P()*s.Q() ||
					k.Grid[1]*bn < s.K || (k.Grid[1]-1)*bn >= s.K || k.Grid[2] != max(1, c.Config["SplitK"]) {
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
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
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
		jobs = append(jobs, igemmSampleJob(t, rng, p))
	}
	jobs = append(jobs, compileJob{"golden igemm", goldenIGEMM(t, problem.OpFprop)})
	compileForArchs(t, lib, jobs)
}

// igemmSampleJob renders one kept candidate of p on sm_80, picked by rng,
// as a compile job.
func igemmSampleJob(t *testing.T, rng *rand.Rand, p problem.Problem) compileJob {
	t.Helper()
	keep := igemmKept(p, DefaultLimits(80))
	c := keep[rng.IntN(len(keep))]
	k, err := RenderCandidate(p, c)
	if err != nil {
		t.Fatalf("%s %s: %v", p, c.ID(), err)
	}
	return compileJob{p.String() + " " + c.ID(), k}
}

// goldenIGEMM is the igemm kernel of op (fprop or dgrad) whose source is
// kept in testdata: fp16 NHWC with C=13 and K=11 (element loads of both
// operands), a row stride of 2 (dgrad's phase tables) and a dilated,
// padded 3x3 filter.
func goldenIGEMM(t *testing.T, op problem.Op) Kernel {
	return goldenIGEMMFold(t, op, 0)
}

// goldenIGEMMFold is goldenIGEMM with the knob Fold (1: the folded dgrad).
func goldenIGEMMFold(t *testing.T, op problem.Op, fold int) Kernel {
	t.Helper()
	s, err := problem.ParseShape("N=2,C=13,H=15,W=17,K=11,R=3,S=3,stride_h=2,pad=1,dilation_w=2")
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: s, Precision: problem.FP16, Layout: problem.NHWC, Op: op}
	cfg := Config{"BM": 64, "BN": 64, "BK": 32, "WarpsM": 2, "WarpsN": 2, "Stages": 3}
	if fold != 0 {
		cfg["Fold"] = fold
	}
	k, err := IGEMM{}.Render(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestIGEMMGoldenSource(t *testing.T) {
	checkGolden(t, "TestIGEMMGoldenSource", goldenPath("igemm", "igemm_fp16_nhwc_c13_k11_m64_n64_k32_w2x2_s3"), goldenIGEMM(t, problem.OpFprop).Source)
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
				phases := s.StrideH * s.StrideW // in the grid, unless folded into the columns
				if keep[0].Config["Fold"] == 1 {
					phases = 1
				}
				if k.Grid[2] != phases || !strings.HasPrefix(k.Name, "convgen_igemm_dgrad_") {
					t.Errorf("%s %s: kernel %s, grid %v, want z = %d phases", p, keep[0].ID(), k.Name, k.Grid, phases)
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
// per shape and layout of igemmDgradShapes in one precision (two under the
// full sweep; the precisions rotate: each precision meets each layout),
// and the golden dgrad kernel for sm_80 and sm_90, and checks that the PTX
// holds the mma.sync of the precision and, for fp16/bf16, the transposing
// ldmatrix.
func TestIGEMMDgradCompile(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	rng := rand.New(rand.NewPCG(23, 1))
	var jobs []compileJob
	for i, s := range parseShapes(t, igemmDgradShapes) {
		for li, lay := range problem.Layouts {
			for j := range 2 {
				if !fullSweep() && j > 0 {
					continue // one precision per shape and layout (two under the full sweep)
				}
				prec := igemmPrecisions[(i+li+2*j)%len(igemmPrecisions)]
				p := problem.Problem{Shape: s, Precision: prec, Layout: lay, Op: problem.OpDgrad}
				jobs = append(jobs, igemmSampleJob(t, rng, p))
			}
		}
	}
	runCompileJobs(t, jobs, func(j compileJob) string {
		res, err := memoCompile(lib, true, j.kernel.Source, nvrtc.Options{Name: j.kernel.Name + ".cu", Arch: "sm_80"})
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
	compileForArchs(t, lib, []compileJob{{"golden igemm dgrad", goldenIGEMM(t, problem.OpDgrad)}})
}

func TestIGEMMDgradGoldenSource(t *testing.T) {
	checkGolden(t, "TestIGEMMDgradGoldenSource", goldenPath("igemm", "igemm_dgrad_fp16_nhwc_c13_k11_m64_n64_k32_w2x2_s3"), goldenIGEMM(t, problem.OpDgrad).Source)
}

// igemmSplitShapes are the split-K shapes of issue 23: ResNet-50's s4-3x3
// at N=32 (dgrad: 25 × 4 tiles of 64 × 128 in one phase, 144 k-tiles of
// 32 over 4608 taps × K) and its stride-2 twin on a 14² map (4 phases of
// up to 4 taps), and the 56² layer whose grid fills the SMs unsplit.
var igemmSplitShapes = []string{
	"N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1",
	"N=32,C=512,H=14,W=14,K=512,R=3,S=3,stride=2,pad=1",
	"N=32,C=64,H=56,W=56,K=64,R=3,S=3,pad=1",
}

// igemmSplitConfig is an igemm configuration with BK 32 and SplitK split
// (none when 0).
func igemmSplitConfig(bm, bn, warpsM, warpsN, stages, split int) Config {
	c := Config{"BM": bm, "BN": bn, "BK": 32, "WarpsM": warpsM, "WarpsN": warpsN, "Stages": stages}
	if split != 0 {
		c["SplitK"] = split
	}
	return c
}

// TestIGEMMSplitKSpace: on sm_90, s4-3x3 keeps split-K candidates of
// SplitK 2 and 4 for dgrad and fprop in fp16, bf16 and tf32, each a grid
// of the unsplit tiles × (phases · SplitK) along z with room for the FP32
// partial tile, listed only where the unsplit grid has fewer blocks than
// SMs; the 56² layer gets none; on sm_80 every split candidate is
// rejected for the architecture. SplitK=1 is the unsplit kernel under the
// unsplit ID, and bad values or too short a reduction fail to render.
func TestIGEMMSplitKSpace(t *testing.T) {
	shapes := parseShapes(t, igemmSplitShapes)
	s4, big := shapes[0], shapes[2]
	for _, op := range []problem.Op{problem.OpDgrad, problem.OpFprop} {
		for _, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
			for _, s := range []problem.Shape{s4, big} {
				p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NHWC, Op: op}
				listed, kept := 0, map[int]int{}
				for _, c := range (IGEMM{}).Space(p, DefaultLimits(90)) {
					sk, ok := c.Config["SplitK"]
					if !ok {
						continue
					}
					listed++
					if c.Rejected != "" {
						if !strings.HasPrefix(c.Rejected, "split: ") {
							t.Errorf("%s %s: rejected %q, want only the soft split rule", p, c.ID(), c.Rejected)
						}
						continue
					}
					kept[sk]++
					k, err := RenderCandidate(p, c)
					if err != nil {
						t.Fatalf("%s %s: %v", p, c.ID(), err)
					}
					bm, bn := c.Config["BM"], c.Config["BN"]
					m, n, phases := s.N*s.P()*s.Q(), s.K, 1
					if op == problem.OpDgrad {
						m, n, phases = s.N*s.H*s.W, s.C, s.StrideH*s.StrideW
					}
					tiles := [3]int{family.CeilDiv(m, bm), family.CeilDiv(n, bn), phases * sk}
					if k.Grid != tiles || tiles[0]*tiles[1]*phases >= DefaultLimits(90).SMs {
						t.Errorf("%s %s: grid %v, want %v with fewer unsplit blocks than SMs", p, c.ID(), k.Grid, tiles)
					}
					if k.SharedBytes < 16*bm+bm*(bn+8)*4 || !strings.Contains(k.Source, "__cluster_dims__(1, 1, SPLITK)") ||
						!strings.Contains(k.Source, fmt.Sprintf("#define SPLITK %d ", sk)) {
						t.Errorf("%s %s: %d B shared for a %d x %d partial tile, or no cluster of %d", p, c.ID(), k.SharedBytes, bm, bn, sk)
					}
				}
				switch {
				case s == big && listed > 0:
					t.Errorf("%s: %d split-K candidates for a grid that fills the SMs", p, listed)
				case s == s4 && (kept[2] == 0 || kept[4] == 0):
					t.Errorf("%s: kept split-K candidates %v, want SplitK 2 and 4", p, kept)
				}
			}
			p := problem.Problem{Shape: s4, Precision: prec, Layout: problem.NHWC, Op: op}
			n := 0
			for _, c := range (IGEMM{}).Space(p, DefaultLimits(80)) {
				if _, ok := c.Config["SplitK"]; ok {
					n++
					if !strings.HasPrefix(c.Rejected, "arch: ") || !strings.Contains(c.Rejected, "sm_90") {
						t.Errorf("%s %s on sm_80: rejection %q, want arch (sm_90)", p, c.ID(), c.Rejected)
					}
				}
			}
			if n == 0 {
				t.Errorf("%s: no split-K candidate listed on sm_80 (want them rejected)", p)
			}
		}
	}
	for _, op := range []problem.Op{problem.OpDgrad, problem.OpFprop} {
		p := problem.Problem{Shape: s4, Precision: problem.FP16, Layout: problem.NHWC, Op: op}
		one, err := IGEMM{}.Render(p, igemmSplitConfig(64, 128, 2, 4, 4, 1))
		if err != nil {
			t.Fatal(err)
		}
		plain := igemmSplitConfig(64, 128, 2, 4, 4, 0)
		none, err := IGEMM{}.Render(p, plain)
		if err != nil {
			t.Fatal(err)
		}
		if one.Source != none.Source || one.Launch != none.Launch || one.Config.String() != plain.String() ||
			strings.Contains(none.Source, "SPLITK") || strings.Contains(none.Source, "cluster") {
			t.Errorf("%s: SplitK=1 renders %s (%v), unsplit %s (%v); want the same unsplit kernel", p, one.Config, one.Launch, none.Config, none.Launch)
		}
		for _, bad := range []struct {
			cfg  Config
			want string
		}{
			{igemmSplitConfig(64, 128, 2, 4, 4, 3), "SplitK must be"},
			{igemmSplitConfig(64, 128, 2, 4, 4, 16), "SplitK must be"},
		} {
			if _, err := (IGEMM{}).Render(p, bad.cfg); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("%s %s: err %v, want %q", p, bad.cfg, err, bad.want)
			}
		}
	}
	// Fewer than two k-tiles a block: 72 × 9 taps are 21 dgrad k-tiles of 32.
	odd := parseShapes(t, []string{"N=3,C=40,H=9,W=11,K=72,R=3,S=3,pad=1"})[0]
	p := problem.Problem{Shape: odd, Precision: problem.TF32, Layout: problem.NHWC, Op: problem.OpDgrad}
	if _, err := (IGEMM{}).Render(p, igemmSplitConfig(64, 64, 2, 2, 3, 8)); err != nil {
		t.Errorf("%s SplitK=8 over 21 k-tiles: %v", p, err)
	}
	small := parseShapes(t, []string{"N=3,C=40,H=9,W=11,K=16,R=3,S=3,pad=1"})[0]
	p = problem.Problem{Shape: small, Precision: problem.TF32, Layout: problem.NHWC, Op: problem.OpDgrad}
	if _, err := (IGEMM{}).Render(p, igemmSplitConfig(64, 64, 2, 2, 3, 2)); err != nil {
		t.Errorf("%s SplitK=2 over 5 k-tiles: %v", p, err)
	}
	if _, err := (IGEMM{}).Render(p, igemmSplitConfig(64, 64, 2, 2, 3, 4)); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Errorf("%s SplitK=4 over 5 k-tiles: err %v, want a refusal", p, err)
	}
}

// TestIGEMMSplitKCompile NVRTC-compiles for sm_90 split-K dgrad kernels of
// s4-3x3 and s4-3x3s2 (4 phases × SplitK along z) with SplitK 2 and 4 in
// fp16, bf16 and tf32 NHWC (by default s4-3x3 with SplitK 2 and s4-3x3s2
// with 4, so that each precision meets both; each shape with both under
// the full sweep) and one NCHW, and split fprop kernels with a
// chain, another output type and odd sizes; each PTX must declare the
// cluster (.reqnctapercluster) and read the other blocks' partial tiles
// (mapa, ld.shared::cluster) between cluster barriers. For sm_80 (the
// fallback's compute_80) a split kernel must fail to compile, naming sm_90.
func TestIGEMMSplitKCompile(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	shapes := parseShapes(t, igemmSplitShapes[:2])
	odd := parseShapes(t, []string{"N=3,C=40,H=9,W=11,K=72,R=3,S=3,pad=1", "N=2,C=13,H=9,W=7,K=37,R=3,S=3,stride=2,pad=1,dilation_w=2"})
	type job struct {
		p   problem.Problem
		cfg Config
	}
	var todo []job
	for i, s := range shapes {
		for j, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
			for _, sk := range []int{2, 4} {
				if !fullSweep() && sk != 2<<i {
					continue // SplitK 2 on the first shape, 4 on the second (both on each under the full sweep)
				}
				cfg := igemmSplitConfig(64, 128, 2, 4, 4, sk)
				if (i+j+sk/2)%2 == 1 {
					cfg = igemmSplitConfig(128, 128, 2, 4, 3, sk)
				}
				todo = append(todo, job{problem.Problem{Shape: s, Precision: prec, Layout: problem.NHWC, Op: problem.OpDgrad}, cfg})
			}
		}
	}
	todo = append(todo,
		job{problem.Problem{Shape: shapes[1], Precision: problem.TF32x3, Layout: problem.NCHW, Op: problem.OpDgrad}, igemmSplitConfig(64, 64, 2, 2, 3, 8)},
		job{problem.Problem{Shape: odd[1], Precision: problem.FP16, Layout: problem.NHWC, Op: problem.OpDgrad}, igemmSplitConfig(64, 64, 2, 2, 3, 2)},
		job{problem.Problem{Shape: shapes[0], Precision: problem.FP16, Layout: problem.NHWC, Epilogue: mustChain(t, "residual,relu")}, igemmSplitConfig(64, 128, 2, 4, 4, 4)},
		job{problem.Problem{Shape: odd[0], Precision: problem.TF32, Layout: problem.NCHW, Epilogue: mustChain(t, "scale_shift,relu"), OutPrecision: problem.StorageBF16}, igemmSplitConfig(64, 64, 2, 2, 3, 2)},
		job{problem.Problem{Shape: odd[1], Precision: problem.BF16, Layout: problem.NHWC, OutPrecision: problem.StorageFP32}, igemmSplitConfig(64, 64, 2, 2, 3, 2)},
	)
	var jobs []compileJob
	for _, j := range todo {
		k, err := RenderCandidate(j.p, Candidate{Family: "igemm", Config: j.cfg})
		if err != nil {
			t.Fatalf("%s %s: %v", j.p, j.cfg, err)
		}
		phases := 1
		if j.p.Op == problem.OpDgrad {
			phases = j.p.Shape.StrideH * j.p.Shape.StrideW
		}
		if k.Grid[2] != phases*j.cfg["SplitK"] {
			t.Errorf("%s %s: grid %v, want z = %d phases × SplitK", j.p, j.cfg, k.Grid, phases)
		}
		jobs = append(jobs, compileJob{fmt.Sprintf("%s %s", j.p, j.cfg), k})
	}
	jobs = append(jobs, compileJob{"for sm_80: " + jobs[0].id, jobs[0].kernel})
	runCompileJobs(t, jobs, func(j compileJob) string {
		if strings.HasPrefix(j.id, "for sm_80: ") {
			_, err := memoCompile(lib, true, j.kernel.Source, nvrtc.Options{Name: j.kernel.Name + ".cu", Arch: "sm_80"})
			if err == nil || !strings.Contains(err.Error(), "sm_90") {
				return fmt.Sprintf("compiled for sm_80 (err %v), want a refusal naming sm_90", err)
			}
			return ""
		}
		res, err := memoCompile(lib, true, j.kernel.Source, nvrtc.Options{Name: j.kernel.Name + ".cu", Arch: "sm_90"})
		if err != nil {
			return err.Error()
		}
		for _, w := range []string{fmt.Sprintf(".reqnctapercluster 1, 1, %d", j.kernel.Config["SplitK"]), "ld.shared::cluster.v4.f32",
			"barrier.cluster.arrive.release.aligned", "barrier.cluster.wait.acquire.aligned", "mapa.shared::cluster.u32", "mma.sync.aligned", "cp.async"} {
			if !strings.Contains(res.PTX, w) {
				return fmt.Sprintf("PTX lacks %q", w)
			}
		}
		return ""
	})
}

// TestIGEMMDgradFold: the folded dgrad (Fold=1) of the golden shape (C=13,
// a row stride of 2, dilated columns) renders as kept in testdata and
// NVRTC-compiles for sm_80 and sm_90; its grid has no phase dimension and
// its columns are the SH·SW·C folded ones.
func TestIGEMMDgradFold(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	k := goldenIGEMMFold(t, problem.OpDgrad, 1)
	if k.Grid != [3]int{(2*8*17 + 63) / 64, 1, 1} || !strings.Contains(k.Source, "#define CF 26") {
		t.Errorf("folded grid %v (want the 8x17 phase pixels of 2 images by one tile of 26 columns)", k.Grid)
	}
	checkGolden(t, "TestIGEMMDgradFold", goldenPath("igemm", "igemm_dgrad_fold_fp16_nhwc_c13_k11_m64_n64_k32_w2x2_s3"), k.Source)
	compileForArchs(t, nvrtctest.Open(t), []compileJob{{"golden igemm dgrad fold", k}})
}
