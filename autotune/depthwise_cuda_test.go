//go:build cuda

package autotune

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// depthwiseModes are the (precision, layout) pairs the depthwise GPU tests
// tune: the two target modes, and the other precisions once each.
var depthwiseModes = []struct {
	prec problem.Precision
	lay  problem.Layout
}{
	{problem.FP32, problem.NCHW}, {problem.FP16, problem.NHWC},
}

// depthwiseKept is the depthwise family's kept candidates for p, as
// Enumerate admits them.
func depthwiseKept(t *testing.T, p problem.Problem, lim kernels.Limits) []kernels.Candidate {
	t.Helper()
	kept := keptOf(t, p, lim, "depthwise")
	if len(kept) == 0 {
		t.Fatal("no kept depthwise candidate")
	}
	return kept
}

// TestDepthwiseShapes tunes odd depthwise shapes through the depthwise
// family alone, pinned to up to 12 of its kept configurations covering
// every knob value (pinsCovering), in fp32 NCHW and fp16 NHWC (and each
// other precision in one layout on the first shape): every pinned
// candidate must pass the float64 checks within the precision's bound, and
// the winner must be a depthwise candidate. The shapes cover stride 2 on
// odd sizes, dilation 2, R ≠ S, channel multipliers 2 and 3, C = 1, odd C
// (element loads), asymmetric stride/pad/dilation, no bias, a 7x7 filter
// and a single output pixel.
func TestDepthwiseShapes(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	shapes := []string{
		"N=3,C=32,H=15,W=13,K=32,R=3,S=3,stride=2,pad=1,groups=32,bias=false",
		"N=2,C=24,H=20,W=21,K=24,R=3,S=3,pad=2,dilation=2,groups=24",
		"N=2,C=10,H=17,W=19,K=10,R=3,S=5,pad_h=1,pad_w=2,groups=10",
		"N=2,C=16,H=14,W=14,K=32,R=3,S=3,pad=1,groups=16",
		"N=1,C=7,H=31,W=29,K=21,R=3,S=2,stride_h=2,stride_w=3,pad_h=2,pad_w=1,dilation_w=2,groups=7",
		"N=4,C=1,H=23,W=17,K=1,R=3,S=3,pad=1,groups=1",
		"N=2,C=13,H=11,W=9,K=13,R=3,S=3,pad=1,groups=13",
		"N=2,C=96,H=28,W=28,K=96,R=7,S=7,pad=3,groups=96",
		"N=1,C=5,H=3,W=3,K=5,R=3,S=3,groups=5",
	}
	modes := depthwiseModes
	extra := []struct {
		prec problem.Precision
		lay  problem.Layout
	}{{problem.TF32, problem.NHWC}, {problem.TF32x3, problem.NCHW}, {problem.BF16, problem.NCHW}, {problem.BF16, problem.NHWC}}
	for i, text := range shapes {
		shape, err := problem.ParseShape(text)
		if err != nil {
			t.Fatal(err)
		}
		ms := modes
		if i == 0 {
			ms = append(append(ms[:0:0], modes...), extra...)
		}
		for _, m := range ms {
			p := problem.Problem{Shape: shape, Precision: m.prec, Layout: m.lay}
			t.Run(p.String(), func(t *testing.T) {
				pins := pinsCovering(depthwiseKept(t, p, lim))
				res, err := Tune(context.Background(), lib, Options{Problem: p,
					Worker: worker, Only: pins, Trials: 0, Runs: 10, Seed: 9, Timeout: 60 * time.Second})
				if err != nil {
					t.Fatalf("tune: %v", err)
				}
				if passed := checkTrials(t, p, res.Trials); passed != len(pins) {
					t.Errorf("%d of %d pinned depthwise candidates passed", passed, len(pins))
				}
				if res.Winner == nil || !strings.HasPrefix(res.Winner.ID, "depthwise/") {
					t.Fatalf("winner %v, want a depthwise candidate", res.Winner)
				}
			})
		}
	}
}

// TestDepthwiseMobileNet tunes every kept depthwise configuration of each
// MobileNetV2 depthwise shape (../bench/suites/mobilenetv2.txt, N=32) in
// fp32 NCHW and fp16 NHWC, checks them all against float64, and logs the
// winner's time and its bandwidth ((input + filter + output bytes) / time),
// to compare with the copy bandwidth (about 3.0 TB/s on an H100).
func TestDepthwiseMobileNet(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	f, err := os.Open("../bench/suites/mobilenetv2.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var shapes []problem.Shape
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		_, spec, ok := strings.Cut(line, "|")
		if line == "" || strings.HasPrefix(line, "#") || !ok {
			continue
		}
		s, err := problem.ParseShape("N=32," + strings.TrimSpace(spec))
		if err != nil {
			t.Fatal(err)
		}
		if s.Groups == s.C && s.C > 1 {
			shapes = append(shapes, s)
		}
	}
	if len(shapes) == 0 {
		t.Fatal("no depthwise shape in the MobileNetV2 suite")
	}
	for _, s := range shapes {
		for _, m := range depthwiseModes {
			p := problem.Problem{Shape: s, Precision: m.prec, Layout: m.lay}
			t.Run(p.String(), func(t *testing.T) {
				var pins []string
				for _, c := range depthwiseKept(t, p, lim) {
					pins = append(pins, c.ID())
				}
				res, err := Tune(context.Background(), lib, Options{Problem: p,
					Worker: worker, Only: pins, Trials: 0, Runs: 20, Seed: 9, Timeout: 60 * time.Second})
				if err != nil {
					t.Fatalf("tune: %v", err)
				}
				if passed := checkTrials(t, p, res.Trials); passed != len(pins) {
					t.Errorf("%d of %d depthwise candidates passed", passed, len(pins))
				}
				if res.Winner == nil {
					t.Fatal("no winner")
				}
				in, flt, _, out := s.Elements()
				bytes := float64(in+flt+out) * float64(p.Precision.ElementBytes())
				t.Logf("winner %s: %.4f ms, %.0f GB/s, error %.2e (%d candidates)",
					res.Winner.ID, res.Winner.MedianMS, bytes/res.Winner.MedianMS/1e6, res.Winner.RelError, len(pins))
			})
		}
	}
}
