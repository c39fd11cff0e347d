package kernels

import (
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestWinogradServes checks which shapes the family takes: at most three
// filter taps per stride phase, dilation 1, fp32 only.
func TestWinogradServes(t *testing.T) {
	for _, tc := range []struct {
		shape string
		prec  problem.Precision
		want  string // "" for served, else a fragment of the reason
	}{
		{"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2", problem.FP32, ""},
		{"N=2,C=5,H=19,W=23,K=20,R=3,S=3,pad=1", problem.FP32, ""},
		{"N=2,C=3,H=60,W=64,K=32,R=7,S=7,stride=4,pad=3", problem.FP32, ""},
		{"N=2,C=3,H=60,W=64,K=32,R=7,S=7,stride=2,pad=3", problem.FP32, "at most 3 filter taps per stride phase, not 4x4"},
		{"N=2,C=3,H=60,W=64,K=32,R=3,S=3,dilation=2", problem.FP32, "dilation 1"},
		{"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2", problem.TF32, "only fp32"},
	} {
		s, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		err = Winograd{}.Serves(problem.Problem{Shape: s, Precision: tc.prec, Layout: problem.NCHW})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %s: %v, want served", tc.shape, tc.prec, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %s: error %v, want one containing %q", tc.shape, tc.prec, err, tc.want)
		}
	}
}

// TestWinogradArithmetic checks that the family keeps no candidate where it
// would not save multiplies: 4·StrideH·StrideW ≥ R·S (a 7×7 filter at
// stride 4, a 1×1 filter), and keeps some where it does.
func TestWinogradArithmetic(t *testing.T) {
	for _, tc := range []struct {
		shape string
		keeps bool
	}{
		{"N=2,C=3,H=60,W=64,K=32,R=7,S=7,stride=4,pad=3", false},
		{"N=2,C=8,H=20,W=20,K=32,R=1,S=1", false},
		{"N=2,C=3,H=61,W=67,K=24,R=11,S=11,stride=4,pad=2", true},
		{"N=2,C=5,H=19,W=23,K=20,R=3,S=3,pad=1", true},
	} {
		s, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		cands := Winograd{}.Space(problem.Problem{Shape: s, Precision: problem.FP32, Layout: problem.NCHW}, DefaultLimits(90))
		if got := len(kept(cands)) > 0; got != tc.keeps {
			t.Errorf("%s: keeps candidates %v, want %v", tc.shape, got, tc.keeps)
		}
		if !tc.keeps {
			for _, c := range cands {
				if !strings.HasPrefix(c.Rejected, "arithmetic:") {
					t.Errorf("%s: %s rejected for %q, want the arithmetic reason", tc.shape, c.ID(), c.Rejected)
				}
			}
		}
	}
}
