//go:build cuda

package autotune

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// TestOddShapes tunes small shapes with odd sizes, unequal strides, dilation,
// groups (depthwise too) and no bias, for every precision and layout a family
// serves (generic serves them all), once per serving family (pinned to the configurations pinsCovering picks): every
// measured candidate passed the float64 checks, and each run has a winner.
func TestOddShapes(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	shapes := []string{
		"N=3,C=5,H=37,W=41,K=24,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=2,dilation_w=2,bias=false",
		"N=2,C=3,H=60,W=64,K=32,R=7,S=7,stride=4,pad=3",
		// stride_w 4 (wgmma), odd width, odd pad_w, K not a multiple of 16.
		"N=3,C=2,H=45,W=51,K=24,R=5,S=6,stride=4,pad_h=2,pad_w=1,bias=false",
		// wgmmahalf: stride_w 4 and an even pad_w; S = 7 makes one 8-tap
		// block per filter row, so an odd count of blocks (15) ends in a
		// half-empty k step; dilated rows, partial tiles.
		"N=3,C=3,H=47,W=48,K=40,R=5,S=7,stride_h=3,stride_w=4,pad_h=1,pad_w=2,dilation_h=2,bias=false",
		// wgmma's RegisterA packs the C*R*S taps in 4-tap blocks: with S = 2
		// a block spans two or three filter rows (and channels).
		"N=2,C=3,H=30,W=34,K=16,R=3,S=2,stride=4,pad=1,bias=false",
		// winograd's stride phases: 11x11 at stride 4 (the last phase row
		// and column have two taps), odd sizes, partial tiles.
		"N=2,C=3,H=61,W=67,K=24,R=11,S=11,stride=4,pad=2,bias=false",
		// winograd at stride 1 (one phase, 3x3 taps): odd sizes, partial
		// 2x2 tiles at both edges, C=5 phase channels in one stage.
		"N=2,C=5,H=19,W=23,K=20,R=3,S=3,pad=1",
		// Shapes only the generic family serves (issue 19): grouped,
		// depthwise, depthwise with a channel multiplier, prime channel
		// counts, asymmetric stride/pad/dilation with K=17, a 1x1 on
		// a 7x7 map with odd channels, and a single output pixel.
		"N=2,C=12,H=15,W=17,K=18,R=3,S=3,stride_h=2,pad=1,dilation_w=2,groups=3",
		"N=3,C=32,H=14,W=13,K=32,R=3,S=3,stride=2,pad=1,groups=32,bias=false",
		"N=2,C=8,H=11,W=9,K=24,R=5,S=5,pad=2,groups=8",
		"N=3,C=13,H=19,W=23,K=11,R=3,S=3,pad=1",
		"N=2,C=6,H=21,W=25,K=17,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_h=2,bias=false",
		"N=4,C=45,H=7,W=7,K=70,R=1,S=1",
		"N=1,C=3,H=5,W=5,K=5,R=5,S=5,groups=1",
	}
	eachProblem(t, shapes, nil, func(p problem.Problem) {
		cands, err := kernels.Enumerate(p, lim)
		if err != nil {
			t.Errorf("%s: %v", p, err) // generic serves every valid shape
			return
		}
		byFamily := map[string][]kernels.Candidate{}
		for _, c := range cands {
			if c.Rejected == "" {
				byFamily[c.Family] = append(byFamily[c.Family], c)
			}
		}
		for fam, kept := range byFamily {
			pins := pinsCovering(kept)
			t.Run(p.String()+"/"+fam, func(t *testing.T) {
				res, err := Tune(context.Background(), lib, Options{Problem: p,
					Worker: worker, Only: pins, Trials: 0, Runs: 20, Seed: 3, Timeout: 30 * time.Second})
				if err != nil {
					t.Fatalf("tune: %v", err)
				}
				checkTrials(t, p, res.Trials)
				if res.Winner == nil {
					t.Fatal("no winner")
				}
				t.Logf("winner %s: %.4f ms, error %.2e", res.Winner.ID, res.Winner.MedianMS, res.Winner.RelError)
				for _, tr := range res.Trials {
					if tr.Status == StatusOK {
						t.Logf("ok %s: %.4f ms, error %.2e", tr.ID, tr.MedianMS, tr.RelError)
					}
				}
				// The fallback: a portable candidate whose PTX passed its
				// own check on this GPU, or a reason for none (always for
				// the sm_90a families run alone).
				switch fb := res.Fallback; {
				case fb == nil && res.FallbackNote == "":
					t.Error("no fallback and no reason")
				case fb == nil:
					t.Logf("no fallback: %s", res.FallbackNote)
				case fb.Kernel.ArchSuffix != "" || fb.Trial.Status != StatusOK || fb.Trial.RelError > p.ErrorBound() ||
					fb.Trial.SharedBytes > FallbackSharedLimit || !strings.Contains(fb.PTX, ".target sm_80"):
					t.Errorf("fallback %s (%s, error %.2e, %d B shared, arch suffix %q) does not qualify",
						fb.Trial.ID, fb.Trial.Status, fb.Trial.RelError, fb.Trial.SharedBytes, fb.Kernel.ArchSuffix)
				default:
					t.Logf("fallback %s as PTX for %s: %.4f ms, error %.2e", fb.Trial.ID, fb.Arch, fb.Trial.MedianMS, fb.Trial.RelError)
				}
			})
		}
	})
}

// pinsCovering picks the configurations of one family to measure: 4 spread
// evenly over its kept space, then one for each knob that only some
// configurations carry (RegisterA), then, greedily, one more for each knob
// value not yet among them (each staging path, producer count, ... of the
// family is run at least once), at most 12 in all.
func pinsCovering(kept []kernels.Candidate) []string {
	seen := map[string]bool{} // "knob=value" pairs covered
	var pins []string
	add := func(c kernels.Candidate) {
		pins = append(pins, c.ID())
		for k, v := range c.Config {
			seen[fmt.Sprintf("%s=%d", k, v)] = true
		}
	}
	for i := range min(4, len(kept)) {
		add(kept[i*len(kept)/min(4, len(kept))])
	}
	// Knobs that only some configurations carry (RegisterA, AGroup) first,
	// so that the cap below cannot leave them out.
	for _, c := range kept {
		for k := range c.Config {
			if !slices.ContainsFunc(pins, func(id string) bool { return strings.Contains(id, k+"=") }) {
				add(c)
				break
			}
		}
	}
	for _, c := range kept {
		if len(pins) >= 12 {
			break
		}
		if slices.Contains(pins, c.ID()) {
			continue
		}
		for k, v := range c.Config {
			if !seen[fmt.Sprintf("%s=%d", k, v)] {
				add(c)
				break
			}
		}
	}
	return pins
}

// TestLargeIndexShape tunes KernelBench's kb87-pointwise, whose output has
// exactly 2^31 elements (one more than 32-bit offsets reach), in fp32 NCHW,
// fp16 NHWC and tf32 NCHW: generic's 64-bit path and (fp16, tf32)
// wgmmaigemm's 64-bit image offsets serve it; two generic configurations
// and wgmmaigemm's first kept one must pass the float64 checks (the
// reference, fill, compare and gather kernels at 2^31 elements). About 28 GB of device memory in fp32
// (4 GiB input, 8 GiB output, 16 GiB float64 reference).
func TestLargeIndexShape(t *testing.T) {
	lib, worker, lim := gpuSetup(t)
	shape, err := problem.ParseShape("N=16,C=64,H=1024,W=1024,K=128,R=1,S=1,bias=false")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []problem.Problem{{Shape: shape, Precision: problem.FP32, Layout: problem.NCHW},
		{Shape: shape, Precision: problem.FP16, Layout: problem.NHWC}, {Shape: shape, Precision: problem.TF32, Layout: problem.NCHW}} {
		t.Run(p.String(), func(t *testing.T) {
			cands, err := kernels.Enumerate(p, lim)
			if err != nil {
				t.Fatal(err)
			}
			var kept []kernels.Candidate
			wgmma := ""
			for _, c := range cands {
				if c.Family != "generic" && c.Family != "wgmmaigemm" {
					t.Errorf("%s candidate %s for a 2^31-element output", c.Family, c.ID())
				}
				if c.Rejected == "" && c.Family == "generic" {
					kept = append(kept, c)
				}
				if c.Rejected == "" && c.Family == "wgmmaigemm" && wgmma == "" {
					wgmma = c.ID()
				}
			}
			if len(kept) == 0 {
				t.Fatal("no kept generic candidate")
			}
			if (wgmma == "") != (p.Precision == problem.FP32) {
				t.Errorf("kept wgmmaigemm candidate %q, want one in fp16 NHWC and tf32 NCHW (64-bit image offsets)", wgmma)
			}
			pins := []string{kept[0].ID(), kept[len(kept)-1].ID()}
			if wgmma != "" {
				pins = append(pins, wgmma)
			}
			res, err := Tune(context.Background(), lib, Options{Problem: p,
				Worker: worker, Only: pins, Trials: 0, Runs: 3, Seed: 5, Timeout: 120 * time.Second})
			if err != nil {
				t.Fatalf("tune: %v", err)
			}
			if passed := checkTrials(t, p, res.Trials); passed == 0 || res.Winner == nil {
				t.Fatalf("%d of %d trials passed, winner %v", passed, len(res.Trials), res.Winner)
			}
			t.Logf("winner %s: %.3f ms, error %.2e", res.Winner.ID, res.Winner.MedianMS, res.Winner.RelError)
		})
	}
}
