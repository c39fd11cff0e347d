package kernels

import (
	"fmt"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// wgmmaIGEMMShapes are channel-heavy NHWC shapes of the kind wgmmaigemm is
// for (ResNet-50's, at N=32), and odd ones its predication must handle.
var wgmmaIGEMMShapes = []string{
	"N=32,C=64,H=56,W=56,K=64,R=3,S=3,pad=1",
	"N=32,C=256,H=56,W=56,K=512,R=1,S=1,stride=2,bias=false",
	"N=32,C=512,H=7,W=7,K=2048,R=1,S=1",
	"N=3,C=24,H=19,W=23,K=40,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=2,dilation_h=2",
	"N=1,C=8,H=9,W=9,K=13,R=3,S=3,pad=1",
}

// TestWGMMAIGEMMServes checks which problems the family serves and that
// every shape above keeps candidates on sm_90a in fp16, bf16 and tf32 NHWC.
func TestWGMMAIGEMMServes(t *testing.T) {
	lim := DefaultLimits(90)
	lim.SM90a = true
	f := WGMMAIGEMM{}
	for _, spec := range wgmmaIGEMMShapes {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
			p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NHWC}
			if err := f.Serves(p); err != nil {
				t.Errorf("%s %s: %v", spec, prec, err)
				continue
			}
			if len(kept(f.Space(p, lim))) == 0 {
				t.Errorf("%s %s: no candidate kept", spec, prec)
			}
		}
	}
	s, _ := problem.ParseShape("N=2,C=12,H=9,W=9,K=16,R=3,S=3")
	for _, p := range []problem.Problem{
		{Shape: s, Precision: problem.FP16, Layout: problem.NCHW},   // layout
		{Shape: s, Precision: problem.TF32x3, Layout: problem.NHWC}, // precision
		{Shape: s, Precision: problem.FP16, Layout: problem.NHWC},   // C=12 is no multiple of 8
	} {
		if f.Serves(p) == nil {
			t.Errorf("%s: served, want declined", p)
		}
	}
	if p := (problem.Problem{Shape: s, Precision: problem.TF32, Layout: problem.NHWC}); f.Serves(p) != nil {
		t.Errorf("%s: declined: %v", p, f.Serves(p))
	}
	p := problem.Problem{Shape: s, Precision: problem.TF32, Layout: problem.NHWC}
	for _, c := range f.Space(p, DefaultLimits(90)) {
		if !strings.HasPrefix(c.Rejected, "arch:") {
			t.Errorf("%s without SM90a: %q, want an arch rejection", c.ID(), c.Rejected)
		}
	}
}

// TestWGMMAIGEMMFrontEnd runs a few kept configurations of every shape and
// precision above through NVRTC's front end for sm_90a and checks the
// wgmma of the configuration's N in the PTX (ptxas, which checks the inline
// PTX, runs on the GPU machine's NVRTC).
func TestWGMMAIGEMMFrontEnd(t *testing.T) {
	lib := nvrtctest.Open(t)
	lim := DefaultLimits(90)
	lim.SM90a = true
	var jobs []compileJob
	for i, spec := range wgmmaIGEMMShapes {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for j, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
			p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NHWC}
			k := kept(WGMMAIGEMM{}.Space(p, lim))
			// One configuration per (shape, precision), rotating through the
			// kept ones; all of them with the full sweep.
			if !fullSweep() && len(k) > 0 {
				k = k[(3*i+j)%len(k) : (3*i+j)%len(k)+1]
			}
			for _, c := range k {
				kern, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("%s %s: %v", p, c.ID(), err)
				}
				jobs = append(jobs, compileJob{fmt.Sprintf("%s %s", p, c.ID()), kern})
			}
		}
	}
	runCompileJobs(t, jobs, func(j compileJob) string {
		res, err := lib.CompilePTX(j.kernel.Source, nvrtc.Options{Name: j.kernel.Name + ".cu", Arch: "sm_90a"})
		if err != nil {
			return "front end: " + err.Error()
		}
		k := "k16"
		if strings.Contains(j.id, "tf32") {
			k = "k8"
		}
		want := fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%d%s", j.kernel.Config["BN"], k)
		if !strings.Contains(res.PTX, want) || !strings.Contains(res.PTX, "cp.async.cg.shared.global") {
			return fmt.Sprintf("PTX lacks %q or 16-byte cp.async", want)
		}
		return ""
	})
}
