package kernels

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// TestWGradMMAServes: wgradmma serves op=wgrad in tf32, 3xtf32, fp16 and bf16 with
// groups=1, keeps candidates for sm_90 and none for sm_80 (clusters), and
// declines the other ops, precisions and grouped shapes with a reason.
func TestWGradMMAServes(t *testing.T) {
	f := WgradMMA{}
	for _, prec := range []problem.Precision{problem.TF32, problem.TF32x3, problem.FP16, problem.BF16} {
		for _, lay := range problem.Layouts {
			p := gradProblem(t, flagshipSpec, prec, lay, problem.OpWgrad)
			if err := f.Serves(p); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if len(kept(f.Space(p, DefaultLimits(90)))) == 0 {
				t.Errorf("%s: no candidate kept for sm_90", p)
			}
			if k := kept(f.Space(p, DefaultLimits(80))); len(k) != 0 {
				t.Errorf("%s: %d candidates kept for sm_80, which has no clusters", p, len(k))
			}
		}
	}
	for _, p := range []problem.Problem{
		gradProblem(t, flagshipSpec, problem.TF32, problem.NCHW, problem.OpDgrad),
		gradProblem(t, flagshipSpec, problem.TF32, problem.NCHW, problem.OpFprop),
		gradProblem(t, flagshipSpec, problem.FP32, problem.NHWC, problem.OpWgrad),
		gradProblem(t, "N=2,C=8,H=9,W=9,K=8,R=3,S=3,groups=2", problem.TF32, problem.NCHW, problem.OpWgrad),
	} {
		if f.Serves(p) == nil {
			t.Errorf("wgradmma serves %s", p)
		}
	}
}

// TestWGradMMACompile renders wgradmma configurations for the flagship and
// odd shapes (bias and none, stride, dilation, asymmetric pads) in tf32 and
// 3xtf32, fp16 and bf16, both layouts (by default each shape and precision
// in one layout, in turn, so that each precision meets both layouts and
// each shape both; one configuration per problem in turn; every problem
// and configuration under the full sweep), and compiles them for sm_90
// (through the NVRTC servers, memoCompile): the PTX must hold the
// precision's mma and, for a cluster (Split > 1), the cluster barrier and the
// distributed shared-memory loads. Their results are checked on the GPU
// (autotune's TestGradShapes and TestWGradMMAShapes).
func TestWGradMMACompile(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	if !lib.SupportsArch("sm_90") {
		t.Skip("this NVRTC cannot target sm_90")
	}
	specs := []string{flagshipSpec, "N=3,C=5,H=19,W=23,K=24,R=3,S=5,stride_h=2,pad_h=1,pad_w=2,dilation_w=2,bias=false"}
	cfgs := []Config{
		{"BM": 96, "BN": 32, "WM": 2, "WN": 2, "Split": 8, "Unroll": 2, "Stage": 0},
		{"BM": 32, "BN": 16, "WM": 1, "WN": 1, "Split": 1, "Unroll": 1, "Stage": 1},
		{"BM": 64, "BN": 64, "WM": 4, "WN": 2, "Split": 4, "Unroll": 1, "Stage": 0},
		{"BM": 128, "BN": 32, "WM": 4, "WN": 1, "Split": 8, "Unroll": 1, "Stage": 1},
	}
	turn := 0
	for si, spec := range specs {
		for pi, prec := range []problem.Precision{problem.TF32, problem.TF32x3, problem.FP16, problem.BF16} {
			for li, lay := range problem.Layouts {
				if !fullSweep() && li != (si+pi)%2 {
					continue // one layout per shape and precision, in turn (both under the full sweep)
				}
				p := gradProblem(t, spec, prec, lay, problem.OpWgrad)
				for _, cfg := range sampleConfigs(cfgs, &turn) {
					k, ptx := renderPTX(t, lib, WgradMMA{}, p, cfg, "sm_90")
					mma := map[problem.Precision]string{problem.TF32: "m16n8k8.row.col.f32.tf32.tf32.f32", problem.TF32x3: "m16n8k8.row.col.f32.tf32.tf32.f32",
						problem.FP16: "m16n8k16.row.col.f32.f16.f16.f32", problem.BF16: "m16n8k16.row.col.f32.bf16.bf16.f32"}[prec]
					want := []string{".entry " + k.Name, "mma.sync.aligned." + mma}
					if cfg["Split"] > 1 {
						want = append(want, "barrier.cluster.arrive", "mapa.shared::cluster", "ld.shared::cluster", ".reqnctapercluster")
					}
					if cfg["Stage"] == 1 {
						want = append(want, "st.shared", "bar.sync")
					}
					for _, w := range want {
						if !strings.Contains(ptx, w) {
							t.Errorf("%s %v: PTX lacks %q", p, cfg, w)
						}
					}
				}
			}
		}
	}
}

// TestDgradMMA renders dgradmma for the flagship (16 stride phases of 3 or
// 2 taps per axis), a dilated shape whose phases have no taps at all, and
// odd shapes, in every tensor-core precision and both layouts (by default
// each shape and precision in one layout, in turn, so that each precision
// meets both layouts and each shape both; one configuration per problem in
// turn; every problem and configuration under the full sweep), and
// compiles them for sm_80 (through the NVRTC servers, memoCompile): the
// PTX must hold the precision's mma. Their results are checked on the GPU
// (autotune's TestGradShapes).
func TestDgradMMA(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	specs := []string{flagshipSpec,
		"N=2,C=6,H=15,W=16,K=20,R=2,S=3,stride=4,pad=1,dilation_h=4,bias=false", // row phases 2, 3 have no tap
		"N=3,C=13,H=19,W=23,K=17,R=3,S=5,stride_h=2,pad_h=1,pad_w=2,dilation_w=2"}
	cfgs := []Config{
		{"BM": 128, "BN": 8, "WM": 4, "WN": 1, "Unroll": 2, "Stage": 0},
		{"BM": 64, "BN": 32, "WM": 2, "WN": 2, "Unroll": 1, "Stage": 0},
		{"BM": 128, "BN": 8, "WM": 4, "WN": 1, "Unroll": 1, "Stage": 1},
		{"BM": 64, "BN": 32, "WM": 2, "WN": 2, "Unroll": 1, "Stage": 1},
	}
	turn := 0
	for si, spec := range specs {
		for pi, prec := range []problem.Precision{problem.TF32, problem.TF32x3, problem.FP16, problem.BF16} {
			for li, lay := range problem.Layouts {
				p := gradProblem(t, spec, prec, lay, problem.OpDgrad)
				if err := (DgradMMA{}).Serves(p); err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				if !fullSweep() && li != (si+pi)%2 {
					continue // one layout per shape and precision, in turn (both under the full sweep)
				}
				for _, cfg := range sampleConfigs(cfgs, &turn) {
					k, ptx := renderPTX(t, lib, DgradMMA{}, p, cfg, "sm_80")
					mma := map[problem.Precision]string{problem.TF32: "m16n8k8.row.col.f32.tf32.tf32.f32", problem.TF32x3: "m16n8k8.row.col.f32.tf32.tf32.f32",
						problem.FP16: "m16n8k16.row.col.f32.f16.f16.f32", problem.BF16: "m16n8k16.row.col.f32.bf16.bf16.f32"}[prec]
					if !strings.Contains(ptx, ".entry "+k.Name) || !strings.Contains(ptx, "mma.sync.aligned."+mma) {
						t.Errorf("%s %v: PTX lacks the entry or %q", p, cfg, mma)
					}
					if cfg["Stage"] == 1 && (!strings.Contains(ptx, "st.shared") || !strings.Contains(ptx, "bar.sync")) {
						t.Errorf("%s %v: Stage=1 PTX without shared-memory stores and barriers", p, cfg)
					}
				}
			}
		}
	}
	for _, p := range []problem.Problem{
		gradProblem(t, flagshipSpec, problem.TF32, problem.NCHW, problem.OpWgrad),
		gradProblem(t, flagshipSpec, problem.FP32, problem.NCHW, problem.OpDgrad),
		gradProblem(t, "N=2,C=8,H=9,W=9,K=8,R=3,S=3,groups=2", problem.FP16, problem.NHWC, problem.OpDgrad),
	} {
		if (DgradMMA{}).Serves(p) == nil {
			t.Errorf("dgradmma serves %s", p)
		}
	}
}

// renderPTX renders f's kernel of cfg for p and compiles it for arch
// (to PTX, on the NVRTC servers: memoCompile), failing the test where
// either fails; it returns the kernel and its PTX.
func renderPTX(t *testing.T, lib *nvrtc.Library, f Family, p problem.Problem, cfg Config, arch string) (Kernel, string) {
	t.Helper()
	k, err := f.Render(p, cfg)
	if err != nil {
		t.Fatalf("%s %v: %v", p, cfg, err)
	}
	res, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: arch})
	if err != nil {
		t.Fatalf("%s %v: %v", p, cfg, err)
	}
	return k, res.PTX
}

// sampleConfigs is the configurations a compile test renders for its next
// problem: all of them under the full sweep, else the next one in turn (so
// that every configuration meets several precisions and layouts).
func sampleConfigs(cfgs []Config, turn *int) []Config {
	if fullSweep() {
		return cfgs
	}
	c := cfgs[*turn%len(cfgs)]
	*turn++
	return []Config{c}
}

// TestWGradMMAGoldenSource keeps the CUDA source of wgradmma kernels in
// kernels/wgradmma/testdata (go test ./kernels -run TestWGradMMAGoldenSource
// -update rewrites them): a Stage=0 and a Stage=1 kernel, which the
// cp.async pipeline (Stage=2) must leave as they were (cached records
// render them), a Stage=2 kernel of each precision (and an NCHW one), and
// two with Clusters > 1 (the workspace reduction), and two in 3xtf32.
func TestWGradMMAGoldenSource(t *testing.T) {
	odd := "N=3,C=24,H=9,W=11,K=40,R=3,S=3,pad=1"
	for name, c := range map[string]struct {
		p   problem.Problem
		cfg Config
	}{
		"wgradmma_tf32_nchw_s0": {gradProblem(t, flagshipSpec, problem.TF32, problem.NCHW, problem.OpWgrad),
			Config{"BM": 96, "BN": 32, "WM": 2, "WN": 2, "Split": 8, "Unroll": 2, "Stage": 0}},
		"wgradmma_fp16_nhwc_s1": {gradProblem(t, gradShapes[3], problem.FP16, problem.NHWC, problem.OpWgrad),
			Config{"BM": 32, "BN": 16, "WM": 1, "WN": 1, "Split": 2, "Unroll": 1, "Stage": 1}},
		"wgradmma_fp16_nhwc_s2": {gradProblem(t, odd, problem.FP16, problem.NHWC, problem.OpWgrad),
			Config{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 2, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4}},
		"wgradmma_tf32_nhwc_s2": {gradProblem(t, odd+",bias=false", problem.TF32, problem.NHWC, problem.OpWgrad),
			Config{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 1, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 3}},
		"wgradmma_fp16_nchw_s2": {gradProblem(t, odd, problem.FP16, problem.NCHW, problem.OpWgrad),
			Config{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 2, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4}},
		// Clusters > 1: the reduction across clusters through the workspace,
		// with a cluster of 8 and (Split=1) with none.
		"wgradmma_tf32_nchw_s3_clusters": {gradProblem(t, flagshipSpec, problem.TF32, problem.NCHW, problem.OpWgrad),
			Config{"BM": 48, "BN": 128, "WM": 1, "WN": 4, "Split": 8, "Unroll": 1, "Stage": 3, "Clusters": 4}},
		"wgradmma_fp16_nhwc_s2_clusters": {gradProblem(t, odd, problem.FP16, problem.NHWC, problem.OpWgrad),
			Config{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 1, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4, "Clusters": 3}},
		// Stage=5: the window's gathers into wgmma's A registers, with
		// clusters and the workspace (tf32 NCHW, two sub-tiles) and an odd
		// first layer in fp16 NHWC (K=20: wgmma's N 24) with one cluster.
		"wgradmma_tf32_nchw_s5_clusters": {gradProblem(t, flagshipSpec, problem.TF32, problem.NCHW, problem.OpWgrad),
			Config{"BM": 96, "BN": 384, "WM": 12, "WN": 1, "Split": 8, "Clusters": 16, "Unroll": 1, "Stage": 5, "Stages": 3, "Band": 4}},
		"wgradmma_fp16_nhwc_s5": {gradProblem(t, "N=2,C=3,H=19,W=23,K=20,R=5,S=3,stride_h=2,stride_w=3,pad_h=2,pad_w=1,dilation_h=2", problem.FP16, problem.NHWC, problem.OpWgrad),
			Config{"BM": 24, "BN": 192, "WM": 12, "WN": 1, "Split": 2, "Unroll": 1, "Stage": 5, "Stages": 3, "Band": 2}},
		// 3xTF32: each k step's three mma summed from zero, added in FP32.
		"wgradmma_3xtf32_nchw_s3": {gradProblem(t, flagshipSpec, problem.TF32x3, problem.NCHW, problem.OpWgrad),
			Config{"BM": 48, "BN": 128, "WM": 1, "WN": 4, "Split": 8, "Unroll": 1, "Stage": 3}},
		"wgradmma_3xtf32_nhwc_s2": {gradProblem(t, odd, problem.TF32x3, problem.NHWC, problem.OpWgrad),
			Config{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 2, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4}},
	} {
		t.Run(name, func(t *testing.T) {
			k, err := WgradMMA{}.Render(c.p, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "TestWGradMMAGoldenSource", goldenPath(k.Family, name), k.Source)
		})
	}
}

// TestWGradMMAStepSums: in 3xtf32 every stage (0 to 3) sums each k step's
// three mma from zero and adds them to the accumulators in FP32, so its
// PTX holds three times tf32's mma.sync of the same configuration and FP32
// adds of the step sums; tf32, fp16 and bf16 accumulate in the tensor core
// (no step sums in their source), and dgradmma's 3xtf32 (short sums) too.
func TestWGradMMAStepSums(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	if !lib.SupportsArch("sm_90") {
		t.Skip("this NVRTC cannot target sm_90")
	}
	const stepSum = "acc[fm][fn][i] += d[i];"
	odd := "N=3,C=24,H=9,W=11,K=40,R=3,S=3,pad=1"
	for _, c := range []struct {
		spec string
		lay  problem.Layout
		cfg  Config
	}{
		{odd, problem.NCHW, Config{"BM": 64, "BN": 32, "WM": 2, "WN": 2, "Split": 2, "Unroll": 2, "Stage": 0}},
		{odd, problem.NHWC, Config{"BM": 32, "BN": 16, "WM": 1, "WN": 1, "Split": 1, "Unroll": 1, "Stage": 1}},
		{odd, problem.NHWC, Config{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 2, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4}},
		{flagshipSpec, problem.NCHW, Config{"BM": 48, "BN": 128, "WM": 1, "WN": 4, "Split": 8, "Unroll": 1, "Stage": 3}},
	} {
		x3 := gradProblem(t, c.spec, problem.TF32x3, c.lay, problem.OpWgrad)
		k3, ptx3 := renderPTX(t, lib, WgradMMA{}, x3, c.cfg, "sm_90")
		_, ptx1 := renderPTX(t, lib, WgradMMA{}, gradProblem(t, c.spec, problem.TF32, c.lay, problem.OpWgrad), c.cfg, "sm_90")
		n3, n1 := strings.Count(ptx3, "mma.sync.aligned"), strings.Count(ptx1, "mma.sync.aligned")
		if n1 == 0 || n3 != 3*n1 {
			t.Errorf("%s %v: %d mma.sync in 3xtf32, %d in tf32; want three times", x3, c.cfg, n3, n1)
		}
		if !strings.Contains(k3.Source, stepSum) || !strings.Contains(ptx3, "add.f32") {
			t.Errorf("%s %v: no FP32 step sums (%q, add.f32)", x3, c.cfg, stepSum)
		}
		for _, prec := range []problem.Precision{problem.TF32, problem.FP16, problem.BF16} {
			k, err := WgradMMA{}.Render(gradProblem(t, c.spec, prec, c.lay, problem.OpWgrad), c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(k.Source, stepSum) {
				t.Errorf("%s %v: %s sums its steps apart", prec, c.cfg, k.Name)
			}
		}
	}
	k, err := DgradMMA{}.Render(gradProblem(t, odd, problem.TF32x3, problem.NCHW, problem.OpDgrad),
		Config{"BM": 64, "BN": 32, "WM": 2, "WN": 2, "Unroll": 1, "Stage": 1})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(k.Source, stepSum) {
		t.Errorf("dgradmma 3xtf32 sums its steps apart: its cached kernels would change")
	}
}

// eightByteCopy matches an 8-byte cp.async in PTX.
var eightByteCopy = regexp.MustCompile(`cp\.async\.ca\.shared\.global(\.L2::\w+)? \[%r\d+\], \[%rd\d+\], 8,`)

// fourByteCopy matches a 4-byte cp.async in PTX.
var fourByteCopy = regexp.MustCompile(`cp\.async\.ca\.shared\.global(\.L2::\w+)? \[%r\d+\], \[%rd\d+\], 4,`)

// tf32Rounding matches wgmmaigemm's rounding of an operand to TF32 in PTX:
// half a TF32 unit (4096) added to a finite value's bits.
var tf32Rounding = regexp.MustCompile(`add\.s32\s+%r\d+, %r\d+, 4096;`)

// pipelineSpecs are the shapes TestWGradMMAPipeline* render Stage=2 for:
// ResNet-50's channel-heavy layers at N=32 (3×3 at 56², 14², 7²; 1×1
// 256→64 at 56² and 1024→256 at 14²) and an odd one (C=24, K=40: 16-byte
// copies, partial tiles, padding).
var pipelineSpecs = []string{
	"N=32,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,bias=false",
	"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1,bias=false",
	"N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1",
	"N=32,C=256,H=56,W=56,K=64,R=1,S=1,bias=false",
	"N=32,C=1024,H=14,W=14,K=256,R=1,S=1,bias=false",
	"N=3,C=24,H=9,W=11,K=40,R=3,S=3,pad=1",
}

// TestWGradMMAPipelineCompile renders the cp.async pipeline (Stage=2) for
// pipelineSpecs in fp16, bf16 and tf32 NHWC (by default each shape in two
// of the three precisions, in turn: each precision meets most shapes),
// with a cluster split and without (one configuration per problem in turn;
// every problem and configuration under the full sweep), and compiles it
// for sm_90: the PTX must hold the precision's mma, cp.async with its
// wait, ldmatrix.trans for fp16 and bf16, and the cluster's barrier and
// DSMEM loads where Split > 1. A 4-byte-aligned
// C=12 fp16 shape gets 8-byte copies, a 2-byte one (C=5) element copies
// of X (its dY rows, K=20, 8-byte ones); NCHW copies one element at a time
// (4-byte cp.async in tf32, element loads in fp16 and bf16).
func TestWGradMMAPipelineCompile(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	if !lib.SupportsArch("sm_90") {
		t.Skip("this NVRTC cannot target sm_90")
	}
	cfgs := []Config{
		{"BM": 128, "BN": 128, "WM": 2, "WN": 4, "Split": 2, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4},
		{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 1, "Unroll": 1, "Stage": 2, "BP": 64, "Stages": 3},
		{"BM": 64, "BN": 128, "WM": 2, "WN": 2, "Split": 8, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4},
		{"BM": 32, "BN": 32, "WM": 1, "WN": 1, "Split": 4, "Unroll": 1, "Stage": 2, "BP": 64, "Stages": 3},
	}
	turn := 0
	for si, spec := range append(pipelineSpecs, "N=2,C=12,H=9,W=9,K=20,R=3,S=3,pad=1") {
		for pi, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
			if !fullSweep() && (si+pi)%3 == 2 {
				continue // two of the three precisions per shape, in turn (the C=12 shape in fp16 and bf16; all under the full sweep)
			}
			p := gradProblem(t, spec, prec, problem.NHWC, problem.OpWgrad)
			for _, cfg := range sampleConfigs(cfgs, &turn) {
				k, ptx := renderPTX(t, lib, WgradMMA{}, p, cfg, "sm_90")
				want := []string{".entry " + k.Name, fmt.Sprintf("cp.async.wait_group %d;", cfg["Stages"]-2), "cp.async.commit_group", "bar.sync"}
				switch prec {
				case problem.TF32:
					want = append(want, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "cp.async.cg.shared.global")
				case problem.FP16:
					want = append(want, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16")
				case problem.BF16:
					want = append(want, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16")
				}
				if cfg["Split"] > 1 {
					want = append(want, "barrier.cluster.arrive", "mapa.shared::cluster", "ld.shared::cluster", ".reqnctapercluster")
				}
				for _, w := range want {
					if !strings.Contains(ptx, w) {
						t.Errorf("%s %v: PTX lacks %q", p, cfg, w)
					}
				}
				if p.Shape.C == 12 && prec != problem.TF32 && !eightByteCopy.MatchString(ptx) {
					t.Errorf("%s %v: PTX lacks an 8-byte cp.async (C=12 fp16 rows are 24 bytes)", p, cfg)
				}
			}
		}
	}
	for _, c := range []struct {
		spec   string
		prec   problem.Precision
		lay    problem.Layout
		va, vb int
		async  string // a cp.async the PTX must hold
	}{
		{"N=2,C=5,H=9,W=9,K=20,R=3,S=3,pad=1", problem.FP16, problem.NHWC, 4, 1, "cp.async.ca.shared.global"},
		{pipelineSpecs[5], problem.TF32, problem.NCHW, 1, 1, "cp.async.ca.shared.global"},
		{"N=2,C=3,H=31,W=29,K=16,R=11,S=11,stride=4,pad=2", problem.FP16, problem.NCHW, 1, 1, ""},
	} {
		p := gradProblem(t, c.spec, c.prec, c.lay, problem.OpWgrad)
		k, ptx := renderPTX(t, lib, WgradMMA{}, p, cfgs[1], "sm_90")
		if !strings.Contains(k.Source, fmt.Sprintf("#define VA %d ", c.va)) || !strings.Contains(k.Source, fmt.Sprintf("#define VB %d ", c.vb)) {
			t.Errorf("%s: want VA=%d, VB=%d", p, c.va, c.vb)
		}
		if !strings.Contains(ptx, "mma.sync.aligned") || !strings.Contains(ptx, "cp.async.wait_group") || (c.async != "" && !strings.Contains(ptx, c.async)) {
			t.Errorf("%s: PTX lacks mma.sync, the cp.async wait or %q", p, c.async)
		}
	}
}

// TestWGradMMAPipelineSpace: for the ResNet-50 layers (pipelineSpecs but
// the last) in NHWC fp16, bf16 and tf32 the space keeps 1 to 24 candidates
// for an H100, all Stage=2; NCHW and an NHWC fp16 shape whose C rows are
// 10 bytes (element copies) keep Stage=2 beside Stage 0 and 1 (element
// copies are not always faster); the small odd shape (whose Stage=2 tiles
// leave the SMs idle) keeps only Stage 0 and 1.
func TestWGradMMAPipelineSpace(t *testing.T) {
	lim := DefaultLimits(90)
	for _, spec := range pipelineSpecs[:len(pipelineSpecs)-1] {
		for _, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
			p := gradProblem(t, spec, prec, problem.NHWC, problem.OpWgrad)
			k := kept(WgradMMA{}.Space(p, lim))
			if len(k) == 0 || len(k) > 24 {
				t.Errorf("%s: %d candidates kept, want 1 to 24", p, len(k))
			}
			for _, c := range k {
				if c.Config["Stage"] != 2 {
					t.Errorf("%s: kept %s", p, c.ID())
				}
			}
		}
	}
	for _, c := range []struct {
		p            problem.Problem
		piped, other bool // Stage=2 kept; Stage 0 or 1 kept
	}{
		{gradProblem(t, pipelineSpecs[2], problem.FP16, problem.NCHW, problem.OpWgrad), true, true},
		{gradProblem(t, "N=8,C=5,H=37,W=41,K=256,R=3,S=3,pad=1", problem.FP16, problem.NHWC, problem.OpWgrad), true, true},
		{gradProblem(t, pipelineSpecs[len(pipelineSpecs)-1], problem.TF32, problem.NHWC, problem.OpWgrad), false, true},
	} {
		piped, other := false, false
		for _, cand := range kept(WgradMMA{}.Space(c.p, lim)) {
			switch cand.Config["Stage"] {
			case 2:
				piped = true
			case 0, 1:
				other = true
			}
		}
		if piped != c.piped || other != c.other {
			t.Errorf("%s: Stage=2 kept %v, Stage 0/1 kept %v; want %v, %v", c.p, piped, other, c.piped, c.other)
		}
	}
}

// TestWGradMMAClusters renders Clusters > 1 (the reduction across
// clusters through a workspace) for Stage=3 on the flagship and Stage=2 on
// an odd shape (Split=1, no cluster) and compiles them for sm_90: the grid
// holds Split·Clusters blocks per tile, the PTX the workspace and count in
// global memory, the atomic count and the L2 loads of the last block.
// Clusters=1 renders the kernel without them, under the ID without the
// knob. The space offers Clusters > 1 where a full cluster per tile
// leaves SMs idle (the flagship, ResNet-50's 56² 3x3) and not where the
// tiles fill them (ResNet-50's 7² 3x3: 148 tiles of 128x128).
func TestWGradMMAClusters(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	if !lib.SupportsArch("sm_90") {
		t.Skip("this NVRTC cannot target sm_90")
	}
	flagship := gradProblem(t, flagshipSpec, problem.TF32, problem.NCHW, problem.OpWgrad)
	odd := gradProblem(t, "N=3,C=24,H=9,W=11,K=40,R=3,S=3,pad=1", problem.FP16, problem.NHWC, problem.OpWgrad)
	for _, c := range []struct {
		p     problem.Problem
		cfg   Config
		gridZ int
	}{
		{flagship, Config{"BM": 48, "BN": 128, "WM": 1, "WN": 4, "Split": 8, "Unroll": 1, "Stage": 3, "Clusters": 4}, 32},
		{odd, Config{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 1, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4, "Clusters": 3}, 3},
	} {
		k, ptx := renderPTX(t, lib, WgradMMA{}, c.p, c.cfg, "sm_90")
		if k.Grid[2] != c.gridZ {
			t.Errorf("%s %v: grid z %d, want %d", c.p, c.cfg, k.Grid[2], c.gridZ)
		}
		for _, w := range []string{k.Name + "_ws[", k.Name + "_count[", "atom.global.add.u32", "ld.global.cg.f32"} {
			if !strings.Contains(ptx, w) {
				t.Errorf("%s %v: PTX lacks %q", c.p, c.cfg, w)
			}
		}
		one := maps.Clone(c.cfg)
		one["Clusters"] = 1
		k1, err := WgradMMA{}.Render(c.p, one)
		if err != nil {
			t.Fatal(err)
		}
		delete(one, "Clusters")
		k0, err := WgradMMA{}.Render(c.p, one)
		if err != nil {
			t.Fatal(err)
		}
		if k1.Source != k0.Source || k1.Config.String() != k0.Config.String() || strings.Contains(k1.Source, "_ws[") || k1.Grid[2] != c.cfg["Split"] {
			t.Errorf("%s: Clusters=1 renders %s, want the kernel without the knob (%s), no workspace", c.p, k1.Config, k0.Config)
		}
	}
	lim := DefaultLimits(90)
	for _, c := range []struct {
		p    problem.Problem
		want bool // some kept candidate has Clusters > 1
	}{
		{flagship, true},
		{gradProblem(t, flagshipSpec, problem.FP16, problem.NHWC, problem.OpWgrad), true},
		{gradProblem(t, pipelineSpecs[0], problem.FP16, problem.NHWC, problem.OpWgrad), true},
		{gradProblem(t, pipelineSpecs[2], problem.FP16, problem.NHWC, problem.OpWgrad), false},
	} {
		got := false
		for _, cand := range kept(WgradMMA{}.Space(c.p, lim)) {
			got = got || cand.Config["Clusters"] > 1
		}
		if got != c.want {
			t.Errorf("%s: a kept candidate with Clusters > 1: %v, want %v", c.p, got, c.want)
		}
	}
}

// TestWgradFFMAFallbackOnly: on sm_90, where wgradmma serves a tf32, fp16
// or bf16 wgrad, the FFMA wgrad family keeps one configuration (the
// fallback) and soft-rejects the rest, which measured 10–100× slower and
// took a short tune's budget; in fp32, which wgradmma does not serve, it
// keeps several.
func TestWgradFFMAFallbackOnly(t *testing.T) {
	lim := DefaultLimits(90)
	for _, c := range []struct {
		prec problem.Precision
		one  bool
	}{{problem.FP16, true}, {problem.TF32, true}, {problem.TF32x3, true}, {problem.BF16, true}, {problem.FP32, false}} {
		p := gradProblem(t, pipelineSpecs[0], c.prec, problem.NHWC, problem.OpWgrad)
		cands, err := Enumerate(p, lim)
		if err != nil {
			t.Fatal(err)
		}
		var ffma []string
		for _, cand := range cands {
			if cand.Family == "wgrad" && cand.Rejected == "" {
				ffma = append(ffma, cand.ID())
			}
		}
		if c.one && (len(ffma) != 1 || ffma[0] != "wgrad/Outs=4,Threads=64") {
			t.Errorf("%s: kept FFMA wgrad %v, want only wgrad/Outs=4,Threads=64", c.prec, ffma)
		}
		if !c.one && len(ffma) < 2 {
			t.Errorf("%s: kept FFMA wgrad %v, want several (wgradmma does not serve it)", c.prec, ffma)
		}
	}
}
