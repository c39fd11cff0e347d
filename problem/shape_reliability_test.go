package problem

import (
	"fmt"
	"strings"
	"testing"
)

// TestFilterLargerThanPaddedInput covers issue 22, item 1: with a filter
// larger than the padded input and a stride above 1, truncating division
// gave P = 1 and the shape was accepted. PyTorch refuses these shapes.
func TestFilterLargerThanPaddedInput(t *testing.T) {
	tests := []struct {
		spec string
		want []string // the condition and its numbers
	}{
		{"N=1,C=3,H=5,W=5,K=8,R=7,S=7,stride=4",
			[]string{"P=", "at least 1", "H+2*pad_h >= dilation_h*(R-1)+1", "5+2*0=5 < 1*(7-1)+1=7", "taller"}},
		{"N=1,C=3,H=10,W=10,K=96,R=11,S=11,stride=2",
			[]string{"P=", "at least 1", "H+2*pad_h >= dilation_h*(R-1)+1", "10+2*0=10 < 1*(11-1)+1=11"}},
		{"N=1,C=3,H=10,W=10,K=8,R=3,S=3,dilation=6,stride=8",
			[]string{"P=", "at least 1", "10+2*0=10 < 6*(3-1)+1=13"}},
		{"N=1,C=3,H=9,W=5,K=8,R=3,S=7,stride=4",
			[]string{"Q=", "at least 1", "W+2*pad_w >= dilation_w*(S-1)+1", "5+2*0=5 < 1*(7-1)+1=7", "wider"}},
		{"N=1,C=3,H=3,W=9,K=8,R=7,S=3,pad_h=1,stride_h=3", // 3+2 = 5 < 7
			[]string{"P=", "3+2*1=5 < 1*(7-1)+1=7"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			s, err := ParseShape(tt.spec)
			if err == nil {
				t.Fatalf("ParseShape(%q) = %v (P=%d, Q=%d), want an error", tt.spec, s, s.P(), s.Q())
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestFilterFillsPaddedInput checks the boundary: a filter exactly as large
// as the padded input gives a 1×1 output whatever the stride.
func TestFilterFillsPaddedInput(t *testing.T) {
	for _, spec := range []string{
		"N=1,C=3,H=7,W=7,K=8,R=7,S=7,stride=4",
		"N=1,C=3,H=5,W=5,K=8,R=7,S=7,stride=4,pad=1",
		"N=1,C=3,H=13,W=13,K=8,R=3,S=3,dilation=6,stride=8",
	} {
		s := mustParse(t, spec)
		if s.P() != 1 || s.Q() != 1 {
			t.Errorf("%s: P, Q = %d, %d; want 1, 1", spec, s.P(), s.Q())
		}
	}
}

// TestOutputSizeFloors checks that P and Q round toward minus infinity, as
// PyTorch's output-size formula does, also for shapes Validate refuses.
func TestOutputSizeFloors(t *testing.T) {
	tests := []struct {
		in, pad, dil, taps, stride int
		want                       int
	}{
		{224, 2, 1, 11, 4, 55},
		{5, 0, 1, 7, 4, 0},   // numerator -2: floor(-2/4) = -1, not 0
		{10, 0, 1, 11, 2, 0}, // numerator -1
		{10, 0, 6, 3, 8, 0},  // numerator -3
		{5, 0, 1, 7, 1, -1},  // numerator -2, stride 1
		{1, 0, 1, 9, 4, -1},  // numerator -8: exactly -2
		{1, 0, 1, 10, 4, -2}, // numerator -9
		{7, 0, 1, 7, 4, 1},   // numerator 0
		{8, 0, 1, 3, 3, 2},   // numerator 5
		{8, 0, 1, 3, 0, 0},   // no stride: no output, no division by zero
	}
	for _, tt := range tests {
		if got := outputSize(tt.in, tt.pad, tt.dil, tt.taps, tt.stride); got != tt.want {
			t.Errorf("outputSize(in=%d, pad=%d, dilation=%d, taps=%d, stride=%d) = %d, want %d",
				tt.in, tt.pad, tt.dil, tt.taps, tt.stride, got, tt.want)
		}
	}
	s := Shape{N: 1, C: 3, H: 5, W: 5, K: 8, R: 7, S: 7, StrideH: 4, StrideW: 4, DilationH: 1, DilationW: 1, Groups: 1}
	if s.P() >= 1 || s.Q() >= 1 {
		t.Errorf("P, Q = %d, %d for a 7×7 filter on a 5×5 input: want below 1", s.P(), s.Q())
	}
	if err := s.Validate(); err == nil {
		t.Errorf("Validate(%+v) = nil, want an error", s)
	}
}

// TestErrorsDoNotEchoLongInput covers issue 22, item 8: errors echoed
// inputs of any length.
func TestErrorsDoNotEchoLongInput(t *testing.T) {
	const base = "N=1,C=4,H=8,W=8,K=4,R=3,S=3"
	long := strings.Repeat("x", 128<<10)
	tests := []struct {
		name string
		err  func() error
	}{
		{"not KEY=VALUE", func() error { _, err := ParseShape(base + "," + long); return err }},
		{"unknown key", func() error { _, err := ParseShape(base + "," + long + "=1"); return err }},
		{"size value", func() error { _, err := ParseShape("N=" + long + ",C=4,H=8,W=8,K=4,R=3,S=3"); return err }},
		{"pad value", func() error { _, err := ParseShape(base + ",pad=" + long); return err }},
		{"bias value", func() error { _, err := ParseShape(base + ",bias=" + long); return err }},
		{"precision", func() error { _, err := ParsePrecision(long); return err }},
		{"layout", func() error { _, err := ParseLayout(long); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if len(msg) > maxErrorLen {
				t.Errorf("error of %d bytes: %.200q...", len(msg), msg)
			}
			if !strings.Contains(msg, "…") || !strings.Contains(msg, fmt.Sprintf("(%d bytes)", len(long))) {
				t.Errorf("error %q: want the input cut with an ellipsis and its length", msg)
			}
		})
	}
}

// maxErrorLen bounds every error text of this package, whatever the input.
const maxErrorLen = 600
