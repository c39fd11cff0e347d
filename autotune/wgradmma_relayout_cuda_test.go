//go:build cuda

package autotune

import (
	"testing"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// TestWGradMMARelayout tunes NCHW filter gradients through wgradmma's
// relayout alone (Relayout=1: X and dY copied to NHWC, channels
// zero-padded, the NHWC gradient on the copies, dW stored KCRS): the first,
// middle and last kept relayed-out candidates of each problem, each
// checked against the float64 reference launched alone (its blocks make
// the copies) and again after its prologue (the worker's re-check):
// ResNet-50's 3×3 and a strided 1×1 in fp16, odd channel counts with
// padding, stride and dilation in bf16 (and with a bias), and tf32.
func TestWGradMMARelayout(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	for _, tc := range []relayoutCase{
		{"N=8,C=64,H=56,W=56,K=64,R=3,S=3,pad=1", problem.FP16, "", ""},
		{"N=8,C=256,H=28,W=28,K=512,R=1,S=1,stride=2,bias=false", problem.FP16, "", ""},
		{"N=3,C=13,H=15,W=17,K=11,R=3,S=3,stride_h=2,pad=1,dilation_w=2", problem.BF16, "", ""},
		{"N=4,C=24,H=19,W=23,K=40,R=3,S=5,pad_h=1,pad_w=2", problem.TF32, "", ""},
	} {
		p := tc.problem(t)
		p.Op = problem.OpWgrad
		t.Run(p.String(), func(t *testing.T) {
			var relayed []kernels.Candidate
			for _, c := range keptOf(t, p, lim, "wgradmma") {
				if c.Config["Relayout"] == 1 {
					relayed = append(relayed, c)
				}
			}
			if len(relayed) == 0 {
				t.Fatal("no kept relayed-out wgradmma candidate")
			}
			res := tunePins(t, lib, worker, p, firstMiddleLast(relayed), nil, 7)
			for _, tr := range res.Trials {
				t.Logf("%s: %s %.4f ms", tr.ID, tr.Status, tr.MedianMS)
			}
		})
	}
}

// TestWGradMMAPlanes tunes NCHW 1×1 filter gradients at stride 1 through
// wgradmma's planes alone (Planes=1: both operands copied 16 bytes of
// pixels at a time from the channel planes, channel-major tiles): the
// first, middle and last of its configurations that no hard rule rejects,
// each checked against the float64 reference: a ResNet-50-like 1×1 on a
// 56² map in fp16, odd channel counts with a bias in bf16, a 14² map in
// tf32.
func TestWGradMMAPlanes(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	for _, tc := range []relayoutCase{
		{"N=4,C=256,H=56,W=56,K=128,R=1,S=1,bias=false", problem.FP16, "", ""},
		{"N=3,C=13,H=8,W=9,K=11,R=1,S=1", problem.BF16, "", ""},
		{"N=4,C=24,H=14,W=14,K=40,R=1,S=1", problem.TF32, "", ""},
	} {
		p := tc.problem(t)
		p.Op = problem.OpWgrad
		t.Run(p.String(), func(t *testing.T) {
			cands, err := kernels.Enumerate(p, lim)
			if err != nil {
				t.Fatal(err)
			}
			var planes []kernels.Candidate
			for _, c := range cands {
				if c.Family == "wgradmma" && c.Config["Planes"] == 1 && (c.Rejected == "" || c.Rejection.Soft) {
					planes = append(planes, c)
				}
			}
			if len(planes) == 0 {
				t.Fatal("no wgradmma planes candidate")
			}
			res := tunePins(t, lib, worker, p, firstMiddleLast(planes), nil, 9)
			for _, tr := range res.Trials {
				t.Logf("%s: %s %.4f ms", tr.ID, tr.Status, tr.MedianMS)
			}
		})
	}
}
