package problem

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestParseTransposed reads transposed convolutions and checks their
// output sizes against ConvTranspose2d's formula (figures as PyTorch gives
// them) and the forward shape whose data gradient computes them.
func TestParseTransposed(t *testing.T) {
	for _, c := range []struct {
		spec   string
		ho, wo int
		fwd    string
	}{
		// A GAN generator's last layer: nn.ConvTranspose2d(64, 3, 4, 2, 1) on 32x32 gives 64x64.
		{"N=8,C=64,H=32,W=32,K=3,R=4,S=4,stride=2,pad=1,bias=false", 64, 64,
			"N=8,C=3,H=64,W=64,K=64,R=4,S=4,stride=2,pad=1,dilation=1,groups=1,bias=true"},
		// output_padding: ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1) on 7x5 gives 14x10.
		{"N=1,C=16,H=7,W=5,K=8,R=3,S=3,stride=2,pad=1,output_padding=1", 14, 10,
			"N=1,C=8,H=14,W=10,K=16,R=3,S=3,stride=2,pad=1,dilation=1,groups=1,bias=true"},
		// per-axis stride, padding, output_padding and dilation, groups; a 1x1 input.
		{"N=2,C=6,H=1,W=3,K=9,R=3,S=2,stride_h=3,stride_w=2,pad_w=1,output_padding_h=2,dilation_h=2,groups=3", 7, 4,
			"N=2,C=9,H=7,W=4,K=6,R=3,S=2,stride_h=3,stride_w=2,pad_h=0,pad_w=1,dilation_h=2,dilation_w=1,groups=3,bias=true"},
	} {
		tr, err := ParseTransposed(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		if ho, wo := tr.OutputSize(); ho != c.ho || wo != c.wo {
			t.Errorf("%s: output %dx%d, want %dx%d", c.spec, ho, wo, c.ho, c.wo)
		}
		f, err := tr.Dgrad()
		if err != nil {
			t.Fatalf("%s: Dgrad: %v", c.spec, err)
		}
		if f.String() != c.fwd {
			t.Errorf("%s: forward %s, want %s", c.spec, f, c.fwd)
		}
	}
	for spec, want := range map[string]string{
		"N=1,C=4,H=5,W=5,K=4,R=3,S=3,bias=true":                           ErrTransposedBias.Error(),
		"N=1,C=4,H=5,W=5,K=4,R=3,S=3,stride=2,output_padding=2":           "less than the stride",
		"N=1,C=4,H=5,W=5,K=4,R=3,S=3,output_padding=1":                    "less than the stride",
		"N=1,C=4,H=1,W=1,K=4,R=1,S=1,pad=1":                               "at least 1x1",
		"N=1,C=4,H=5,W=5,K=6,R=3,S=3,groups=4":                            "K=6 (out_channels) is not divisible by groups=4",
		"N=1,C=6,H=8,W=8,K=4,R=3,S=3,groups=3":                            "K=4 (out_channels)",
		"N=1,C=4,H=8,W=8,K=6,R=3,S=3,groups=3":                            "C=4 (in_channels)",
		"N=1,C=4,H=10,W=10,K=4,R=3,S=3,pad=1,dilation=2,output_padding=1": "below the dilation",
		"N=1,C=4,H=536870912,W=5,K=4,R=3,S=3":                             "H=536870912 is too large",
		"N=1024,C=1,H=1024,W=1024,K=2048,R=1,S=1":                         "output N*K*HO*WO",
		"N=1,C=4,H=5,W=5,K=4,R=3,S=3,output_padding=1,output_pad=1":       "unknown key",
		"N=1,C=4,H=5,W=5,K=4,R=3,S=3,output_padding=-1":                   "non-negative",
	} {
		_, err := ParseTransposed(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", spec, err, want)
		}
		if want == ErrTransposedBias.Error() && !errors.Is(err, ErrTransposedBias) {
			t.Errorf("%s: %v is not ErrTransposedBias", spec, err)
		}
	}
}

// TestTransposedDgradProperty: for random transposed convolutions that
// PyTorch accepts (output_padding below the stride, output at least 1x1),
// the forward shape is valid, maps the output back to the input exactly,
// and has the transposed convolution's tensors (forward dX = its output,
// dY = its input, W = its weight).
func TestTransposedDgradProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	served := 0
	for range 5000 {
		g := 1 + rng.IntN(3)
		tr := Transposed{Shape: Shape{N: 1 + rng.IntN(3), C: g * (1 + rng.IntN(4)), H: 1 + rng.IntN(9), W: 1 + rng.IntN(9),
			K: g * (1 + rng.IntN(4)), R: 1 + rng.IntN(5), S: 1 + rng.IntN(5), StrideH: 1 + rng.IntN(4), StrideW: 1 + rng.IntN(4),
			PadH: rng.IntN(4), PadW: rng.IntN(4), DilationH: 1 + rng.IntN(3), DilationW: 1 + rng.IntN(3), Groups: g}}
		tr.OutputPadH, tr.OutputPadW = rng.IntN(tr.StrideH), rng.IntN(tr.StrideW)
		ho, wo := tr.OutputSize()
		f, err := tr.Dgrad()
		if ho < 1 || wo < 1 {
			if err == nil {
				t.Fatalf("%+v: an empty output accepted", tr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tr, err)
		}
		served++
		x, w, b, y := f.Elements()
		if f.P() != tr.H || f.Q() != tr.W || x != tr.N*tr.K*ho*wo || y != tr.N*tr.C*tr.H*tr.W || w != tr.C*(tr.K/g)*tr.R*tr.S || b != tr.C {
			t.Fatalf("%+v: forward %s does not hold the transposed convolution's tensors", tr, f)
		}
	}
	if served < 1000 {
		t.Fatalf("only %d of 5000 served", served)
	}
}

// TestTransposedOf: for random valid shapes, the transposed convolution
// their data gradient computes is one ConvTranspose2d accepts (output
// padding below the stride) and maps back to the shape (with the default
// bias, which its data gradient ignores).
func TestTransposedOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	n := 0
	for range 5000 {
		g := 1 + rng.IntN(3)
		s := Shape{N: 1 + rng.IntN(3), C: g * (1 + rng.IntN(4)), H: 1 + rng.IntN(30), W: 1 + rng.IntN(30),
			K: g * (1 + rng.IntN(4)), R: 1 + rng.IntN(5), S: 1 + rng.IntN(5), StrideH: 1 + rng.IntN(4), StrideW: 1 + rng.IntN(4),
			PadH: rng.IntN(4), PadW: rng.IntN(4), DilationH: 1 + rng.IntN(3), DilationW: 1 + rng.IntN(3), Groups: g, Bias: rng.IntN(2) == 0}
		if s.Validate() != nil {
			continue
		}
		n++
		tr := TransposedOf(s)
		f, err := tr.Dgrad()
		want := s
		want.Bias = true // the data gradient's shape keeps the default bias
		if err != nil || f != want {
			t.Fatalf("%s: TransposedOf gives %+v, whose Dgrad is %s (%v)", s, tr, f, err)
		}
	}
	if n < 1000 {
		t.Fatalf("only %d valid shapes", n)
	}
}
