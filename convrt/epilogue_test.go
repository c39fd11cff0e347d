package convrt

import (
	"math"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

func mustChain(t *testing.T, spec string) epilogue.Chain {
	t.Helper()
	c, err := epilogue.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCheckEpilogue: the arrays a chain reads must be set and aligned, the
// others 0; Forward's zero Epilogue fits a chain without arrays only.
func TestCheckEpilogue(t *testing.T) {
	p := testSpec(t, "N=1,C=3,H=8,W=8,K=4,R=3,S=3").Problem
	const a DevicePtr = 1 << 20
	for _, tc := range []struct {
		chain string
		ep    Epilogue
		want  string // in the error; "" for none
	}{
		{"", Epilogue{}, ""},
		{"relu", Epilogue{}, ""},
		{"relu", Epilogue{Scale: a}, "scale is set"},
		{"scale_shift,relu", Epilogue{Scale: a, Shift: a + Alignment}, ""},
		{"scale_shift,relu", Epilogue{}, "reads scale, a null"},
		{"scale_shift,relu", Epilogue{Scale: a, Shift: a + 4}, "shift (0x100004) is not 16-byte aligned"},
		{"scale_shift,relu", Epilogue{Scale: a, Shift: a, Residual: a}, "residual is set"},
		{"residual(0.5),gelu", Epilogue{Residual: a}, ""},
		{"residual(0.5),gelu", Epilogue{}, "reads residual, a null"},
		{"scale_shift,residual", Epilogue{Scale: a, Shift: a, Residual: a}, ""},
	} {
		p.Epilogue = mustChain(t, tc.chain)
		err := CheckEpilogue(p, tc.ep)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q %+v: %v", tc.chain, tc.ep, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q %+v: %v, want an error with %q", tc.chain, tc.ep, err, tc.want)
		}
		if got := len(tc.ep.args(p)); tc.want == "" && got != map[bool]int{true: 2}[p.Epilogue.NeedsScaleShift()]+map[bool]int{true: 1}[p.Epilogue.NeedsResidual()] {
			t.Errorf("%q: %d extra kernel arguments", tc.chain, got)
		}
	}
}

// TestReferenceEpilogue: the reference applies the chain to the
// convolution's output (scale_shift per output channel, the residual at the
// output's offset), and is NaN, not a panic, when an array is missing.
func TestReferenceEpilogue(t *testing.T) {
	sh, err := problem.ParseShape("N=2,C=3,H=5,W=6,K=4,R=3,S=3,pad=1")
	if err != nil {
		t.Fatal(err)
	}
	for _, layout := range problem.Layouts {
		p := problem.Problem{Shape: sh, Precision: problem.FP32, Layout: layout}
		nIn, nFilter, nBias, nOut := sh.Elements()
		fill := func(n int, f func(int) float32) []float32 {
			xs := make([]float32, n)
			for i := range xs {
				xs[i] = f(i)
			}
			return xs
		}
		in := fill(nIn, func(i int) float32 { return float32(i%7) - 3 })
		filter := fill(nFilter, func(i int) float32 { return float32(i%5)/4 - 0.5 })
		bias := fill(nBias, func(i int) float32 { return float32(i) - 1 })
		res := fill(nOut, func(i int) float32 { return float32(i%3) - 1 })
		ep := EpilogueHost[float32]{Scale: []float64{2, 0.5, -1, 3}, Shift: []float64{1, -1, 0.25, 0}, Residual: res}
		dec := Float32Codec().Decode
		p.Epilogue = mustChain(t, "scale_shift,residual(0.5),relu")
		for _, a := range Corners(p) {
			y := Reference(p, dec, in, filter, bias, a)
			want := math.Max(ep.Scale[a.K]*y+ep.Shift[a.K]+0.5*float64(res[OutputAt(p, a)]), 0)
			if got := ReferenceEpilogue(p, dec, in, filter, bias, ep, a); got != want {
				t.Errorf("%s %+v: %v, want %v", layout, a, got, want)
			}
		}
		if got := ReferenceEpilogue(p, dec, in, filter, bias, EpilogueHost[float32]{}, At{}); !math.IsNaN(got) {
			t.Errorf("%s: missing arrays give %v, want NaN", layout, got)
		}
		p.Epilogue = nil
		if got, want := ReferenceEpilogue(p, dec, in, filter, bias, ep, At{1, 2, 3, 4}), Reference(p, dec, in, filter, bias, At{1, 2, 3, 4}); got != want {
			t.Errorf("%s: no chain: %v, want Reference's %v", layout, got, want)
		}
	}
}
