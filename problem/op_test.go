package problem

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
)

func TestParseOp(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Op
	}{{"fprop", OpFprop}, {"DGRAD", OpDgrad}, {"Wgrad", OpWgrad}} {
		got, err := ParseOp(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseOp(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	_, err := ParseOp("bwd")
	if err == nil || !strings.Contains(err.Error(), "fprop, dgrad, wgrad") {
		t.Errorf("ParseOp(bwd) error %v, want one listing the ops", err)
	}
}

// TestProblemStringOp checks that the forward op keeps the canonical form it
// had before ops existed (cache keys and hashes depend on it) and that the
// gradients add their name.
func TestProblemStringOp(t *testing.T) {
	s, err := ParseShape("N=1,C=3,H=8,W=8,K=4,R=3,S=3")
	if err != nil {
		t.Fatal(err)
	}
	base := "N=1,C=3,H=8,W=8,K=4,R=3,S=3,stride=1,pad=0,dilation=1,groups=1,bias=true precision=fp16 layout=nhwc"
	for op, want := range map[Op]string{OpFprop: base, OpDgrad: base + " op=dgrad", OpWgrad: base + " op=wgrad"} {
		if got := (Problem{Shape: s, Precision: FP16, Layout: NHWC, Op: op}).String(); got != want {
			t.Errorf("%v: String() = %q, want %q", op, got, want)
		}
	}
}

func TestOpJSON(t *testing.T) {
	for _, op := range Ops {
		b, err := json.Marshal(op)
		if err != nil || string(b) != `"`+op.String()+`"` {
			t.Fatalf("Marshal(%v) = %s, %v", op, b, err)
		}
		var back Op
		if err := json.Unmarshal(b, &back); err != nil || back != op {
			t.Errorf("Unmarshal(%s) = %v, %v", b, back, err)
		}
	}
	var o Op
	if err := json.Unmarshal([]byte(`"tgrad"`), &o); err == nil {
		t.Error("Unmarshal of an unknown op succeeded")
	}
	if _, err := json.Marshal(Op(9)); err == nil {
		t.Error("Marshal of Op(9) succeeded")
	}
}

func TestValidateOpEpilogue(t *testing.T) {
	s, _ := ParseShape("N=1,C=3,H=8,W=8,K=4,R=3,S=3")
	c, err := epilogue.Parse("relu")
	if err != nil {
		t.Fatal(err)
	}
	if err := (Problem{Shape: s, Precision: FP32, Layout: NCHW, Epilogue: c}).Validate(); err != nil {
		t.Errorf("fprop with a chain: %v", err)
	}
	for _, op := range []Op{OpDgrad, OpWgrad} {
		err := (Problem{Shape: s, Precision: FP32, Layout: NCHW, Epilogue: c, Op: op}).Validate()
		if !errors.Is(err, ErrEpilogueOp) {
			t.Errorf("%v with a chain: %v, want ErrEpilogueOp", op, err)
		}
		if err := (Problem{Shape: s, Precision: FP32, Layout: NCHW, Op: op}).Validate(); err != nil {
			t.Errorf("%v: %v", op, err)
		}
	}
	if err := (Problem{Shape: s, Precision: FP32, Layout: NCHW, Op: Op(7)}).Validate(); err == nil {
		t.Error("Op(7) validated")
	}
}

func TestOperands(t *testing.T) {
	s, _ := ParseShape("N=2,C=6,H=8,W=9,K=4,R=3,S=2,groups=2,stride=2")
	x, w, b, y := s.Elements()
	d := Problem{Shape: s, Precision: FP16, Layout: NCHW, Op: OpDgrad}.Operands()
	if d[0].Name != "dX" || d[0].Elems != x || !d[0].Output || d[1].Elems != y || d[2].Elems != w || d[3].Elems != 0 {
		t.Errorf("dgrad operands %+v", d)
	}
	g := Problem{Shape: s, Precision: FP16, Layout: NCHW, Op: OpWgrad}.Operands()
	if g[0].Name != "dW" || g[0].Elems != w || g[1].Elems != x || g[2].Elems != y || g[3].Elems != b || !g[3].FP32 || !g[3].Output {
		t.Errorf("wgrad operands %+v", g)
	}
	s.Bias = false
	if g := (Problem{Shape: s, Precision: FP32, Layout: NCHW, Op: OpWgrad}).Operands(); g[3].Elems != 0 {
		t.Errorf("wgrad without bias: dBias %+v", g[3])
	}
	f := Problem{Shape: s, Precision: FP32, Layout: NCHW}.Operands()
	if f[0].Name != "Y" || f[0].Elems != y || f[1].Elems != x || f[3].Elems != 0 {
		t.Errorf("fprop operands %+v", f)
	}
}
