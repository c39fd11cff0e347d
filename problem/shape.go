// Package problem describes what convgen is asked to build: the convolution's
// shape, the arithmetic precision and the tensor layout.
package problem

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/convgen/convgen/internal/clip"
)

// Shape is one 2-D convolution: input N×C×H×W, filter K×(C/Groups)×R×S,
// output N×K×P×Q, with symmetric zero padding.
type Shape struct {
	N, C, H, W int // batch, input channels, input height and width
	K, R, S    int // output channels, filter height and width

	StrideH, StrideW     int // step between filter positions
	PadH, PadW           int // zeros added on each side of the input
	DilationH, DilationW int // step between filter taps
	Groups               int // channel groups; C and K are divisible by it
	Bias                 bool
}

// maxIndex is the largest element count a kernel may index with 32-bit int
// arithmetic; larger tensors need 64-bit offsets (Shape.Needs64BitIndex).
const maxIndex = math.MaxInt32

// maxDim bounds every single size, stride, pad and dilation (2^29−1), so
// that a coordinate such as p*stride_h-pad_h+r*dilation_h stays exact in a
// 32-bit int even where the offsets it feeds are 64-bit.
const maxDim = maxIndex / 4

// maxElems bounds the element count of each tensor (2^40, 4 TiB of fp32):
// every index and byte count stays exact in int64, far from its limits.
const maxElems = 1 << 40

// keys lists every key Parse accepts, in canonical order.
var shapeKeys = []string{"n", "c", "h", "w", "k", "r", "s",
	"stride", "stride_h", "stride_w", "pad", "pad_h", "pad_w",
	"dilation", "dilation_h", "dilation_w", "groups", "bias"}

// ParseShape reads a shape from comma-separated KEY=VALUE pairs, keys
// case-insensitive: N,C,H,W,K,R,S are required; stride, pad and dilation
// (each also as _h/_w), groups (default 1) and bias (default true) are
// optional. Stride and dilation default to 1, pad to 0.
func ParseShape(spec string) (Shape, error) {
	s, _, err := parseShape(spec, shapeKeys, true)
	if err != nil {
		return Shape{}, err
	}
	if err := s.Validate(); err != nil {
		return Shape{}, err
	}
	return s, nil
}

// parseShape reads spec's KEY=VALUE pairs, keys among allowed, into a
// Shape (not validated; bias defaults to bias); it returns the values of
// the keys Shape has no field for (by lower-case key) with their spelling.
func parseShape(spec string, allowed []string, bias bool) (Shape, map[string][2]string, error) {
	vals := map[string]string{}
	// spelled keeps each key as the user wrote it, for messages.
	spelled := map[string]string{}
	for _, pair := range strings.Split(spec, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			return Shape{}, nil, fmt.Errorf("shape: %s is not KEY=VALUE", clip.Quote(pair))
		}
		written := strings.TrimSpace(k)
		k = strings.ToLower(written)
		v = strings.TrimSpace(v)
		if !slices.Contains(allowed, k) {
			return Shape{}, nil, fmt.Errorf("shape: unknown key %s (known: %s)", clip.Quote(written), strings.Join(allowed, ", "))
		}
		if first, dup := spelled[k]; dup {
			return Shape{}, nil, fmt.Errorf("shape: key %q given twice (first as %q)", written, first)
		}
		vals[k], spelled[k] = v, written
	}
	s := Shape{Groups: 1, Bias: bias}
	var err error
	for _, f := range []struct {
		key string
		dst *int
	}{{"n", &s.N}, {"c", &s.C}, {"h", &s.H}, {"w", &s.W}, {"k", &s.K}, {"r", &s.R}, {"s", &s.S}} {
		v, ok := vals[f.key]
		if !ok {
			return Shape{}, nil, fmt.Errorf("shape: missing required key %q (required: N,C,H,W,K,R,S)", strings.ToUpper(f.key))
		}
		if *f.dst, err = positive(spelled[f.key], v); err != nil {
			return Shape{}, nil, err
		}
	}
	if s.StrideH, s.StrideW, err = pairOf(vals, spelled, "stride", 1, positive); err != nil {
		return Shape{}, nil, err
	}
	if s.PadH, s.PadW, err = pairOf(vals, spelled, "pad", 0, nonNegative); err != nil {
		return Shape{}, nil, err
	}
	if s.DilationH, s.DilationW, err = pairOf(vals, spelled, "dilation", 1, positive); err != nil {
		return Shape{}, nil, err
	}
	if v, ok := vals["groups"]; ok {
		if s.Groups, err = positive(spelled["groups"], v); err != nil {
			return Shape{}, nil, err
		}
	}
	if v, ok := vals["bias"]; ok {
		switch strings.ToLower(v) {
		case "1", "true", "yes", "on":
			s.Bias = true
		case "0", "false", "no", "off":
			s.Bias = false
		default:
			return Shape{}, nil, fmt.Errorf("shape: %s=%s: must be true or false (or 1/0, yes/no, on/off)", spelled["bias"], clip.Quote(v))
		}
	}
	rest := map[string][2]string{}
	for k, v := range vals {
		if !slices.Contains(shapeKeys, k) {
			rest[k] = [2]string{v, spelled[k]}
		}
	}
	return s, rest, nil
}

// positive and nonNegative read the value v of key (as the user wrote the
// key).
func positive(key, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("shape: %s=%s: must be a positive integer", key, clip.Quote(v))
	}
	return n, nil
}

func nonNegative(key, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("shape: %s=%s: must be a non-negative integer", key, clip.Quote(v))
	}
	return n, nil
}

// pairOf reads KEY, KEY_h and KEY_w; KEY sets both and may not be combined
// with the others. spelled maps each key given to its spelling.
func pairOf(vals, spelled map[string]string, key string, def int, conv func(string, string) (int, error)) (h, w int, err error) {
	h, w = def, def
	if v, ok := vals[key]; ok {
		for _, side := range []string{key + "_h", key + "_w"} {
			if _, both := vals[side]; both {
				return 0, 0, fmt.Errorf("shape: %s and %s both given: use one or the other", spelled[key], spelled[side])
			}
		}
		if h, err = conv(spelled[key], v); err != nil {
			return 0, 0, err
		}
		return h, h, nil
	}
	if v, ok := vals[key+"_h"]; ok {
		if h, err = conv(spelled[key+"_h"], v); err != nil {
			return 0, 0, err
		}
	}
	if v, ok := vals[key+"_w"]; ok {
		if w, err = conv(spelled[key+"_w"], v); err != nil {
			return 0, 0, err
		}
	}
	return h, w, nil
}

// Validate checks the rules ParseShape enforces, for shapes built in code.
func (s Shape) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"N", s.N}, {"C", s.C}, {"H", s.H}, {"W", s.W}, {"K", s.K}, {"R", s.R}, {"S", s.S},
		{"stride_h", s.StrideH}, {"stride_w", s.StrideW}, {"dilation_h", s.DilationH}, {"dilation_w", s.DilationW}, {"groups", s.Groups}} {
		if f.v < 1 {
			return fmt.Errorf("shape: %s=%d: must be positive", f.name, f.v)
		}
	}
	if s.PadH < 0 || s.PadW < 0 {
		return fmt.Errorf("shape: pad=%d,%d: must be non-negative", s.PadH, s.PadW)
	}
	// Bound every value first, so that P, Q and the products below are exact.
	for _, f := range []struct {
		name string
		v    int
	}{{"N", s.N}, {"C", s.C}, {"H", s.H}, {"W", s.W}, {"K", s.K}, {"R", s.R}, {"S", s.S},
		{"stride_h", s.StrideH}, {"stride_w", s.StrideW}, {"pad_h", s.PadH}, {"pad_w", s.PadW},
		{"dilation_h", s.DilationH}, {"dilation_w", s.DilationW}, {"groups", s.Groups}} {
		if f.v > maxDim {
			return fmt.Errorf("shape: %s=%d is too large: each size, stride, pad and dilation is at most %d (2^29-1)", f.name, f.v, maxDim)
		}
	}
	if s.C%s.Groups != 0 {
		return fmt.Errorf("shape: C=%d is not divisible by groups=%d", s.C, s.Groups)
	}
	if s.K%s.Groups != 0 {
		return fmt.Errorf("shape: K=%d is not divisible by groups=%d", s.K, s.Groups)
	}
	// The padded input must hold one whole dilated filter; checked before P
	// and Q are computed, as PyTorch does.
	if have, need := padded(s.H, s.PadH), span(s.DilationH, s.R); have < need {
		return fmt.Errorf("shape: output height P=floor((H+2*pad_h-dilation_h*(R-1)-1)/stride_h)+1 must be at least 1, which needs H+2*pad_h >= dilation_h*(R-1)+1, but %d+2*%d=%d < %d*(%d-1)+1=%d (filter taller than the padded input)",
			s.H, s.PadH, have, s.DilationH, s.R, need)
	}
	if have, need := padded(s.W, s.PadW), span(s.DilationW, s.S); have < need {
		return fmt.Errorf("shape: output width Q=floor((W+2*pad_w-dilation_w*(S-1)-1)/stride_w)+1 must be at least 1, which needs W+2*pad_w >= dilation_w*(S-1)+1, but %d+2*%d=%d < %d*(%d-1)+1=%d (filter wider than the padded input)",
			s.W, s.PadW, have, s.DilationW, s.S, need)
	}
	for _, m := range s.measures() {
		if m.elems > maxElems {
			return fmt.Errorf("shape: %s has more than %d (2^40) elements, the most convgen serves", m.name, maxElems)
		}
	}
	return nil
}

// measure is one element count Validate bounds.
type measure struct {
	name  string
	elems int // saturated above maxElems
}

// measures are the tensors' element counts and the padded input's rows,
// each saturated above maxElems. Callers bound every value by maxDim first.
func (s Shape) measures() []measure {
	return []measure{
		{"input N*C*H*W", product(s.N, s.C, s.H, s.W)},
		{"output N*K*P*Q", product(s.N, s.K, s.P(), s.Q())},
		{"filter K*C*R*S", product(s.K, s.C/s.Groups, s.R, s.S)},
		{"padded input rows N*C*(H+2*pad_h)", product(s.N, s.C, s.H+2*s.PadH)},
	}
}

// Needs64BitIndex says whether a kernel must compute offsets in 64 bits for
// s: the input, filter or output, or the padded input's rows
// N*C*(H+2*pad_h), has more than 2^31−1 elements. Only the generic family
// serves such shapes. It is meaningful for shapes that pass Validate.
func (s Shape) Needs64BitIndex() bool {
	for _, m := range s.measures() {
		if m.elems > maxIndex {
			return true
		}
	}
	return false
}

// product multiplies non-negative factors, saturating above maxElems so that
// it cannot overflow; a negative factor saturates too.
func product(xs ...int) int {
	p := 1
	for _, x := range xs {
		if x == 0 {
			return 0
		}
		if x < 0 || p > maxElems || x > maxElems/p {
			return maxElems + 1
		}
		p *= x
	}
	return p
}

// P is the output height, floor((H+2*pad_h-dilation_h*(R-1)-1)/stride_h)+1;
// below 1 for a filter taller than the padded input (Validate refuses
// those).
func (s Shape) P() int { return outputSize(s.H, s.PadH, s.DilationH, s.R, s.StrideH) }

// Q is the output width, floor((W+2*pad_w-dilation_w*(S-1)-1)/stride_w)+1;
// below 1 for a filter wider than the padded input.
func (s Shape) Q() int { return outputSize(s.W, s.PadW, s.DilationW, s.S, s.StrideW) }

// outputSize is floor((in+2*pad-dilation*(taps-1)-1)/stride)+1, rounding
// toward minus infinity as PyTorch does (Go's / truncates toward zero, which
// would give 1 for a small negative numerator). It is 0 for a stride below 1.
func outputSize(in, pad, dilation, taps, stride int) int {
	if stride < 1 {
		return 0
	}
	num := padded(in, pad) - span(dilation, taps)
	q := num / int64(stride)
	if num < 0 && num%int64(stride) != 0 {
		q--
	}
	return int(q + 1)
}

// padded is in+2*pad, the padded input's extent, in 64 bits so that it
// cannot overflow for values Validate bounds.
func padded(in, pad int) int64 { return int64(in) + 2*int64(pad) }

// span is dilation*(taps-1)+1, the dilated filter's extent.
func span(dilation, taps int) int64 { return int64(dilation)*(int64(taps)-1) + 1 }

// FLOPs counts the multiply-adds as two operations each (bias adds not counted).
func (s Shape) FLOPs() float64 {
	return 2 * float64(s.N) * float64(s.K) * float64(s.P()) * float64(s.Q()) *
		float64(s.C/s.Groups) * float64(s.R) * float64(s.S)
}

// Elements returns the element counts of input, filter, bias and output.
func (s Shape) Elements() (input, filter, bias, output int) {
	input = s.N * s.C * s.H * s.W
	filter = s.K * (s.C / s.Groups) * s.R * s.S
	if s.Bias {
		bias = s.K
	}
	output = s.N * s.K * s.P() * s.Q()
	return
}

// String is the canonical form: every key, lower case except the sizes,
// stride/pad/dilation written once when height and width agree. ParseShape
// reads it back to the same Shape.
func (s Shape) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "N=%d,C=%d,H=%d,W=%d,K=%d,R=%d,S=%d", s.N, s.C, s.H, s.W, s.K, s.R, s.S)
	for _, p := range []struct {
		key  string
		h, w int
	}{{"stride", s.StrideH, s.StrideW}, {"pad", s.PadH, s.PadW}, {"dilation", s.DilationH, s.DilationW}} {
		if p.h == p.w {
			fmt.Fprintf(&b, ",%s=%d", p.key, p.h)
		} else {
			fmt.Fprintf(&b, ",%s_h=%d,%s_w=%d", p.key, p.h, p.key, p.w)
		}
	}
	fmt.Fprintf(&b, ",groups=%d,bias=%t", s.Groups, s.Bias)
	return b.String()
}
