package kernels

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// TestWGradMMAWGMMA renders Stage=4 (wgmma m64nBNk16 reading both
// operands MN-major from the 128-byte swizzle) for fp16 and bf16 NHWC
// ResNet-50 layers and an odd shape (C=24, K=40, a bias column, stride 2
// and dilation 2 in the last), one configuration per problem in turn (all
// under the full sweep), and compiles it for sm_90a: the PTX holds the
// transposed wgmma of the tile's N, the async-proxy fence, 16-byte cp.async
// and, where Split > 1, the cluster's barrier and DSMEM loads, with
// Clusters > 1 the workspace's atomic count; with a bias where C·R·S is a
// multiple of BN, BiasSum=1 (dBias from the staged dY rows). The kernel asks for sm_90a.
// (NVRTC's front end checks it here; ptxas, which checks the inline PTX,
// runs on the GPU machine's NVRTC.)
func TestWGradMMAWGMMA(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	cfgs := []Config{
		{"BM": 128, "BN": 128, "WM": 8, "WN": 1, "Split": 2, "Unroll": 1, "Stage": 4, "BP": 32, "Stages": 5},
		{"BM": 64, "BN": 64, "WM": 4, "WN": 1, "Split": 1, "Unroll": 1, "Stage": 4, "BP": 64, "Stages": 4},
		{"BM": 128, "BN": 256, "WM": 8, "WN": 1, "Split": 8, "Unroll": 1, "Stage": 4, "BP": 32, "Stages": 5},
		{"BM": 64, "BN": 128, "WM": 4, "WN": 1, "Split": 8, "Unroll": 1, "Stage": 4, "BP": 64, "Stages": 4, "Clusters": 4},
		{"BM": 256, "BN": 128, "WM": 16, "WN": 1, "Split": 2, "Unroll": 1, "Stage": 4, "BP": 32, "Stages": 5},
	}
	specs := append(pipelineSpecs[:3:3], "N=3,C=24,H=9,W=11,K=40,R=3,S=3,pad=1", "N=2,C=16,H=13,W=12,K=24,R=3,S=3,stride=2,pad=2,dilation=2")
	turn := 0
	for _, spec := range specs {
		for _, prec := range []problem.Precision{problem.FP16, problem.BF16} {
			p := gradProblem(t, spec, prec, problem.NHWC, problem.OpWgrad)
			for _, cfg := range sampleConfigs(cfgs, &turn) {
				typ := map[problem.Precision]string{problem.FP16: "f16", problem.BF16: "bf16"}[prec]
				want := []string{fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s", cfg["BN"], typ, typ),
					"cp.async.cg.shared.global", fmt.Sprintf("cp.async.wait_group %d;", cfg["Stages"]-3)}
				if s := p.Shape; s.Bias && s.C*s.R*s.S%cfg["BN"] == 0 {
					// BiasSum=1: dBias summed from the staged dY rows
					// (fp16 converted to FP32 on the way).
					cfg = maps.Clone(cfg)
					cfg["BiasSum"] = 1
					if prec == problem.FP16 {
						want = append(want, "cvt.f32.f16")
					}
				}
				checkWGMMAPTX(t, lib, p, cfg, want, []string{"mma.sync"})
			}
		}
	}
}

// TestWGradMMAWGMMATF32 renders tf32's Stage=4 (the tile staged through
// registers, transposed and rounded to TF32 into the K-major 128-byte
// swizzle, wgmma m64nBNk8) for NHWC ResNet-50 layers and odd shapes (C=12,
// K=20 with a bias; stride 2 and dilation 2), one configuration per
// problem in turn (all under the full sweep), and compiles it for sm_90a:
// the PTX holds the K-major tf32 wgmma of the tile's N, the async-proxy
// fence, 16-byte global loads and no cp.async or mma.sync, and with Split
// > 1 the cluster's DSMEM loads; with a bias, BiasSum=1 (dBias summed
// from the staged dY rows); with PrefetchL2, the bulk L2 prefetches. (ptxas, which checks the inline PTX, runs on the GPU
// machine's NVRTC.)
func TestWGradMMAWGMMATF32(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	cfgs := []Config{
		{"BM": 128, "BN": 128, "WM": 8, "WN": 1, "Split": 2, "Unroll": 1, "Stage": 4, "BP": 32, "Stages": 3},
		{"BM": 64, "BN": 64, "WM": 4, "WN": 1, "Split": 1, "Unroll": 1, "Stage": 4, "BP": 64, "Stages": 3},
		{"BM": 256, "BN": 128, "WM": 16, "WN": 1, "Split": 8, "Unroll": 1, "Stage": 4, "BP": 32, "Stages": 3, "Clusters": 2, "PrefetchL2": 2},
		{"BM": 128, "BN": 256, "WM": 8, "WN": 1, "Split": 4, "Unroll": 1, "Stage": 4, "BP": 32, "Stages": 3},
	}
	specs := append(pipelineSpecs[1:3:3], "N=3,C=12,H=9,W=11,K=20,R=3,S=3,pad=1", "N=2,C=16,H=13,W=12,K=24,R=3,S=3,stride=2,pad=2,dilation=2")
	turn := 0
	for _, spec := range specs {
		p := gradProblem(t, spec, problem.TF32, problem.NHWC, problem.OpWgrad)
		for _, cfg := range sampleConfigs(cfgs, &turn) {
			want := []string{fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32", cfg["BN"]), "ld.global.nc.v4.f32"}
			if cfg["PrefetchL2"] > 0 {
				want = append(want, "cp.async.bulk.prefetch.L2.global")
			}
			if p.Shape.Bias && cfg["BN"] <= 128 { // BN=256's 128 accumulators leave no room for the sums
				// BiasSum=1: dBias summed from the staged dY rows, over a
				// row's chunks by shuffles, through the workspace's wsb
				// with Clusters > 1.
				cfg = maps.Clone(cfg)
				cfg["BiasSum"] = 1
				want = append(want, "shfl.sync.bfly.b32")
				if cfg["Clusters"] > 1 {
					want = append(want, "_wsb;") // the workspace's address taken in the code (its declaration reads "_wsb[")
				}
			}
			checkWGMMAPTX(t, lib, p, cfg, want, []string{"mma.sync", "cp.async.cg", "cp.async.ca"})
		}
	}
}

// checkWGMMAPTX renders configuration cfg of a Stage=4 kernel for p and
// compiles it for sm_90a: the kernel asks for sm_90a, and its PTX holds
// the entry, the async-proxy fence, wgmma.wait_group 1 and want, with
// Split > 1 the cluster's barrier and DSMEM loads, with Clusters > 1 the
// workspace's atomic count, and none of bad.
func checkWGMMAPTX(t *testing.T, lib *nvrtc.Library, p problem.Problem, cfg Config, want, bad []string) {
	t.Helper()
	k, ptx := renderPTX(t, lib, WgradMMA{}, p, cfg, "sm_90a")
	if k.ArchSuffix != "a" {
		t.Errorf("%s %v: arch suffix %q, want a (sm_90a)", p, cfg, k.ArchSuffix)
	}
	want = append([]string{".entry " + k.Name, "fence.proxy.async.shared::cta", "wgmma.wait_group.sync.aligned 1"}, want...)
	if cfg["Split"] > 1 {
		want = append(want, "barrier.cluster.arrive", "mapa.shared::cluster", "ld.shared::cluster")
	}
	if cfg["Clusters"] > 1 {
		want = append(want, k.Name+"_ws[", "atom.global.add.u32")
	}
	for _, w := range want {
		if !strings.Contains(ptx, w) {
			t.Errorf("%s %v: PTX lacks %q", p, cfg, w)
		}
	}
	for _, b := range bad {
		if strings.Contains(ptx, b) {
			t.Errorf("%s %v: PTX holds %s", p, cfg, b)
		}
	}
}

// TestWGradMMAWGMMASpace: on an H100 (sm_90a) the fp16, bf16 and tf32
// NHWC spaces of ResNet-50 layers keep Stage=4 candidates beside Stage=2's
// (soft-rejected in fp16 and bf16, kept in tf32); 3xtf32, NCHW, channel
// counts that are no whole 16-byte runs, tf32 tiles that are no whole
// 128-byte rows and a device without sm_90a keep none, and Render refuses
// them with the reason.
func TestWGradMMAWGMMASpace(t *testing.T) {
	// keptStage counts p's kept candidates of one Stage.
	keptStage := func(p problem.Problem, lim Limits, stage int) int {
		n := 0
		for _, c := range kept(WgradMMA{}.Space(p, lim)) {
			if c.Config["Stage"] == stage {
				n++
			}
		}
		return n
	}
	stage4 := func(p problem.Problem, lim Limits) int { return keptStage(p, lim, 4) }
	stage2 := func(p problem.Problem, lim Limits) int { return keptStage(p, lim, 2) }
	lim := h100Limits()
	for _, spec := range pipelineSpecs[:5] {
		for _, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
			p := gradProblem(t, spec, prec, problem.NHWC, problem.OpWgrad)
			if n := stage4(p, lim); n == 0 || n > 80 {
				t.Errorf("%s: %d Stage=4 candidates kept, want 1 to 80", p, n)
			}
			if n := stage2(p, lim); (n == 0) != (prec != problem.TF32) {
				t.Errorf("%s: %d Stage=2 candidates kept beside Stage=4's (want none in fp16 and bf16, some in tf32)", p, n)
			}
			noA := lim
			noA.SM90a = false
			if n := stage4(p, noA); n != 0 {
				t.Errorf("%s without sm_90a: %d Stage=4 candidates kept", p, n)
			}
		}
	}
	cfg := Config{"BM": 64, "BN": 64, "WM": 4, "WN": 1, "Split": 1, "Unroll": 1, "Stage": 4, "BP": 64, "Stages": 4}
	for _, c := range []struct {
		p    problem.Problem
		want string
	}{
		{gradProblem(t, pipelineSpecs[0], problem.TF32x3, problem.NHWC, problem.OpWgrad), "fp16, bf16 and tf32"},
		{gradProblem(t, pipelineSpecs[0], problem.FP16, problem.NCHW, problem.OpWgrad), "NHWC"},
		{gradProblem(t, "N=2,C=12,H=9,W=9,K=20,R=3,S=3,pad=1", problem.FP16, problem.NHWC, problem.OpWgrad), "multiples of 8"},
		{gradProblem(t, "N=2,C=6,H=9,W=9,K=20,R=3,S=3,pad=1", problem.TF32, problem.NHWC, problem.OpWgrad), "multiples of 4"},
	} {
		if n := stage4(c.p, lim); n != 0 {
			t.Errorf("%s: %d Stage=4 candidates kept", c.p, n)
		}
		if _, err := (WgradMMA{}).Render(c.p, cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Render = %v, want an error naming %q", c.p, err, c.want)
		}
	}
	// tf32 tiles of 16 pixels (no whole 128-byte row) or more stages.
	tf := gradProblem(t, pipelineSpecs[1], problem.TF32, problem.NHWC, problem.OpWgrad)
	for _, c := range []Config{
		{"BM": 64, "BN": 64, "WM": 4, "WN": 1, "Split": 1, "Unroll": 1, "Stage": 4, "BP": 16, "Stages": 3},
		{"BM": 64, "BN": 64, "WM": 4, "WN": 1, "Split": 1, "Unroll": 1, "Stage": 4, "BP": 32, "Stages": 5},
	} {
		if _, err := (WgradMMA{}).Render(tf, c); err == nil || !strings.Contains(err.Error(), "128-byte rows") {
			t.Errorf("%s %v: Render = %v, want an error naming 128-byte rows", tf, c, err)
		}
	}
}

// TestWGradMMACostSweeps holds wgradmma's cost model to measured data:
// testdata/wgradmma-sweeps-h100.csv has every kept candidate (Stage 2 and
// 4) of six ResNet-50 fp16 NHWC filter gradients at N=32 timed on an
// H100 (session 20, docs/performance.md). In each, the 8 cheapest kept
// candidates (ties in enumeration order, as the search takes them; those
// the sweep did not time count as misses) must hold one within 1% of the
// sweep's fastest, and the 3 cheapest one within 30% of it. (The BM=256
// tiles of the last four were timed in a second run, pinned.)
func TestWGradMMACostSweeps(t *testing.T) {
	sweeps := readSweeps(t, "testdata/wgradmma-sweeps-h100.csv", 6)
	lim := h100Limits()
	for _, sw := range sweeps {
		p := gradProblem(t, sw.shape, sw.precision, sw.layout, problem.OpWgrad)
		// The sweeps were timed before BiasSum, and before the clusters
		// that fill one wave (waveTwins: counts outside 2, 4, 8 and 16):
		// the kernels they measured.
		cands := slices.DeleteFunc(kept(WgradMMA{}.Space(p, lim)), func(c Candidate) bool {
			return c.Config["BiasSum"] == 1 || !slices.Contains([]int{0, 2, 4, 8, 16}, c.Config["Clusters"])
		})
		top := sw.topRatio(p, cands, lim)
		if r := top(8); r > 1.01 {
			t.Errorf("%s: the 8 cheapest of %d are %.1f%% slower than the fastest", p, len(cands), 100*(r-1))
		}
		if r := top(3); r > 1.30 {
			t.Errorf("%s: the 3 cheapest of %d are %.1f%% slower than the fastest", p, len(cands), 100*(r-1))
		}
	}
}

// TestWGradMMATF32CostSweeps holds tf32 Stage=4's cost model (tf32Cost)
// to measured data: testdata/wgradmma-tf32-sweeps-h100.csv has every kept
// Stage=4 candidate of four ResNet-50 tf32 NHWC filter gradients at N=32
// (bias) timed on an H100 (session 21, docs/performance.md). Among the
// Stage=4 candidates, the 3 cheapest must hold one within 1% of the
// sweep's fastest.
func TestWGradMMATF32CostSweeps(t *testing.T) {
	sweeps := readSweeps(t, "testdata/wgradmma-tf32-sweeps-h100.csv", 4)
	lim := h100Limits()
	for _, sw := range sweeps {
		p := gradProblem(t, sw.shape, sw.precision, sw.layout, problem.OpWgrad)
		var cands []Candidate
		for _, c := range kept(WgradMMA{}.Space(p, lim)) {
			if c.Config["Stage"] == 4 && c.Config["BiasSum"] == 0 {
				// The sweeps were timed before BiasSum and PrefetchL2:
				// the kernels they measured (the ones column), under the
				// IDs they were timed by (no PrefetchL2 knob; the model
				// ignores the prefetch, so the tiles rank alike).
				c.Config = maps.Clone(c.Config)
				delete(c.Config, "PrefetchL2")
				cands = append(cands, c)
			}
		}
		if r := sw.topRatio(p, cands, lim)(3); r > 1.01 {
			t.Errorf("%s: the 3 cheapest of %d Stage=4 candidates are %.1f%% slower than the fastest", p, len(cands), 100*(r-1))
		}
	}
}
