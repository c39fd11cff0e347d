package problem

import (
	"errors"
	"fmt"
	"strings"

	"github.com/convgen/convgen/internal/clip"
)

// Op is the computation a problem asks for: the forward convolution or one
// of its gradients. The zero Op is OpFprop, so a Problem built without one
// is today's forward convolution.
//
// Each op's kernel takes four pointer parameters, always in the order
// (out, in, filter, bias); what each one holds depends on the op
// (Problem.Operands, docs/families.md#ops):
//
//	op      out            in                 filter              bias
//	fprop   Y  (N,K,P,Q)   X  (N,C,H,W)       W  (K,C/G,R,S)       bias (K), read
//	dgrad   dX (N,C,H,W)   dY (N,K,P,Q)       W  (K,C/G,R,S)       unused (null)
//	wgrad   dW (K,C/G,R,S) X  (N,C,H,W)       dY (N,K,P,Q)         dBias (K), written
//
// X, Y, dX and dY are in the problem's layout (NCHW or NHWC), W and dW in
// its filter layout (KCRS or KRSC). Every tensor is of the precision's
// element type (float, or FP16/BF16 bits) except dBias, which is FP32
// whatever the precision; fp16 and bf16 gradients accumulate in FP32 and
// are rounded once when stored. dBias exists only for a shape with bias.
type Op uint8

// The ops convgen knows.
const (
	OpFprop Op = iota // forward: Y = conv(X, W) + bias
	OpDgrad           // data gradient: dX = conv^T(dY, W)
	OpWgrad           // filter gradient: dW = sum over N,P,Q of dY (x) X; dBias = sum dY
)

// Ops lists every op in a stable order.
var Ops = []Op{OpFprop, OpDgrad, OpWgrad}

var opNames = [...]string{OpFprop: "fprop", OpDgrad: "dgrad", OpWgrad: "wgrad"}

// String is the op's name: "fprop", "dgrad" or "wgrad".
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Valid reports whether o is one of Ops.
func (o Op) Valid() bool { return int(o) < len(opNames) }

// ParseOp reads an op name, case-insensitive.
func ParseOp(s string) (Op, error) {
	for _, o := range Ops {
		if strings.EqualFold(s, o.String()) {
			return o, nil
		}
	}
	names := make([]string, len(Ops))
	for i, o := range Ops {
		names[i] = o.String()
	}
	return 0, fmt.Errorf("op %s: must be one of %s", clip.Quote(s), strings.Join(names, ", "))
}

// MarshalText writes the op's name, so that JSON carries "dgrad", not 1.
func (o Op) MarshalText() ([]byte, error) {
	if !o.Valid() {
		return nil, fmt.Errorf("problem: invalid op %d", uint8(o))
	}
	return []byte(o.String()), nil
}

// UnmarshalText reads an op's name (ParseOp); the empty text is OpFprop.
func (o *Op) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*o = OpFprop
		return nil
	}
	v, err := ParseOp(string(b))
	if err != nil {
		return err
	}
	*o = v
	return nil
}

// ErrEpilogueOp is Validate's refusal of an epilogue chain on a gradient
// op: a chain applies to forward outputs only.
var ErrEpilogueOp = errors.New("an epilogue chain applies only to op=fprop")

// Validate checks what ParseShape, ParsePrecision, ParseLayout and ParseOp
// check, that only the forward op has an epilogue chain, and that an
// output precision is a storage type and, other than the input's, on the
// forward op only.
func (p Problem) Validate() error {
	if err := p.Shape.Validate(); err != nil {
		return err
	}
	if _, err := ParsePrecision(string(p.Precision)); err != nil {
		return err
	}
	if _, err := ParseLayout(string(p.Layout)); err != nil {
		return err
	}
	if !p.Op.Valid() {
		return fmt.Errorf("problem: invalid op %d", uint8(p.Op))
	}
	if p.Op != OpFprop && len(p.Epilogue) > 0 {
		return fmt.Errorf("problem: op=%s with epilogue %s: %w", p.Op, p.Epilogue, ErrEpilogueOp)
	}
	if p.OutPrecision != "" {
		if _, err := ParseStorage(string(p.OutPrecision)); err != nil || !p.OutPrecision.Valid() {
			return fmt.Errorf("problem: output precision %s: must be one of %s", clip.Quote(string(p.OutPrecision)), joinNames(Storages))
		}
	}
	if p.Op != OpFprop && p.OutDiffers() {
		return fmt.Errorf("problem: op=%s with output precision %s (input %s): %w", p.Op, p.OutPrecision, p.Precision, ErrOutPrecisionOp)
	}
	return nil
}

// Operand is one of an op's four kernel parameters (Op): its role, its
// element count and whether the kernel writes it.
type Operand struct {
	// Name is the tensor's role: "X", "W", "bias", "Y", "dX", "dY", "dW",
	// "dBias"; "" for a parameter the op does not use (Elems is then 0).
	Name string
	// Elems is the element count; 0 for an unused parameter or an absent
	// bias.
	Elems int
	// Output says that the kernel writes it.
	Output bool
	// FP32 says that its elements are float32 whatever the precision
	// (dBias); otherwise they are of the precision's element type.
	FP32 bool
	// Layout is how its elements are ordered: "data" (the problem's layout
	// over N,C,H,W or N,K,P,Q), "filter" (the filter layout), "channel" (K
	// values) or "" for an unused parameter.
	Layout string
}

// Operands are p's kernel parameters in order: out, in, filter, bias (Op).
func (p Problem) Operands() [4]Operand {
	x, w, b, y := p.Shape.Elements()
	switch p.Op {
	case OpDgrad:
		return [4]Operand{
			{Name: "dX", Elems: x, Output: true, Layout: "data"},
			{Name: "dY", Elems: y, Layout: "data"},
			{Name: "W", Elems: w, Layout: "filter"},
			{},
		}
	case OpWgrad:
		bias := Operand{}
		if b > 0 {
			bias = Operand{Name: "dBias", Elems: b, Output: true, FP32: true, Layout: "channel"}
		}
		return [4]Operand{
			{Name: "dW", Elems: w, Output: true, Layout: "filter"},
			{Name: "X", Elems: x, Layout: "data"},
			{Name: "dY", Elems: y, Layout: "data"},
			bias,
		}
	}
	bias := Operand{}
	if b > 0 {
		bias = Operand{Name: "bias", Elems: b, Layout: "channel"}
	}
	return [4]Operand{
		{Name: "Y", Elems: y, Output: true, Layout: "data"},
		{Name: "X", Elems: x, Layout: "data"},
		{Name: "W", Elems: w, Layout: "filter"},
		bias,
	}
}
