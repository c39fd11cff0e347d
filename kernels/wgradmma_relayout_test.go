package kernels

import (
	"strconv"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/problem"
)

// TestWGradMMARelayout checks wgradmma's relayout (Relayout=1): NCHW
// problems have relayed-out Stage=2 candidates and NHWC ones none; a
// configuration renders with the copies' padded channels, the problem's
// own in C_IN and K_IN, dW stored KCRS, and compiles for sm_90 (PTX) with
// both entries, the module globals (copies, tickets, prepared mark,
// claims) and the claims' compare-and-swap. Its results are checked on the
// GPU (autotune's TestWGradMMARelayout).
func TestWGradMMARelayout(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	if !lib.SupportsArch("sm_90") {
		t.Skip("this NVRTC cannot target sm_90")
	}
	lim := DefaultLimits(90)
	for _, tc := range []struct {
		spec string
		prec problem.Precision
		cfg  Config
	}{
		{"N=4,C=13,H=15,W=17,K=11,R=3,S=3,pad=1", problem.FP16, Config{"BM": 32, "BN": 32, "WM": 1, "WN": 1, "Split": 8, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4, "Clusters": 2, "Relayout": 1}},
		{"N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1,bias=false", problem.BF16, Config{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 1, "Unroll": 1, "Stage": 2, "BP": 64, "Stages": 3, "Relayout": 1}},
		{"N=3,C=20,H=9,W=7,K=24,R=1,S=1,stride=2", problem.TF32, Config{"BM": 32, "BN": 32, "WM": 1, "WN": 1, "Split": 4, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4, "Relayout": 1}},
	} {
		p := gradProblem(t, tc.spec, tc.prec, problem.NCHW, problem.OpWgrad)
		relayed := 0
		for _, c := range (WgradMMA{}).Space(p, lim) {
			if c.Config["Relayout"] == 1 {
				relayed++
			}
		}
		if relayed == 0 {
			t.Errorf("%s: no relayed-out candidate", p)
		}
		nhwc := p
		nhwc.Layout = problem.NHWC
		for _, c := range (WgradMMA{}).Space(nhwc, lim) {
			if c.Config["Relayout"] == 1 && c.Rejection.Rule == "" {
				t.Errorf("%s: a kept relayed-out candidate %v", nhwc, c.Config)
			}
		}
		if _, err := (WgradMMA{}).Render(nhwc, tc.cfg); err == nil {
			t.Errorf("%s: Relayout=1 rendered", nhwc)
		}
		k, ptx := renderPTX(t, lib, WgradMMA{}, p, tc.cfg, "sm_90")
		v := 16 / p.Precision.ElementBytes()
		pad := func(n int) int { return (n + v - 1) / v * v }
		for _, want := range []string{
			"#define C " + strconv.Itoa(pad(p.Shape.C)) + "\n", "#define K " + strconv.Itoa(pad(p.Shape.K)) + "\n",
			"#define C_IN " + strconv.Itoa(p.Shape.C) + " ", "#define K_IN " + strconv.Itoa(p.Shape.K) + " ",
			"#define NHWC 1", "dw[(k * C_IN + c) * (R * S) + rs]", "relayout(x, dy,",
		} {
			if !strings.Contains(k.Source, want) {
				t.Errorf("%s %v: the source lacks %q", p, tc.cfg, want)
			}
		}
		for _, want := range []string{".entry " + k.Name + "(", ".entry " + k.Name + "_prologue(", k.Name + "_x", k.Name + "_dy", k.Name + "_tickets",
			k.Name + "_prepared", k.Name + "_claimed", k.Name + "_copied", "atom.global.cas.b64", "ld.acquire.gpu"} {
			if !strings.Contains(ptx, want) {
				t.Errorf("%s %v: the PTX lacks %q", p, tc.cfg, want)
			}
		}
	}
}

// TestWGradMMAPlanes checks wgradmma's planes (Planes=1): an NCHW 1×1 at
// stride 1 without padding whose planes are whole 16-byte runs has such
// candidates, other shapes (a 3×3, a 14² map in fp16, NHWC) none; a
// configuration renders channel-major tiles read with 16-byte copies and
// compiles for sm_90 (PTX) with ldmatrix not transposed (fp16, bf16) and
// the precision's mma. Its results are checked on the GPU (autotune's
// TestWGradMMAPlanes).
func TestWGradMMAPlanes(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	if !lib.SupportsArch("sm_90") {
		t.Skip("this NVRTC cannot target sm_90")
	}
	lim := DefaultLimits(90)
	// servedPlanes counts p's planes candidates that no hard rule rejects.
	servedPlanes := func(p problem.Problem) int {
		n := 0
		for _, c := range (WgradMMA{}).Space(p, lim) {
			if c.Config["Planes"] == 1 && (c.Rejection.Rule == "" || c.Rejection.Soft) {
				n++ // kept, or pruned by a soft rule (a small shape's occupancy)
			}
		}
		return n
	}
	for _, tc := range []struct {
		spec string
		prec problem.Precision
		lay  problem.Layout
		cfg  Config // nil: no kept planes candidate
	}{
		{"N=4,C=64,H=28,W=28,K=128,R=1,S=1", problem.FP16, problem.NCHW, Config{"BM": 64, "BN": 64, "WM": 2, "WN": 2, "Split": 4, "Unroll": 1, "Stage": 2, "BP": 64, "Stages": 3, "Planes": 1}},
		{"N=3,C=13,H=8,W=9,K=11,R=1,S=1,bias=false", problem.BF16, problem.NCHW, Config{"BM": 32, "BN": 32, "WM": 1, "WN": 1, "Split": 2, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4, "Planes": 1}},
		{"N=4,C=24,H=14,W=14,K=40,R=1,S=1", problem.TF32, problem.NCHW, Config{"BM": 32, "BN": 32, "WM": 1, "WN": 1, "Split": 8, "Unroll": 1, "Stage": 2, "BP": 32, "Stages": 4, "Clusters": 2, "Planes": 1}},
		{"N=4,C=64,H=14,W=14,K=64,R=1,S=1", problem.FP16, problem.NCHW, nil},
		{"N=4,C=64,H=28,W=28,K=64,R=3,S=3,pad=1", problem.FP16, problem.NCHW, nil},
		{"N=4,C=64,H=28,W=28,K=64,R=1,S=1,stride=2", problem.FP16, problem.NCHW, nil},
		{"N=4,C=64,H=28,W=28,K=64,R=1,S=1", problem.FP16, problem.NHWC, nil},
	} {
		p := gradProblem(t, tc.spec, tc.prec, tc.lay, problem.OpWgrad)
		n := servedPlanes(p)
		if tc.cfg == nil {
			if n != 0 {
				t.Errorf("%s: %d planes candidates, want none", p, n)
			}
			continue
		}
		if n == 0 {
			t.Errorf("%s: no planes candidate", p)
		}
		k, ptx := renderPTX(t, lib, WgradMMA{}, p, tc.cfg, "sm_90")
		for _, want := range []string{"#define PLANES 1", "cp_async<16>(a + kk * PP + px", "x + (n * C + j) * PQ + pq"} {
			if !strings.Contains(k.Source, want) {
				t.Errorf("%s %v: the source lacks %q", p, tc.cfg, want)
			}
		}
		wantPTX := []string{"cp.async.cg.shared.global", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"}
		if p.Precision.ElementBytes() == 2 {
			wantPTX = []string{"cp.async.cg.shared.global", "ldmatrix.sync.aligned.m8n8.x4.shared.b16"}
		}
		for _, want := range wantPTX {
			if !strings.Contains(ptx, want) {
				t.Errorf("%s %v: the PTX lacks %q", p, tc.cfg, want)
			}
		}
		if strings.Contains(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans") {
			t.Errorf("%s %v: the PTX reads transposed fragments", p, tc.cfg)
		}
	}
}
