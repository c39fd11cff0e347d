package autotune

import (
	"math"
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestHostGradientMatchesScatter checks hostExpected of the gradient ops,
// for every value of small grouped, strided, dilated and padded shapes in
// both layouts (FP16 rounding included), against gradients accumulated
// independently by visiting every term of the forward convolution:
// dX[n,c,h,w] += dY·W, dW[k,c,r,s] += dY·X, dBias[k] += dY.
func TestHostGradientMatchesScatter(t *testing.T) {
	for _, spec := range []string{
		"N=2,C=6,H=7,W=6,K=9,R=3,S=2,stride_h=2,pad_w=1,dilation_h=2,groups=3",
		"N=1,C=3,H=9,W=8,K=4,R=3,S=3,stride=2,pad_h=2,pad_w=1",
		"N=2,C=4,H=5,W=5,K=4,R=3,S=3,pad=1,groups=4,bias=false",
	} {
		shape, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, lay := range problem.Layouts {
			for _, prec := range []problem.Precision{problem.FP32, problem.FP16} {
				const seed = 11
				dgrad := problem.Problem{Shape: shape, Precision: prec, Layout: lay, Op: problem.OpDgrad}
				wgrad := dgrad
				wgrad.Op = problem.OpWgrad
				in, f, _ := seeds(seed)
				v := func(i int, s uint32, sym bool) float64 { return roundTo(hostValue(int64(i), s, sym), prec) }
				x, w, _, _ := shape.Elements()
				dX, dW, dB := make([]float64, x), make([]float64, w), make([]float64, shape.K)
				cg, kg := shape.C/shape.Groups, shape.K/shape.Groups
				P, Q := shape.P(), shape.Q()
				for n := range shape.N {
					for k := range shape.K {
						for pp := range P {
							for q := range Q {
								yi := ((n*shape.K+k)*P+pp)*Q + q
								if lay == problem.NHWC {
									yi = ((n*P+pp)*Q+q)*shape.K + k
								}
								// dgrad reads dY as its "in", wgrad as its "filter".
								dyD, dyW := v(yi, in, true), v(yi, f, true)
								dB[k] += dyW
								for c := range cg {
									for r := range shape.R {
										for s := range shape.S {
											h := pp*shape.StrideH - shape.PadH + r*shape.DilationH
											ww := q*shape.StrideW - shape.PadW + s*shape.DilationW
											if h < 0 || h >= shape.H || ww < 0 || ww >= shape.W {
												continue
											}
											xc := k/kg*cg + c
											xi := ((n*shape.C+xc)*shape.H+h)*shape.W + ww
											fi := ((k*cg+c)*shape.R+r)*shape.S + s
											if lay == problem.NHWC {
												xi = ((n*shape.H+h)*shape.W+ww)*shape.C + xc
												fi = ((k*shape.R+r)*shape.S+s)*cg + c
											}
											dX[xi] += dyD * v(fi, f, true)
											dW[fi] += dyW * v(xi, in, false)
										}
									}
								}
							}
						}
					}
				}
				check := func(p problem.Problem, want []float64, base int) {
					for i, wv := range want {
						if got := hostExpected(p, seed, int64(base+i)); math.Abs(got-wv) > 1e-9 {
							t.Fatalf("%s value %d: %v, want %v", p, base+i, got, wv)
						}
					}
				}
				check(dgrad, dX, 0)
				check(wgrad, dW, 0)
				if shape.Bias {
					check(wgrad, dB, w)
				}
			}
		}
	}
}

// TestSampleCount: the forward op samples what it is asked, as before
// gradients; a filter gradient's costly values are sampled within the CPU
// budget, never fewer than the first and the last.
func TestSampleCount(t *testing.T) {
	small, _ := problem.ParseShape("N=1,C=3,H=8,W=8,K=4,R=3,S=3")
	big, _ := problem.ParseShape("N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2")
	huge, _ := problem.ParseShape("N=1024,C=1,H=4096,W=4096,K=1,R=1,S=1")
	for _, tc := range []struct {
		p    problem.Problem
		want int
	}{
		{problem.Problem{Shape: big, Precision: problem.FP32, Layout: problem.NCHW}, 1024},
		{problem.Problem{Shape: small, Precision: problem.FP32, Layout: problem.NCHW, Op: problem.OpWgrad}, 1024},
		{problem.Problem{Shape: big, Precision: problem.FP32, Layout: problem.NCHW, Op: problem.OpDgrad}, 1024},
		{problem.Problem{Shape: big, Precision: problem.FP32, Layout: problem.NCHW, Op: problem.OpWgrad}, hostBudget / (256 * 55 * 55)},
		{problem.Problem{Shape: huge, Precision: problem.FP32, Layout: problem.NCHW, Op: problem.OpWgrad}, 2},
	} {
		if got := sampleCount(tc.p, 1024); got != tc.want {
			t.Errorf("sampleCount(%s, 1024) = %d, want %d", tc.p, got, tc.want)
		}
	}
}
