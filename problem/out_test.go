package problem

import (
	"errors"
	"strings"
	"testing"
)

func TestOutPrecision(t *testing.T) {
	s, err := ParseShape("N=1,C=8,H=8,W=8,K=8,R=3,S=3,pad=1")
	if err != nil {
		t.Fatal(err)
	}
	base := Problem{Shape: s, Precision: FP32, Layout: NHWC}
	tests := []struct {
		prec    Precision
		out     Storage
		differs bool
		bytes   int
		bound   float64
		suffix  string
	}{
		{FP32, "", false, 4, 1e-5, ""},
		{FP32, StorageFP32, false, 4, 1e-5, ""},
		{TF32, StorageFP32, false, 4, 1e-3, ""},
		{FP32, StorageBF16, true, 2, 1e-2, " out=bf16"},
		{TF32, StorageFP16, true, 2, 2e-3, " out=fp16"},
		{FP16, StorageFP32, true, 4, 2e-3, " out=fp32"},
		{BF16, StorageFP32, true, 4, 1e-2, " out=fp32"},
		{FP16, StorageBF16, true, 2, 1e-2, " out=bf16"},
		{BF16, StorageBF16, false, 2, 1e-2, ""},
	}
	for _, tt := range tests {
		p := base
		p.Precision, p.OutPrecision = tt.prec, tt.out
		if got := p.OutDiffers(); got != tt.differs {
			t.Errorf("%s out %q: OutDiffers = %v, want %v", tt.prec, tt.out, got, tt.differs)
		}
		if got := p.OutElementBytes(); got != tt.bytes {
			t.Errorf("%s out %q: OutElementBytes = %d, want %d", tt.prec, tt.out, got, tt.bytes)
		}
		if got := p.ErrorBound(); got != tt.bound {
			t.Errorf("%s out %q: ErrorBound = %g, want %g", tt.prec, tt.out, got, tt.bound)
		}
		want := s.String() + " precision=" + string(tt.prec) + " layout=nhwc" + tt.suffix
		if got := p.String(); got != want {
			t.Errorf("String = %q, want %q", got, want)
		}
		if c := p.Canonical(); (c.OutPrecision != "") != tt.differs || c.String() != p.String() {
			t.Errorf("%s out %q: Canonical = %+v", tt.prec, tt.out, c)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: Validate: %v", p, err)
		}
		p.Op = OpDgrad
		if err := p.Validate(); tt.differs != errors.Is(err, ErrOutPrecisionOp) {
			t.Errorf("%s op=dgrad: Validate = %v, want ErrOutPrecisionOp: %v", p, err, tt.differs)
		}
	}
	bad := base
	bad.OutPrecision = "tf32"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "output precision \"tf32\": must be one of fp32, fp16, bf16") {
		t.Errorf("Validate of out=tf32 = %v", err)
	}
	for _, in := range []string{"fp32", "FP16", "bf16"} {
		if st, err := ParseStorage(in); err != nil || !strings.EqualFold(string(st), in) {
			t.Errorf("ParseStorage(%q) = %q, %v", in, st, err)
		}
	}
	if _, err := ParseStorage("3xtf32"); err == nil {
		t.Error("ParseStorage(3xtf32) succeeded")
	}
}
