package problem

import (
	"math/big"
	"testing"
)

// FuzzParseShape checks ParseShape on any text: it never panics, its errors
// are bounded in length and come with the zero Shape, and a shape it accepts
// has an output of at least 1×1 by PyTorch's formula (computed here with
// big-integer floor division, independently of P and Q), passes Validate
// and reads back from its canonical String unchanged.
func FuzzParseShape(f *testing.F) {
	for _, seed := range []string{
		flagship,
		"N=1,C=1,H=1,W=1,K=1,R=1,S=1",
		// Issue 22, item 1: filter larger than the padded input, stride > 1.
		"N=1,C=3,H=5,W=5,K=8,R=7,S=7,stride=4",
		"N=1,C=3,H=10,W=10,K=96,R=11,S=11,stride=2",
		"N=1,C=3,H=10,W=10,K=8,R=3,S=3,dilation=6,stride=8",
		"N=1,C=3,H=7,W=7,K=8,R=7,S=7,stride=4",
		"N=3,C=8,H=17,W=19,K=12,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=3,dilation=2,groups=4,bias=false",
		"n=4, c=6 ,h=9,w=9,k=6,r=2,s=2,Stride=2,groups=3,bias=no",
		"N=1,C=4,H=8,W=8,K=4,R=3,S=3,N=2",
		"N=1,C=4,H=8,W=8,K=4,R=3,S=3,Stride_H=2,stride_h=1",
		"N=1,C=4,H=8,W=8,K=4,R=3,S=3,stride=2,stride_h=1",
		"N=9223372036854775807,C=9223372036854775807,H=1,W=1,K=1,R=1,S=1",
		"N=536870911,C=1,H=536870911,W=1,K=1,R=536870911,S=1,dilation_h=536870911",
		"N=1,C=4,H=8,W=8,K=4,R=3,S=3,bias=maybe",
		"N=1,C=4,H=8,W=8,K=4,R=3,S=3,pad=-1",
		"",
		",,,=",
		"N=\xff\xfe,C=é",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := ParseShape(spec)
		if err != nil {
			if s != (Shape{}) {
				t.Errorf("ParseShape(%q) returned %+v with its error", spec, s)
			}
			if n := len(err.Error()); n > maxErrorLen {
				t.Errorf("ParseShape(%q): error of %d bytes (at most %d): %.300q", spec, n, maxErrorLen, err)
			}
			return
		}
		p := floorOutput(s.H, s.PadH, s.DilationH, s.R, s.StrideH)
		q := floorOutput(s.W, s.PadW, s.DilationW, s.S, s.StrideW)
		if p.Cmp(big.NewInt(1)) < 0 || q.Cmp(big.NewInt(1)) < 0 {
			t.Fatalf("ParseShape(%q) accepted %+v with an output of %v×%v", spec, s, p, q)
		}
		if !p.IsInt64() || !q.IsInt64() || p.Int64() != int64(s.P()) || q.Int64() != int64(s.Q()) {
			t.Errorf("ParseShape(%q): P, Q = %d, %d; PyTorch's formula gives %v, %v", spec, s.P(), s.Q(), p, q)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("ParseShape(%q) accepted %+v, which Validate refuses: %v", spec, s, err)
		}
		str := s.String()
		back, err := ParseShape(str)
		if err != nil {
			t.Fatalf("ParseShape(%q) accepted %+v, but not its String() %q: %v", spec, s, str, err)
		}
		if back != s {
			t.Errorf("round trip of %q through %q: got %+v, want %+v", spec, str, back, s)
		}
		if again := back.String(); again != str {
			t.Errorf("String() not stable: %q then %q", str, again)
		}
	})
}

// floorOutput is floor((in+2*pad-dilation*(taps-1)-1)/stride)+1 in exact
// integers, the output-size formula of PyTorch's convolutions.
func floorOutput(in, pad, dilation, taps, stride int) *big.Int {
	n := big.NewInt(int64(in))
	n.Add(n, new(big.Int).Mul(big.NewInt(2), big.NewInt(int64(pad))))
	n.Sub(n, new(big.Int).Mul(big.NewInt(int64(dilation)), big.NewInt(int64(taps-1))))
	n.Sub(n, big.NewInt(1))
	// big.Int.Div is Euclidean: for a positive divisor it is floor division.
	n.Div(n, big.NewInt(int64(stride)))
	return n.Add(n, big.NewInt(1))
}
