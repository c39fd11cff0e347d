package kernels

import (
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// TestWGradMMAServes: wgradmma serves op=wgrad in tf32, fp16 and bf16 (not 3xtf32) with
// groups=1, keeps candidates for sm_90 and none for sm_80 (clusters), and
// declines the other ops, precisions and grouped shapes with a reason.
func TestWGradMMAServes(t *testing.T) {
	f := WgradMMA{}
	for _, prec := range []problem.Precision{problem.TF32, problem.FP16, problem.BF16} {
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
		gradProblem(t, flagshipSpec, problem.TF32x3, problem.NCHW, problem.OpWgrad),
		gradProblem(t, "N=2,C=8,H=9,W=9,K=8,R=3,S=3,groups=2", problem.TF32, problem.NCHW, problem.OpWgrad),
	} {
		if f.Serves(p) == nil {
			t.Errorf("wgradmma serves %s", p)
		}
	}
}

// TestWGradMMACompile renders wgradmma configurations for the flagship and
// odd shapes (bias and none, stride, dilation, asymmetric pads) in tf32 and
// fp16 and bf16, both layouts (one configuration per problem in turn; all
// under the full sweep), and compiles them for sm_90: the PTX must hold the
// precision's mma and, for a cluster (Split > 1), the cluster barrier and the
// distributed shared-memory loads. Their results are checked on the GPU
// (autotune's TestGradShapes and TestWGradMMAShapes).
func TestWGradMMACompile(t *testing.T) {
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
	for _, spec := range specs {
		for _, prec := range []problem.Precision{problem.TF32, problem.FP16, problem.BF16} {
			for _, lay := range problem.Layouts {
				p := gradProblem(t, spec, prec, lay, problem.OpWgrad)
				for _, cfg := range sampleConfigs(cfgs, &turn) {
					k, err := WgradMMA{}.Render(p, cfg)
					if err != nil {
						t.Fatalf("%s %v: %v", p, cfg, err)
					}
					res, err := lib.CompilePTX(k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90"})
					if err != nil {
						t.Fatalf("%s %v: %v", p, cfg, err)
					}
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
						if !strings.Contains(res.PTX, w) {
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
// odd shapes, in every tensor-core precision and both layouts (one
// configuration per problem in turn; all under the full sweep), and
// compiles them for sm_80: the PTX must hold the
// precision's mma. Their results are checked on the GPU (autotune's
// TestGradShapes).
func TestDgradMMA(t *testing.T) {
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
	for _, spec := range specs {
		for _, prec := range []problem.Precision{problem.TF32, problem.TF32x3, problem.FP16, problem.BF16} {
			for _, lay := range problem.Layouts {
				p := gradProblem(t, spec, prec, lay, problem.OpDgrad)
				if err := (DgradMMA{}).Serves(p); err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				for _, cfg := range sampleConfigs(cfgs, &turn) {
					k, err := DgradMMA{}.Render(p, cfg)
					if err != nil {
						t.Fatalf("%s %v: %v", p, cfg, err)
					}
					res, err := lib.CompilePTX(k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_80"})
					if err != nil {
						t.Fatalf("%s %v: %v", p, cfg, err)
					}
					mma := map[problem.Precision]string{problem.TF32: "m16n8k8.row.col.f32.tf32.tf32.f32", problem.TF32x3: "m16n8k8.row.col.f32.tf32.tf32.f32",
						problem.FP16: "m16n8k16.row.col.f32.f16.f16.f32", problem.BF16: "m16n8k16.row.col.f32.bf16.bf16.f32"}[prec]
					if !strings.Contains(res.PTX, ".entry "+k.Name) || !strings.Contains(res.PTX, "mma.sync.aligned."+mma) {
						t.Errorf("%s %v: PTX lacks the entry or %q", p, cfg, mma)
					}
					if cfg["Stage"] == 1 && (!strings.Contains(res.PTX, "st.shared") || !strings.Contains(res.PTX, "bar.sync")) {
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
