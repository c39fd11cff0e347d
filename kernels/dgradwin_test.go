package kernels

import (
	"fmt"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/kernels/dgradwin"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// TestDgradWinSpace: dgradwin serves strided data gradients (not strict
// fp32) whose every phase meets a tap and whose folded columns fit one
// wgmma (the flagship's 48), refuses the rest with a reason, and keeps its
// candidates
// out of the search — rejected as unverified (not yet run on a GPU), also
// through Enumerate (which admits a family's soft-rejected candidates
// where it keeps none) — while every one that no other rule rejects
// renders, with the flagship's aligned 3 × 3 offsets, on the grid of its
// 57 × 57 phase grid.
func TestDgradWinSpace(t *testing.T) {
	lim := DefaultLimits(90)
	lim.SM90a = true
	prob := func(spec string, prec problem.Precision, lay problem.Layout) problem.Problem {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		s.Bias = false
		return problem.Problem{Shape: s, Precision: prec, Layout: lay, Op: problem.OpDgrad}
	}
	flagship := "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2"
	for _, tc := range []struct {
		p    problem.Problem
		want string
	}{
		{prob(flagship, problem.FP32, problem.NHWC), "not strict fp32"},
		{prob("N=2,C=80,H=28,W=28,K=32,R=3,S=3,stride=2,pad=1", problem.TF32, problem.NHWC), "at most 256"},
		{prob("N=2,C=8,H=28,W=28,K=32,R=3,S=3,pad=1", problem.TF32, problem.NHWC), "strided"},
		{prob("N=2,C=8,H=28,W=28,K=32,R=1,S=1,stride=2", problem.TF32, problem.NCHW), "meet none"},
	} {
		if err := (DgradWin{}).Serves(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Serves = %v, want a refusal naming %q", tc.p, err, tc.want)
		}
	}
	for _, lay := range []problem.Layout{problem.NCHW, problem.NHWC} {
		p := prob(flagship, problem.TF32, lay)
		if err := (DgradWin{}).Serves(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		cands, err := Enumerate(p, lim)
		if err != nil {
			t.Fatal(err)
		}
		pinnable := 0
		for _, c := range cands {
			if c.Family != "dgradwin" {
				continue
			}
			if c.Rejected == "" || c.Rejection.Soft {
				t.Errorf("%s %s: %q, want it rejected (hard) until it has run on a GPU", p, c.ID(), c.Rejected)
			}
			if c.Rejection.Rule != dgradwin.Unverified {
				continue
			}
			pinnable++
			k, err := RenderCandidate(p, c)
			if err != nil {
				t.Fatalf("%s %s: %v", p, c.ID(), err)
			}
			want := [3]int{1, (57 + c.Config["TM"] - 1) / c.Config["TM"], 256}
			if k.Grid != want || k.ArchSuffix != "a" {
				t.Errorf("%s %s: grid %v arch suffix %q, want %v and sm_90a", p, c.ID(), k.Grid, k.ArchSuffix, want)
			}
			for _, d := range []string{"#define NDP 3", "#define NDQ 3", "#define HP 57", "#define NB 48", "SHIFT_H[STRIDE_H] = {0, 0, 1, 1}"} {
				if !strings.Contains(k.Source, d) {
					t.Errorf("%s %s: source lacks %q", p, c.ID(), d)
				}
			}
		}
		if pinnable == 0 {
			t.Errorf("%s: no pinnable candidate", p)
		}
	}
}

// TestDgradWinFrontEnd runs dgradwin kernels through NVRTC's front end
// for sm_90a (the static_asserts hold; the PTX holds the entry, the
// m64n{NB}k8 tf32 or k16 16-bit wgmma, the rounding to TF32, 3xtf32's
// split or the 16-bit output's rounding, and the async-proxy fence):
// the flagship in both layouts and in 3xtf32, asymmetric strides with
// dilation (NB 16) and a 7×7 stride-2 stem in 3xtf32, the flagship in
// fp16 NHWC and the asymmetric strides in bf16 NCHW, each with its last
// configuration (and its first under the full sweep).
func TestDgradWinFrontEnd(t *testing.T) {
	t.Parallel()
	lib := nvrtctest.Open(t)
	lim := DefaultLimits(90)
	lim.SM90a = true
	for _, c := range []struct {
		spec string
		prec problem.Precision
		lay  problem.Layout
		nb   int
	}{
		{"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2", problem.TF32, problem.NCHW, 48},
		{"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2", problem.TF32, problem.NHWC, 48},
		{"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2", problem.TF32x3, problem.NCHW, 48},
		{"N=3,C=2,H=19,W=23,K=17,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_w=2", problem.TF32, problem.NCHW, 16},
		{"N=2,C=3,H=40,W=40,K=64,R=7,S=7,stride=2,pad=3", problem.TF32x3, problem.NHWC, 16},
		{"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2", problem.FP16, problem.NHWC, 48},
		{"N=3,C=2,H=19,W=23,K=17,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_w=2", problem.BF16, problem.NCHW, 16},
	} {
		s, err := problem.ParseShape(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		s.Bias = false
		p := problem.Problem{Shape: s, Precision: c.prec, Layout: c.lay, Op: problem.OpDgrad}
		var unverified []Candidate // the configurations only the unverified rule rejects
		for _, cand := range (DgradWin{}).Space(p, lim) {
			if cand.Rejection.Rule == dgradwin.Unverified {
				unverified = append(unverified, cand)
			}
		}
		if len(unverified) == 0 {
			t.Fatalf("%s: no pinnable candidate", p)
		}
		picks := []Candidate{unverified[len(unverified)-1]}
		if fullSweep() {
			picks = append(picks, unverified[0])
		}
		for _, cand := range picks {
			k, err := RenderCandidate(p, cand)
			if err != nil {
				t.Fatalf("%s %s: %v", p, cand.ID(), err)
			}
			res, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90" + k.ArchSuffix})
			if err != nil {
				t.Errorf("%s %s: front end: %v", p, cand.ID(), err)
				continue
			}
			round, mma := "cvt.rna.tf32.f32", fmt.Sprintf("m64n%dk8.f32.tf32.tf32", c.nb) // tf32: rounded as staged
			switch c.prec {
			case problem.TF32x3:
				round = "-8192" // 3xtf32: the high part's mask, 0xffffe000
			case problem.FP16:
				round, mma = "cvt.rn.f16.f32", fmt.Sprintf("m64n%dk16.f32.f16.f16", c.nb) // the output's rounding
			case problem.BF16:
				round, mma = "cvt.rn.bf16.f32", fmt.Sprintf("m64n%dk16.f32.bf16.bf16", c.nb)
			}
			for _, want := range []string{".entry " + k.Name, "wgmma.mma_async.sync.aligned." + mma, round, "fence.proxy.async"} {
				if !strings.Contains(res.PTX, want) {
					t.Errorf("%s %s: PTX lacks %q", p, cand.ID(), want)
				}
			}
		}
	}
}
