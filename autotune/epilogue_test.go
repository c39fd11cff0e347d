package autotune

import (
	"math"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

// TestHostExpectedAppliesChain: the CPU reference of a problem with an
// epilogue chain is hostOutput with the chain applied in float64 to the
// scale, shift (per output channel, float32 values in their ranges) and
// residual (per output element, rounded to the element type) the worker
// fills; without a chain it is hostOutput.
func TestHostExpectedAppliesChain(t *testing.T) {
	shape, err := problem.ParseShape("N=2,C=3,H=6,W=5,K=4,R=3,S=3,pad=1")
	if err != nil {
		t.Fatal(err)
	}
	c, err := epilogue.Parse("scale_shift,residual(0.5),leaky_relu(0.1)")
	if err != nil {
		t.Fatal(err)
	}
	const seed = 77
	for _, prec := range []problem.Precision{problem.FP32, problem.FP16, problem.BF16} {
		for _, lay := range problem.Layouts {
			p := problem.Problem{Shape: shape, Precision: prec, Layout: lay}
			_, _, _, nOut := shape.Elements()
			changed := 0
			for idx := int64(0); idx < int64(nOut); idx++ {
				plain := hostOutput(p, seed, idx)
				if got := hostExpected(p, seed, idx); got != plain {
					t.Fatalf("%s: no chain: %v, want hostOutput's %v", p, got, plain)
				}
				q := p
				q.Epilogue = c
				k := int64(idx % int64(shape.K))
				if lay == problem.NCHW {
					k = idx / int64(shape.P()*shape.Q()) % int64(shape.K)
				}
				a, b := hostScaleShift(seed, k)
				if a < 0.5 || a >= 1.5 || b < -1 || b >= 1 {
					t.Fatalf("channel %d: scale %v, shift %v out of range", k, a, b)
				}
				z := hostResidual(q, seed, idx)
				if z != roundTo(z, prec) || z < -1 || z > 1 {
					t.Fatalf("residual %d: %v is not a %s value in [-1, 1]", idx, z, prec)
				}
				y := float64(a)*plain + float64(b) + 0.5*z
				if y <= 0 {
					y *= float64(float32(0.1))
				}
				got := hostExpected(q, seed, idx)
				if math.Abs(got-y) > 1e-12*math.Max(1, math.Abs(y)) {
					t.Fatalf("%s element %d: %v, want %v", q, idx, got, y)
				}
				if got != plain {
					changed++
				}
			}
			if changed < nOut/2 {
				t.Errorf("%s: the chain changes only %d of %d outputs", p, changed, nOut)
			}
		}
	}
}
