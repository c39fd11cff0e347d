package convrttest

import (
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestWindowOf checks windowOf against the definition on small shapes with
// groups, strides, padding and dilation: output (n, k, p, q) reads
// in[n][c][h][w] when c is in k's group and some tap (r, s) of the
// output's window lands on (h, w).
func TestWindowOf(t *testing.T) {
	for _, spec := range []string{
		"N=2,C=4,H=7,W=6,K=6,R=3,S=3,pad=1,groups=2",
		"N=1,C=3,H=9,W=11,K=2,R=3,S=2,stride_h=2,stride_w=3,pad_h=2,pad_w=1,dilation_h=2",
		"N=1,C=8,H=5,W=5,K=8,R=1,S=1,stride=2,groups=8",
	} {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		p := problem.Problem{Shape: s, Precision: problem.FP32, Layout: problem.NCHW}
		cg, kg := s.C/s.Groups, s.K/s.Groups
		for n := range s.N {
			for c := range s.C {
				for h := range s.H {
					for w := range s.W {
						win := windowOf(p, n, c, h, w)
						for a := range allOutputs(s) {
							want := false
							if a.N == n && a.K/kg == c/cg {
								for r := range s.R {
									for u := range s.S {
										if a.P*s.StrideH-s.PadH+r*s.DilationH == h && a.Q*s.StrideW-s.PadW+u*s.DilationW == w {
											want = true
										}
									}
								}
							}
							if got := win.holds(a); got != want {
								t.Fatalf("%s: in[%d][%d][%d][%d], out %+v: holds %v, want %v", spec, n, c, h, w, a, got, want)
							}
						}
					}
				}
			}
		}
	}
}
