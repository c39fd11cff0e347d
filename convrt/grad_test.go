package convrt

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestGradReferences checks the gradients' float64 references against
// gradients accumulated by visiting every term of the forward convolution
// (Reference's own sum): dX += dY·W, dW += dY·X, dBias += dY, on grouped,
// strided, dilated and padded shapes in both layouts.
func TestGradReferences(t *testing.T) {
	for _, spec := range []string{
		"N=2,C=6,H=7,W=6,K=9,R=3,S=2,stride_h=2,pad_w=1,dilation_h=2,groups=3",
		"N=1,C=3,H=9,W=8,K=4,R=3,S=3,stride=2,pad_h=2,pad_w=1",
	} {
		sh, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, lay := range problem.Layouts {
			p := problem.Problem{Shape: sh, Precision: problem.FP32, Layout: lay}
			rng := rand.New(rand.NewPCG(1, 2))
			nx, nw, _, ny := sh.Elements()
			rnd := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(2*rng.Float64() - 1)
				}
				return v
			}
			x, w, dy := rnd(nx), rnd(nw), rnd(ny)
			dx, dw, db := make([]float64, nx), make([]float64, nw), make([]float64, sh.K)
			cg, kg := sh.C/sh.Groups, sh.K/sh.Groups
			for n := range sh.N {
				for k := range sh.K {
					for pp := range sh.P() {
						for q := range sh.Q() {
							d := float64(dy[OutputAt(p, At{n, k, pp, q})])
							db[k] += d
							for c := range cg {
								for r := range sh.R {
									for s := range sh.S {
										h, ww := pp*sh.StrideH-sh.PadH+r*sh.DilationH, q*sh.StrideW-sh.PadW+s*sh.DilationW
										if h < 0 || h >= sh.H || ww < 0 || ww >= sh.W {
											continue
										}
										xi, fi := InputAt(p, n, k/kg*cg+c, h, ww), FilterAt(p, k, c, r, s)
										dx[xi] += d * float64(w[fi])
										dw[fi] += d * float64(x[xi])
									}
								}
							}
						}
					}
				}
			}
			dec := Float32Codec().Decode
			for n := range sh.N {
				for c := range sh.C {
					for h := range sh.H {
						for ww := range sh.W {
							if got, want := ReferenceDgrad(p, dec, dy, w, n, c, h, ww), dx[InputAt(p, n, c, h, ww)]; math.Abs(got-want) > 1e-12 {
								t.Fatalf("%s %s dX[%d][%d][%d][%d] = %v, want %v", spec, lay, n, c, h, ww, got, want)
							}
						}
					}
				}
			}
			for k := range sh.K {
				if got := ReferenceBiasGrad(p, dec, dy, k); math.Abs(got-db[k]) > 1e-12 {
					t.Fatalf("%s %s dBias[%d] = %v, want %v", spec, lay, k, got, db[k])
				}
				for c := range cg {
					for r := range sh.R {
						for s := range sh.S {
							if got, want := ReferenceWgrad(p, dec, x, dy, k, c, r, s), dw[FilterAt(p, k, c, r, s)]; math.Abs(got-want) > 1e-12 {
								t.Fatalf("%s %s dW[%d][%d][%d][%d] = %v, want %v", spec, lay, k, c, r, s, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestGradPtrs: the gradients' address checks name a null or misaligned
// operand by its role, ignore the operands the problem lacks, and refuse
// a kernel of another op naming the method to call.
func TestGradPtrs(t *testing.T) {
	sh, _ := problem.ParseShape("N=1,C=3,H=8,W=8,K=4,R=3,S=3")
	wg := problem.Problem{Shape: sh, Precision: problem.FP16, Layout: problem.NHWC, Op: problem.OpWgrad}
	ok := map[string]DevicePtr{"X": 256, "dY": 512, "dW": 768, "dBias": 1024}
	if err := CheckGradPtrs(wg, problem.OpWgrad, ok); err != nil {
		t.Errorf("aligned wgrad operands: %v", err)
	}
	for name, bad := range map[string]DevicePtr{"dBias": 0, "dW": 8, "X": 0} {
		m := map[string]DevicePtr{"X": 256, "dY": 512, "dW": 768, "dBias": 1024}
		m[name] = bad
		if err := CheckGradPtrs(wg, problem.OpWgrad, m); err == nil || !strings.HasPrefix(err.Error(), name+" ") {
			t.Errorf("%s = %#x: %v, want an error naming %s", name, bad, err, name)
		}
	}
	noBias := wg
	noBias.Shape.Bias = false
	if err := CheckGradPtrs(noBias, problem.OpWgrad, map[string]DevicePtr{"X": 256, "dY": 512, "dW": 768}); err != nil {
		t.Errorf("wgrad without bias, dBias 0: %v", err)
	}
	if err := CheckGradPtrs(wg, problem.OpDgrad, ok); err == nil || !strings.Contains(err.Error(), "call BackwardFilter") {
		t.Errorf("BackwardData on a wgrad kernel: %v", err)
	}
	dg := wg
	dg.Op = problem.OpDgrad
	if err := CheckGradPtrs(dg, problem.OpDgrad, map[string]DevicePtr{"dY": 256, "W": 512, "dX": 768}); err != nil {
		t.Errorf("dgrad operands: %v", err)
	}
}
