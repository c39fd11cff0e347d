// Package kerneltest holds helpers for the tests of the kernel families.
package kerneltest

import (
	"testing"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// FlagshipSpec is AlexNet's first layer, the shape convgen is tuned on first.
const FlagshipSpec = "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2"

// Flagship is the flagship shape in precision prec and layout layout.
func Flagship(t testing.TB, prec problem.Precision, layout problem.Layout) problem.Problem {
	t.Helper()
	s, err := problem.ParseShape(FlagshipSpec)
	if err != nil {
		t.Fatalf("ParseShape(%q): %v", FlagshipSpec, err)
	}
	return problem.Problem{Shape: s, Precision: prec, Layout: layout}
}

// Kept lists the candidates that no rule rejects.
func Kept(cands []family.Candidate) []family.Candidate {
	var out []family.Candidate
	for _, c := range cands {
		if c.Rejected == "" {
			out = append(out, c)
		}
	}
	return out
}

// MustKnobs parses candidate c's configuration into knob struct K.
func MustKnobs[K any](t testing.TB, c family.Candidate) K {
	t.Helper()
	k, err := family.ParseKnobs[K](c.Family, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
