package epilogue

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		spec      string
		want      Chain
		canonical string
	}{
		{"", nil, ""},
		{"   ", nil, ""},
		{"relu", Chain{{Op: ReLU}}, "relu"},
		{"scale_shift,relu", Chain{{Op: ScaleShift}, {Op: ReLU}}, "scale_shift,relu"},
		{" scale_shift , relu ", Chain{{Op: ScaleShift}, {Op: ReLU}}, "scale_shift,relu"},
		{"residual", Chain{{Op: Residual, Alpha: 1}}, "residual"},
		{"residual(1)", Chain{{Op: Residual, Alpha: 1}}, "residual"},
		{"residual(1.0)", Chain{{Op: Residual, Alpha: 1}}, "residual"},
		{"residual( 0.5 )", Chain{{Op: Residual, Alpha: 0.5}}, "residual(0.5)"},
		{"residual(-2)", Chain{{Op: Residual, Alpha: -2}}, "residual(-2)"},
		{"residual(0)", Chain{{Op: Residual}}, "residual(0)"},
		{"leaky_relu(0.1)", Chain{{Op: LeakyReLU, Alpha: 0.1}}, "leaky_relu(0.1)"},
		{"leaky_relu (0.1)", Chain{{Op: LeakyReLU, Alpha: 0.1}}, "leaky_relu(0.1)"},
		{"leaky_relu(-0)", Chain{{Op: LeakyReLU}}, "leaky_relu(0)"},
		{"leaky_relu(1e-2)", Chain{{Op: LeakyReLU, Alpha: 0.01}}, "leaky_relu(0.01)"},
		{"leaky_relu(0x1p-3)", Chain{{Op: LeakyReLU, Alpha: 0.125}}, "leaky_relu(0.125)"},
		{"leaky_relu(1_000)", Chain{{Op: LeakyReLU, Alpha: 1000}}, "leaky_relu(1000)"},
		{"leaky_relu(+.5)", Chain{{Op: LeakyReLU, Alpha: 0.5}}, "leaky_relu(0.5)"},
		// More digits than float32 holds: rounded, and the canonical text
		// is float32's shortest decimal.
		{"leaky_relu(0.1000000001)", Chain{{Op: LeakyReLU, Alpha: 0.1}}, "leaky_relu(0.1)"},
		{"leaky_relu(1e-7)", Chain{{Op: LeakyReLU, Alpha: 1e-7}}, "leaky_relu(1e-07)"},
		{"leaky_relu(1e-45)", Chain{{Op: LeakyReLU, Alpha: 1e-45}}, "leaky_relu(1e-45)"},
		{"leaky_relu(3.4028234e38)", Chain{{Op: LeakyReLU, Alpha: 3.4028234e38}}, "leaky_relu(3.4028235e+38)"},
		{"clamp(-1, 1)", Chain{{Op: Clamp, Lo: -1, Hi: 1}}, "clamp(-1,1)"},
		{"clamp( -1 ,1 )", Chain{{Op: Clamp, Lo: -1, Hi: 1}}, "clamp(-1,1)"},
		{"clamp(2,2)", Chain{{Op: Clamp, Lo: 2, Hi: 2}}, "clamp(2,2)"},
		{"clamp(-1,1),relu", Chain{{Op: Clamp, Lo: -1, Hi: 1}, {Op: ReLU}}, "clamp(-1,1),relu"},
		{"gelu,gelu_tanh", Chain{{Op: GELU}, {Op: GELUTanh}}, "gelu,gelu_tanh"},
		{"relu,relu", Chain{{Op: ReLU}, {Op: ReLU}}, "relu,relu"},
		{
			"scale_shift,residual(0.5),relu,relu6,leaky_relu(0.2),clamp(-3,3),sigmoid,tanh,gelu,gelu_tanh,silu,hardswish,mish",
			Chain{{Op: ScaleShift}, {Op: Residual, Alpha: 0.5}, {Op: ReLU}, {Op: ReLU6}, {Op: LeakyReLU, Alpha: 0.2},
				{Op: Clamp, Lo: -3, Hi: 3}, {Op: Sigmoid}, {Op: Tanh}, {Op: GELU}, {Op: GELUTanh}, {Op: SiLU},
				{Op: Hardswish}, {Op: Mish}},
			"scale_shift,residual(0.5),relu,relu6,leaky_relu(0.2),clamp(-3,3),sigmoid,tanh,gelu,gelu_tanh,silu,hardswish,mish",
		},
	} {
		c, err := Parse(tc.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.spec, err)
			continue
		}
		if !slices.Equal(c, tc.want) {
			t.Errorf("Parse(%q) = %#v, want %#v", tc.spec, c, tc.want)
		}
		if s := c.String(); s != tc.canonical {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.spec, s, tc.canonical)
		}
		if k := c.Key(); k != tc.canonical {
			t.Errorf("Parse(%q).Key() = %q, want %q", tc.spec, k, tc.canonical)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("Parse(%q).Validate(): %v", tc.spec, err)
		}
		back, err := Parse(c.String())
		if err != nil || !slices.Equal(back, c) {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.String(), back, err, c)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		spec  string
		index int
		want  []string // substrings of the error
	}{
		{"relu,foo", 2, []string{`element 2 "foo"`, "unknown name", "known names: scale_shift, residual, relu, relu6, leaky_relu, clamp, sigmoid, tanh, gelu, gelu_tanh, silu, hardswish, mish"}},
		{"ReLU", 1, []string{"names are lower case: relu"}},
		{"leaky relu(0.1)", 1, []string{"unknown name", `"leaky relu"`}},
		{"(1)", 1, []string{"no name before the parenthesis", "known names"}},
		{"relu,,gelu", 2, []string{"empty element"}},
		{"relu,", 2, []string{"empty element"}},
		{",relu", 1, []string{"empty element"}},
		{"relu()", 1, []string{"relu takes no arguments"}},
		{"sigmoid(1)", 1, []string{"sigmoid takes no arguments"}},
		{"gelu(tanh)", 1, []string{"gelu takes no arguments", "gelu_tanh"}},
		{"leaky_relu", 1, []string{"leaky_relu takes one argument", "got 0"}},
		{"leaky_relu()", 1, []string{"leaky_relu takes one argument", "got 0"}},
		{"leaky_relu(1,2)", 1, []string{"got 2"}},
		{"leaky_relu(x)", 1, []string{`leaky_relu's α: "x" is not a number`}},
		{"clamp(1,)", 1, []string{"clamp's hi: empty argument"}},
		{"clamp( ,1)", 1, []string{"clamp's lo: empty argument"}},
		{"leaky_relu(inf)", 1, []string{"not finite"}},
		{"leaky_relu(NaN)", 1, []string{"not finite"}},
		{"leaky_relu(1e39)", 1, []string{"beyond float32's range"}},
		{"leaky_relu(1e-50)", 1, []string{"too small for float32"}},
		{"residual()", 1, []string{"residual takes one argument", "got 0"}},
		{"residual(1,2)", 1, []string{"got 2"}},
		{"clamp(1)", 1, []string{"clamp takes two arguments", "got 1"}},
		{"clamp", 1, []string{"clamp takes two arguments", "got 0"}},
		{"clamp(1,-1)", 1, []string{"clamp's lo 1 exceeds its hi -1"}},
		{"clamp(0,y)", 1, []string{`clamp's hi: "y" is not a number`}},
		{"relu,leaky_relu(0.1", 2, []string{"'(' without ')'"}},
		{"relu)", 1, []string{"')' without '('"}},
		{"relu),gelu", 1, []string{"')' without '('"}},
		{"clamp((1),2)", 1, []string{"nested parentheses"}},
		{"clamp(1,2)x", 1, []string{"text after ')'"}},
		{"clamp(1,2)(3)", 1, []string{"text after ')'"}},
		{"scale_shift,relu,scale_shift", 3, []string{"scale_shift appears twice (first as element 1)", "one scale and one shift vector"}},
		{"residual,relu,residual(0.5)", 3, []string{"residual appears twice (first as element 1)", "one residual tensor"}},
	} {
		c, err := Parse(tc.spec)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want an error", tc.spec, c)
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q): error %T, want *ParseError", tc.spec, err)
			continue
		}
		if pe.Index != tc.index {
			t.Errorf("Parse(%q): error at element %d, want %d (%v)", tc.spec, pe.Index, tc.index, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%q) error %q lacks %q", tc.spec, err, w)
			}
		}
	}
}

// TestParseErrorClipped checks that a long element is echoed clipped, as
// internal/clip does, and that the message stays one bounded line.
func TestParseErrorClipped(t *testing.T) {
	long := "relu," + strings.Repeat("x", 10000) + "(1)"
	_, err := Parse(long)
	if err == nil {
		t.Fatal("Parse of a 10 kB unknown name succeeded")
	}
	msg := err.Error()
	if len(msg) > maxErrorLen {
		t.Errorf("error is %d bytes, want at most %d: %s", len(msg), maxErrorLen, msg)
	}
	if !strings.Contains(msg, "(10003 bytes)") || strings.Contains(msg, "\n") {
		t.Errorf("error does not clip the element to one line with its length: %s", msg)
	}
}

// maxErrorLen bounds a Parse error's length: the clipped element quoted
// (at most 4 bytes per byte of clip.Max), twice (the element and its name
// or argument), plus the longest reason.
const maxErrorLen = 1024

func TestNeeds(t *testing.T) {
	for _, tc := range []struct {
		spec                 string
		scaleShift, residual bool
	}{
		{"", false, false},
		{"relu,gelu", false, false},
		{"scale_shift,relu", true, false},
		{"residual(0.5),relu", false, true},
		{"relu,scale_shift,residual", true, true},
	} {
		c, err := Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if c.NeedsScaleShift() != tc.scaleShift || c.NeedsResidual() != tc.residual {
			t.Errorf("%q: NeedsScaleShift, NeedsResidual = %v, %v; want %v, %v",
				tc.spec, c.NeedsScaleShift(), c.NeedsResidual(), tc.scaleShift, tc.residual)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Chain
		want string
	}{
		{Chain{{Op: 0}}, "invalid op Op(0)"},
		{Chain{{Op: Mish + 1}}, "invalid op"},
		{Chain{{Op: ReLU, Alpha: 1}}, "relu takes no α"},
		{Chain{{Op: Sigmoid, Hi: 1}}, "sigmoid takes no bounds"},
		{Chain{{Op: Clamp, Lo: 2, Hi: 1}}, "lower bound 2 exceeds upper bound 1"},
		{Chain{{Op: LeakyReLU, Alpha: float32(inf)}}, "not finite"},
		{Chain{{Op: ReLU}, {Op: ScaleShift}, {Op: ScaleShift}}, "element 3: scale_shift appears twice (first as element 2)"},
	} {
		err := tc.c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%#v.Validate() = %v, want an error containing %q", tc.c, err, tc.want)
		}
	}
}

func TestOps(t *testing.T) {
	all := Ops()
	if len(all) != 13 {
		t.Fatalf("Ops() has %d ops, want 13", len(all))
	}
	for _, op := range all {
		c, err := Parse(op.String() + map[Op]string{LeakyReLU: "(0.1)", Clamp: "(0,1)"}[op])
		if err != nil || len(c) != 1 || c[0].Op != op {
			t.Errorf("Parse of %s = %v, %v", op, c, err)
		}
	}
	all[0] = Mish
	if Ops()[0] != ScaleShift {
		t.Error("Ops() returns the package's own slice")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "relu", "scale_shift,relu", "residual(0.5),gelu_tanh", "clamp(-1, 1)", "leaky_relu(1e-3)",
		"relu,,", "clamp((1),2)", "gelu(tanh)", "residual,residual", "leaky_relu(0x1p-3)", "clamp(1,2)x", "é(",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		c, err := Parse(spec)
		if err != nil {
			msg := err.Error()
			if len(msg) > maxErrorLen {
				t.Fatalf("Parse(%q): error of %d bytes: %s", spec, len(msg), msg)
			}
			if utf8.ValidString(spec) && !utf8.ValidString(msg) {
				t.Fatalf("Parse(%q): error is not valid UTF-8: %q", spec, msg)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse(%q) = %v, which Validate rejects: %v", spec, c, err)
		}
		s := c.String()
		back, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q, which Parse rejects: %v", spec, s, err)
		}
		if !slices.Equal(back, c) || back.String() != s {
			t.Fatalf("round trip of %q: %v → %q → %v", spec, c, s, back)
		}
		_ = CUDA(c)
		_ = Apply(c, 1.5, 0, []float64{1}, []float64{0}, -0.5)
	})
}

// TestGoName: every Op's GoName is the name of its constant (checked
// against the Op's grammar name with the underscores and case removed).
func TestGoName(t *testing.T) {
	for _, op := range Ops() {
		g := op.GoName()
		if g == "" || !strings.EqualFold(g, strings.ReplaceAll(op.String(), "_", "")) {
			t.Errorf("%s: GoName %q", op, g)
		}
	}
	if Op(0).GoName() != "" {
		t.Error("the zero Op has a GoName")
	}
}

// TestChainJSON: a Chain is its canonical text in JSON and reads back
// equal; a bad text is an error.
func TestChainJSON(t *testing.T) {
	c, err := Parse("scale_shift, residual(0.5), clamp(-1,6)")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(struct{ E Chain }{c})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"E":"scale_shift,residual(0.5),clamp(-1,6)"}` {
		t.Errorf("JSON %s", b)
	}
	var back struct{ E Chain }
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back.E, c) {
		t.Errorf("read back %v, %v; want %v", back.E, err, c)
	}
	if err := json.Unmarshal([]byte(`{"E":"relu,foo"}`), &back); err == nil {
		t.Error("a bad chain reads without an error")
	}
}
