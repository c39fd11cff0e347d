package pipeline

import (
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestUntunedFamily: the untuned default is igemm for a groups=1 tensor-core
// problem, depthwise for a depthwise layer (it was generic, several times
// slower on memory-bound layers) and generic for a grouped one.
func TestUntunedFamily(t *testing.T) {
	for _, tc := range []struct {
		shape     string
		precision problem.Precision
		want      string
	}{
		{"N=2,C=32,H=16,W=16,K=64,R=3,S=3,pad=1", problem.FP16, "igemm"},
		{"N=2,C=32,H=16,W=16,K=32,R=3,S=3,pad=1,groups=32", problem.FP32, "depthwise"},
		{"N=2,C=32,H=16,W=16,K=64,R=3,S=3,pad=1,groups=32", problem.FP16, "depthwise"},
		{"N=2,C=32,H=16,W=16,K=64,R=3,S=3,pad=1,groups=4", problem.FP32, "generic"},
	} {
		s, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		p := problem.Problem{Shape: s, Precision: tc.precision, Layout: problem.NHWC}
		c, _, err := untunedKernel(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if c.Family != tc.want {
			t.Errorf("%s: untuned family %s, want %s", p, c.Family, tc.want)
		}
	}
}
