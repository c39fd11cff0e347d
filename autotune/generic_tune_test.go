//go:build !cuda

package autotune

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/problem"
)

// TestTuneGenericServes: problems only the generic family serves (grouped
// convolutions, in FP32 and in FP16 with odd channel counts) tune through it
// against the fake worker, and the winner is a generic candidate.
func TestTuneGenericServes(t *testing.T) {
	lib := nvrtctest.Open(t)
	for _, tc := range []struct {
		spec string
		prec problem.Precision
		lay  problem.Layout
	}{
		{"N=2,C=4,H=16,W=16,K=6,R=3,S=3,pad=1,groups=2", problem.FP32, problem.NCHW},
		{"N=1,C=26,H=12,W=12,K=22,R=3,S=3,pad=1,groups=2", problem.FP16, problem.NHWC},
	} {
		shape, err := problem.ParseShape(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		p := problem.Problem{Shape: shape, Precision: tc.prec, Layout: tc.lay}
		res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: fakeWorkerArgv(t),
			Trials: 3, Runs: 20, Seed: 7, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("%s: tune: %v", p, err)
		}
		if res.Winner == nil || !strings.HasPrefix(res.Winner.ID, "generic/") {
			t.Fatalf("%s: winner %v, want a generic candidate", p, res.Winner)
		}
		for _, tr := range res.Trials {
			if tr.Status == StatusOK && !strings.HasPrefix(tr.ID, "generic/") {
				t.Errorf("%s: %s measured, but only generic serves the problem", p, tr.ID)
			}
		}
	}
}
