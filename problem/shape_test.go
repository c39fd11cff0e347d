package problem

import (
	"math"
	"strings"
	"testing"
)

// flagship is AlexNet's first layer, the shape convgen is tuned on first.
const flagship = "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2"

func mustParse(t *testing.T, spec string) Shape {
	t.Helper()
	s, err := ParseShape(spec)
	if err != nil {
		t.Fatalf("ParseShape(%q): %v", spec, err)
	}
	return s
}

func TestParseShape(t *testing.T) {
	tests := []struct {
		name   string
		spec   string
		want   Shape
		p, q   int
		flops  float64 // checked when > 0, to ±0.01e9
		canon  string  // checked when not empty
		inElem int     // checked when > 0
	}{
		{
			name:  "flagship",
			spec:  flagship,
			want:  Shape{N: 256, C: 3, H: 224, W: 224, K: 96, R: 11, S: 11, StrideH: 4, StrideW: 4, PadH: 2, PadW: 2, DilationH: 1, DilationW: 1, Groups: 1, Bias: true},
			p:     55,
			q:     55,
			flops: 53.97e9,
			canon: "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2,dilation=1,groups=1,bias=true",
		},
		{
			name:  "keys case-insensitive",
			spec:  "n=256,c=3,h=224,w=224,k=96,r=11,s=11,STRIDE=4,Pad=2",
			want:  Shape{N: 256, C: 3, H: 224, W: 224, K: 96, R: 11, S: 11, StrideH: 4, StrideW: 4, PadH: 2, PadW: 2, DilationH: 1, DilationW: 1, Groups: 1, Bias: true},
			p:     55,
			q:     55,
			canon: "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2,dilation=1,groups=1,bias=true",
		},
		{
			name:  "defaults",
			spec:  "N=1,C=1,H=5,W=7,K=1,R=3,S=3",
			want:  Shape{N: 1, C: 1, H: 5, W: 7, K: 1, R: 3, S: 3, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1, Groups: 1, Bias: true},
			p:     3,
			q:     5,
			flops: 2 * 1 * 1 * 3 * 5 * 1 * 3 * 3,
			canon: "N=1,C=1,H=5,W=7,K=1,R=3,S=3,stride=1,pad=0,dilation=1,groups=1,bias=true",
		},
		{
			name: "_h/_w variants",
			spec: "N=2,C=4,H=17,W=19,K=8,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=3,dilation_h=2,dilation_w=1",
			want: Shape{N: 2, C: 4, H: 17, W: 19, K: 8, R: 3, S: 5, StrideH: 2, StrideW: 1, PadH: 1, PadW: 3, DilationH: 2, DilationW: 1, Groups: 1, Bias: true},
			// P = (17+2-2*2-1)/2+1 = 8, Q = (19+6-4-1)/1+1 = 21
			p:     8,
			q:     21,
			canon: "N=2,C=4,H=17,W=19,K=8,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=3,dilation_h=2,dilation_w=1,groups=1,bias=true",
		},
		{
			name: "only _w given, _h defaults",
			spec: "N=1,C=1,H=8,W=8,K=1,R=1,S=1,STRIDE_W=2,PAD_H=1",
			want: Shape{N: 1, C: 1, H: 8, W: 8, K: 1, R: 1, S: 1, StrideH: 1, StrideW: 2, PadH: 1, PadW: 0, DilationH: 1, DilationW: 1, Groups: 1, Bias: true},
			p:    10,
			q:    4,
		},
		{
			name:   "groups, bias off, spaces and empty pairs",
			spec:   " N = 3 , C=8,,H=17,W=19,K=12,R=3,S=5,groups=4,Bias=FALSE,",
			want:   Shape{N: 3, C: 8, H: 17, W: 19, K: 12, R: 3, S: 5, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1, Groups: 4, Bias: false},
			p:      15,
			q:      15,
			flops:  2 * 3 * 12 * 15 * 15 * 2 * 3 * 5,
			canon:  "N=3,C=8,H=17,W=19,K=12,R=3,S=5,stride=1,pad=0,dilation=1,groups=4,bias=false",
			inElem: 3 * 8 * 17 * 19,
		},
		{
			name: "bias spellings",
			spec: "N=1,C=1,H=1,W=1,K=1,R=1,S=1,bias=on",
			want: Shape{N: 1, C: 1, H: 1, W: 1, K: 1, R: 1, S: 1, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1, Groups: 1, Bias: true},
			p:    1,
			q:    1,
		},
		{
			name: "bias 0",
			spec: "N=1,C=1,H=1,W=1,K=1,R=1,S=1,bias=0",
			want: Shape{N: 1, C: 1, H: 1, W: 1, K: 1, R: 1, S: 1, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1, Groups: 1, Bias: false},
			p:    1,
			q:    1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustParse(t, tt.spec)
			if got != tt.want {
				t.Fatalf("ParseShape(%q) =\n  %+v\nwant\n  %+v", tt.spec, got, tt.want)
			}
			if got.P() != tt.p || got.Q() != tt.q {
				t.Errorf("P, Q = %d, %d; want %d, %d", got.P(), got.Q(), tt.p, tt.q)
			}
			if tt.flops > 0 && math.Abs(got.FLOPs()-tt.flops) > 0.01e9 {
				t.Errorf("FLOPs = %.4g; want %.4g ± 0.01e9", got.FLOPs(), tt.flops)
			}
			if tt.canon != "" && got.String() != tt.canon {
				t.Errorf("String() = %q\nwant       %q", got.String(), tt.canon)
			}
			if tt.inElem > 0 {
				in, filter, bias, out := got.Elements()
				wantBias := 0
				if got.Bias {
					wantBias = got.K
				}
				if in != tt.inElem || filter != got.K*(got.C/got.Groups)*got.R*got.S || bias != wantBias || out != got.N*got.K*got.P()*got.Q() {
					t.Errorf("Elements() = %d, %d, %d, %d", in, filter, bias, out)
				}
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate() on a parsed shape: %v", err)
			}
		})
	}
}

func TestFlagshipFLOPsExact(t *testing.T) {
	s := mustParse(t, flagship)
	// 2 * N*K*P*Q * C*R*S
	const want = 2.0 * 256 * 96 * 55 * 55 * 3 * 11 * 11
	if s.FLOPs() != want {
		t.Errorf("FLOPs = %v, want %v", s.FLOPs(), want)
	}
	if math.Abs(s.FLOPs()-53.97e9) > 0.01e9 {
		t.Errorf("FLOPs = %.4g, want 53.97e9", s.FLOPs())
	}
	in, filter, bias, out := s.Elements()
	if in != 256*3*224*224 || filter != 96*3*11*11 || bias != 96 || out != 256*96*55*55 {
		t.Errorf("Elements() = %d, %d, %d, %d", in, filter, bias, out)
	}
}

func TestShapeStringRoundTrip(t *testing.T) {
	specs := []string{
		flagship,
		"N=1,C=1,H=1,W=1,K=1,R=1,S=1",
		"N=2,C=4,H=17,W=19,K=8,R=3,S=5,stride_h=2,stride_w=1",         // asymmetric stride
		"N=2,C=4,H=17,W=19,K=8,R=3,S=5,stride_h=1,stride_w=3,pad_h=0", // asymmetric stride, pad_w defaults
		"N=3,C=8,H=17,W=19,K=12,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=3,dilation=2,groups=4,bias=false",
		"N=8,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,dilation_h=1,dilation_w=2",
		"n=4,c=6,h=9,w=9,k=6,r=2,s=2,stride=2,groups=3,bias=no",
	}
	for _, spec := range specs {
		t.Run(spec, func(t *testing.T) {
			s := mustParse(t, spec)
			str := s.String()
			back, err := ParseShape(str)
			if err != nil {
				t.Fatalf("ParseShape(String()=%q): %v", str, err)
			}
			if back != s {
				t.Errorf("round trip through %q:\n  got  %+v\n  want %+v", str, back, s)
			}
			if again := back.String(); again != str {
				t.Errorf("String() not stable: %q then %q", str, again)
			}
		})
	}
}

func TestShapeStringAsymmetric(t *testing.T) {
	s := mustParse(t, "N=2,C=4,H=17,W=19,K=8,R=3,S=5,stride_h=2,stride_w=1")
	str := s.String()
	for _, want := range []string{",stride_h=2,stride_w=1,", ",pad=0,", ",dilation=1,"} {
		if !strings.Contains(str, want) {
			t.Errorf("String() = %q lacks %q", str, want)
		}
	}
	if strings.Contains(str, ",stride=") {
		t.Errorf("String() = %q writes stride= although height and width differ", str)
	}
}

func TestParseShapeErrors(t *testing.T) {
	const base = "N=1,C=4,H=8,W=8,K=4,R=3,S=3"
	tests := []struct {
		name string
		spec string
		want []string // every one must appear in the error text
	}{
		{"unknown key", base + ",foo=1", []string{`unknown key "foo"`}},
		{"unknown key, upper case", base + ",Padding=1", []string{`unknown key "Padding"`}},
		{"repeated key", base + ",N=2", []string{`key "N" given twice`}},
		{"repeated key, other case", base + ",pad=1,PAD=1", []string{`key "PAD" given twice (first as "pad")`}},
		{"repeated key, mixed case", base + ",Stride_H=2,stride_h=1", []string{`key "stride_h" given twice (first as "Stride_H")`}},
		{"value error names the key as written", "n=0,C=4,H=8,W=8,K=4,R=3,S=3", []string{`n="0"`, "positive"}},
		{"both given, as written", base + ",Stride=2,STRIDE_W=1", []string{"Stride and STRIDE_W both given"}},
		{"missing key", "N=1,C=4,H=8,W=8,K=4,R=3", []string{`"S"`, "missing"}},
		{"empty spec", "", []string{`"N"`, "missing"}},
		{"not key=value", base + ",stride", []string{`"stride"`, "KEY=VALUE"}},
		{"zero size", "N=1,C=4,H=8,W=8,K=0,R=3,S=3", []string{"K=", "positive"}},
		{"negative size", "N=-1,C=4,H=8,W=8,K=4,R=3,S=3", []string{"N=", "positive"}},
		{"zero stride", base + ",stride=0", []string{"stride=", "positive"}},
		{"zero stride_w", base + ",stride_w=0", []string{"stride_w=", "positive"}},
		{"zero dilation_h", base + ",dilation_h=0", []string{"dilation_h=", "positive"}},
		{"zero groups", base + ",groups=0", []string{"groups=", "positive"}},
		{"negative pad", base + ",pad=-1", []string{"pad=", "non-negative"}},
		{"negative pad_w", base + ",pad_w=-2", []string{"pad_w=", "non-negative"}},
		{"non-integer", "N=1,C=4,H=8.5,W=8,K=4,R=3,S=3", []string{"H=", "integer"}},
		{"non-integer word", "N=one,C=4,H=8,W=8,K=4,R=3,S=3", []string{"N=", "integer"}},
		{"output height below 1", "N=1,C=4,H=8,W=8,K=4,R=11,S=3", []string{"P=", "at least 1"}},
		{"output width below 1", "N=1,C=4,H=8,W=8,K=4,R=3,S=9,pad=0", []string{"Q=", "at least 1"}},
		{"dilation makes output empty", base + ",dilation=4", []string{"P=", "at least 1"}},
		{"C not divisible by groups", "N=1,C=3,H=8,W=8,K=4,R=3,S=3,groups=2", []string{"C=3", "divisible", "groups=2"}},
		{"K not divisible by groups", "N=1,C=4,H=8,W=8,K=6,R=3,S=3,groups=4", []string{"K=6", "divisible", "groups=4"}},
		{"stride with stride_h", base + ",stride=2,stride_h=1", []string{"stride", "stride_h", "both"}},
		{"pad with pad_w", base + ",pad_w=1,pad=1", []string{"pad", "pad_w", "both"}},
		{"dilation with dilation_w", base + ",dilation=1,dilation_w=1", []string{"dilation", "dilation_w", "both"}},
		{"input over 2^40", "N=1000000,C=1000,H=1000,W=2,K=1,R=1,S=1", []string{"input", "1099511627776 (2^40)"}},
		{"output over 2^40", "N=1000000,C=1,H=1000,W=1000,K=2000,R=1,S=1", []string{"output", "2^40"}},
		{"filter over 2^40", "N=1,C=2000000,H=1,W=1,K=1000000,R=1,S=1", []string{"filter", "2^40"}},
		{"padded rows over 2^40", "N=100000,C=100000,H=1,W=1,K=1,R=1,S=1,pad_h=100000,pad_w=0", []string{"padded input rows", "2^40"}},
		{"dimension over 2^29-1", "N=536870912,C=1,H=1,W=1,K=1,R=1,S=1", []string{"N=536870912", "at most 536870911"}},
		{"huge size saturates", "N=9223372036854775807,C=9223372036854775807,H=1,W=1,K=1,R=1,S=1", []string{"N=", "too large"}},
		{"bad bias", base + ",bias=maybe", []string{"bias", `"maybe"`}},
		{"empty bias", base + ",bias=", []string{"bias"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseShape(tt.spec)
			if err == nil {
				t.Fatalf("ParseShape(%q) = %+v, want an error", tt.spec, s)
			}
			if s != (Shape{}) {
				t.Errorf("ParseShape(%q) returned %+v with its error, want the zero Shape", tt.spec, s)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ParseShape(%q) error %q does not mention %q", tt.spec, err, w)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := mustParse(t, flagship)
	tests := []struct {
		name string
		mod  func(*Shape)
		want string
	}{
		{"zero N", func(s *Shape) { s.N = 0 }, "N=0"},
		{"zero stride_w", func(s *Shape) { s.StrideW = 0 }, "stride_w=0"},
		{"zero groups", func(s *Shape) { s.Groups = 0 }, "groups=0"},
		{"negative pad", func(s *Shape) { s.PadH = -1 }, "pad="},
		{"groups", func(s *Shape) { s.Groups = 2 }, "divisible"},
		{"filter too tall", func(s *Shape) { s.R = 300 }, "P="},
		{"filter too wide", func(s *Shape) { s.S = 300 }, "Q="},
		{"over 2^40 elements", func(s *Shape) { s.N = 1 << 28 }, "2^40"},
		{"dimension over 2^29-1", func(s *Shape) { s.PadW = 1 << 29 }, "pad_w="},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("flagship: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.mod(&s)
			err := s.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate(%+v) = %v, want an error mentioning %q", s, err, tt.want)
			}
		})
	}
}

func TestParsePrecision(t *testing.T) {
	for _, p := range Precisions {
		for _, spelling := range []string{string(p), strings.ToUpper(string(p)), strings.ToUpper(string(p[:1])) + string(p[1:])} {
			got, err := ParsePrecision(spelling)
			if err != nil || got != p {
				t.Errorf("ParsePrecision(%q) = %q, %v; want %q", spelling, got, err, p)
			}
		}
	}
	if len(Precisions) != 5 {
		t.Errorf("Precisions = %v, want the 5 of fp32, tf32, 3xtf32, fp16, bf16", Precisions)
	}
	for _, name := range []string{"3xTF32", "Bf16", "TF32", "Fp16"} {
		if _, err := ParsePrecision(name); err != nil {
			t.Errorf("ParsePrecision(%q): %v", name, err)
		}
	}
	for _, bad := range []string{"", "fp64", "fp8", "float32", "tf32x3", " fp32", "fp32 "} {
		got, err := ParsePrecision(bad)
		if err == nil {
			t.Errorf("ParsePrecision(%q) = %q, want an error", bad, got)
			continue
		}
		if !strings.Contains(err.Error(), "precision") || !strings.Contains(err.Error(), "fp32") {
			t.Errorf("ParsePrecision(%q) error %q should name the flag and the valid names", bad, err)
		}
	}
}

func TestParseLayout(t *testing.T) {
	for _, l := range Layouts {
		for _, spelling := range []string{string(l), strings.ToUpper(string(l)), "N" + string(l[1:])} {
			got, err := ParseLayout(spelling)
			if err != nil || got != l {
				t.Errorf("ParseLayout(%q) = %q, %v; want %q", spelling, got, err, l)
			}
		}
	}
	if len(Layouts) != 2 {
		t.Errorf("Layouts = %v, want nchw and nhwc", Layouts)
	}
	for _, bad := range []string{"", "nhcw", "chwn", "nchw ", "ncwh"} {
		got, err := ParseLayout(bad)
		if err == nil {
			t.Errorf("ParseLayout(%q) = %q, want an error", bad, got)
			continue
		}
		if !strings.Contains(err.Error(), "layout") || !strings.Contains(err.Error(), "nhwc") {
			t.Errorf("ParseLayout(%q) error %q should name the valid layouts", bad, err)
		}
	}
	if NCHW.FilterLayout() != "kcrs" || NHWC.FilterLayout() != "krsc" {
		t.Errorf("FilterLayout: nchw %q, nhwc %q; want kcrs, krsc", NCHW.FilterLayout(), NHWC.FilterLayout())
	}
}

func TestPrecisionProperties(t *testing.T) {
	tests := []struct {
		p     Precision
		bound float64
		bytes int
	}{
		{FP32, 1e-5, 4},
		{TF32, 1e-3, 4},
		{TF32x3, 1e-5, 4},
		{FP16, 2e-3, 2},
		{BF16, 1e-2, 2},
	}
	seen := map[Precision]bool{}
	for _, tt := range tests {
		seen[tt.p] = true
		if got := tt.p.ErrorBound(); got != tt.bound {
			t.Errorf("%s.ErrorBound() = %g, want %g", tt.p, got, tt.bound)
		}
		if got := tt.p.ElementBytes(); got != tt.bytes {
			t.Errorf("%s.ElementBytes() = %d, want %d", tt.p, got, tt.bytes)
		}
	}
	for _, p := range Precisions {
		if !seen[p] {
			t.Errorf("precision %s has no expected error bound in this test", p)
		}
	}
}

func TestProblemString(t *testing.T) {
	p := Problem{Shape: mustParse(t, flagship), Precision: TF32x3, Layout: NHWC}
	want := "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2,dilation=1,groups=1,bias=true precision=3xtf32 layout=nhwc"
	if got := p.String(); got != want {
		t.Errorf("Problem.String() = %q\nwant                %q", got, want)
	}
}

// kb87 is KernelBench's kb87-pointwise: an output of exactly 2^31 elements.
const kb87 = "N=16,C=64,H=1024,W=1024,K=128,R=1,S=1,bias=false"

func TestLargeTensorsAccepted(t *testing.T) {
	s, err := ParseShape(kb87)
	if err != nil {
		t.Fatalf("ParseShape(kb87): %v", err)
	}
	if _, _, _, out := s.Elements(); out != 1<<31 {
		t.Errorf("kb87 output = %d elements, want 2^31", out)
	}
	if !s.Needs64BitIndex() {
		t.Errorf("kb87 (2^31 outputs).Needs64BitIndex() = false, want true")
	}
	// The largest tensors served: 2^40 elements each.
	top := Shape{N: 1 << 20, C: 1, H: 1 << 10, W: 1 << 10, K: 1, R: 1, S: 1, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1, Groups: 1}
	if err := top.Validate(); err != nil {
		t.Errorf("2^40-element input: %v", err)
	}
	top.W++
	if err := top.Validate(); err == nil || !strings.Contains(err.Error(), "2^40") {
		t.Errorf("2^40+2^30-element input: Validate = %v, want an error naming the 2^40 limit", err)
	}
}

func TestNeeds64BitIndex(t *testing.T) {
	tests := []struct {
		spec string
		want bool
	}{
		{flagship, false},
		// 2^31-1 is prime: products just below and just above it.
		{"N=1,C=1,H=46340,W=46340,K=1,R=1,S=1", false},                 // 2147395600 everywhere
		{"N=1,C=1,H=46341,W=46341,K=1,R=1,S=1", true},                  // input and output 2147488281
		{"N=1,C=2,H=32768,W=32768,K=1,R=1,S=1,stride=2", true},         // input 2^31, output 2^28
		{"N=1,C=1,H=32768,W=65535,K=1,R=1,S=1", false},                 // input and output 2^31-2^15
		{"N=1,C=1,H=32768,W=32768,K=2,R=1,S=1", true},                  // output 2^31 only
		{"N=1,C=32768,H=1,W=1,K=65536,R=1,S=1", true},                  // filter 2^31 only
		{"N=1,C=32768,H=1,W=1,K=65535,R=1,S=1", false},                 // filter 2^31-2^15
		{"N=1,C=2,H=1,W=1,K=1,R=1,S=1,pad_h=536870911,pad_w=0", false}, // padded rows 2*(2^30-1) = 2^31-2 only
		{"N=1,C=3,H=1,W=1,K=1,R=1,S=1,pad_h=536870911,pad_w=0", true},  // padded rows 3*(2^30-1) only
	}
	for _, tt := range tests {
		s, err := ParseShape(tt.spec)
		if err != nil {
			t.Errorf("ParseShape(%q): %v", tt.spec, err)
			continue
		}
		if got := s.Needs64BitIndex(); got != tt.want {
			in, f, _, out := s.Elements()
			t.Errorf("%s (input %d, filter %d, output %d).Needs64BitIndex() = %t, want %t", tt.spec, in, f, out, got, tt.want)
		}
	}
}
