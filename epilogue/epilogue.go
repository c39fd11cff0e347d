// Package epilogue is the chain of per-element operations a convolution
// kernel applies to each output value before it stores it: a per-channel
// scale and shift (batch norm folded for inference), a residual add and
// activations, in the order written.
//
// Parse reads the textual form (the grammar of the upcoming -epilogue flag,
// docs/epilogue.md); Chain is the typed result, with the canonical String
// (and Key, for cache keys) that Parse reads back to an equal Chain. Apply
// is the float64 CPU reference of a chain and CUDA emits it as a CUDA
// __device__ function with its constants compiled in.
//
// A chain's parameters are float32 values: they are rounded to float32 when
// parsed, which is the precision the kernel applies them in, so that the
// reference, the emitted code and the canonical text all use the same
// number.
package epilogue

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Op is one kind of chain element.
type Op int

// The chain elements. The zero Op is not a valid element.
const (
	// ScaleShift is y = scale[k]·y + shift[k], k the output channel.
	ScaleShift Op = iota + 1
	// Residual is y = y + α·z, z the residual tensor's element at the same
	// position as y (same shape and layout as the output).
	Residual
	// ReLU is max(y, 0).
	ReLU
	// ReLU6 is min(max(y, 0), 6).
	ReLU6
	// LeakyReLU is y for y > 0, α·y otherwise.
	LeakyReLU
	// Clamp is min(max(y, lo), hi).
	Clamp
	// Sigmoid is 1/(1+exp(−y)).
	Sigmoid
	// Tanh is tanh(y).
	Tanh
	// GELU is the exact (erf) form, 0.5·y·(1+erf(y/√2)).
	GELU
	// GELUTanh is the tanh approximation,
	// 0.5·y·(1+tanh(√(2/π)·(y+0.044715·y³))).
	GELUTanh
	// SiLU is y·sigmoid(y).
	SiLU
	// Hardswish is y·relu6(y+3)/6.
	Hardswish
	// Mish is y·tanh(softplus(y)), softplus(y) = log(1+exp(y)).
	Mish
)

// ops lists every valid Op in declaration order.
var ops = []Op{ScaleShift, Residual, ReLU, ReLU6, LeakyReLU, Clamp, Sigmoid, Tanh, GELU, GELUTanh, SiLU, Hardswish, Mish}

// names maps each valid Op to its spelling in the grammar.
var names = map[Op]string{
	ScaleShift: "scale_shift",
	Residual:   "residual",
	ReLU:       "relu",
	ReLU6:      "relu6",
	LeakyReLU:  "leaky_relu",
	Clamp:      "clamp",
	Sigmoid:    "sigmoid",
	Tanh:       "tanh",
	GELU:       "gelu",
	GELUTanh:   "gelu_tanh",
	SiLU:       "silu",
	Hardswish:  "hardswish",
	Mish:       "mish",
}

// goNames maps each valid Op to the name of its constant in this package.
var goNames = map[Op]string{
	ScaleShift: "ScaleShift", Residual: "Residual", ReLU: "ReLU", ReLU6: "ReLU6", LeakyReLU: "LeakyReLU",
	Clamp: "Clamp", Sigmoid: "Sigmoid", Tanh: "Tanh", GELU: "GELU", GELUTanh: "GELUTanh", SiLU: "SiLU",
	Hardswish: "Hardswish", Mish: "Mish",
}

// GoName is the name of the Op's constant in this package ("LeakyReLU"),
// for generated Go code; "" for an invalid Op.
func (o Op) GoName() string { return goNames[o] }

// Ops returns every valid Op, in declaration order.
func Ops() []Op { return slices.Clone(ops) }

// Valid reports whether o is one of the declared Ops.
func (o Op) Valid() bool { _, ok := names[o]; return ok }

// String returns the Op's name in the grammar ("leaky_relu"), or "Op(n)"
// for an invalid Op.
func (o Op) String() string {
	if n, ok := names[o]; ok {
		return n
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Element is one step of a chain: an Op and its parameters. Parameters an
// Op does not take are zero.
type Element struct {
	// Op is the operation.
	Op Op
	// Alpha is Residual's scale of z (1 for a plain "residual") and
	// LeakyReLU's negative slope.
	Alpha float32
	// Lo and Hi are Clamp's bounds, Lo ≤ Hi.
	Lo, Hi float32
}

// String returns the element's canonical text: its name, and its
// parameters in parentheses, comma-separated without spaces, each the
// shortest decimal that reads back as the same float32. Residual with
// α = 1 is written "residual".
func (e Element) String() string {
	switch e.Op {
	case Residual:
		if e.Alpha == 1 {
			return e.Op.String()
		}
		return e.Op.String() + "(" + formatNumber(e.Alpha) + ")"
	case LeakyReLU:
		return e.Op.String() + "(" + formatNumber(e.Alpha) + ")"
	case Clamp:
		return e.Op.String() + "(" + formatNumber(e.Lo) + "," + formatNumber(e.Hi) + ")"
	}
	return e.Op.String()
}

// Validate reports why e is not an element Parse could have produced: an
// invalid Op, a non-finite parameter, a parameter its Op does not take, or
// Lo > Hi.
func (e Element) Validate() error {
	if !e.Op.Valid() {
		return fmt.Errorf("invalid op %s", e.Op)
	}
	for _, v := range []float32{e.Alpha, e.Lo, e.Hi} {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%s: parameter %v is not finite", e.Op, v)
		}
	}
	takesAlpha := e.Op == Residual || e.Op == LeakyReLU
	if !takesAlpha && e.Alpha != 0 {
		return fmt.Errorf("%s takes no α, has %v", e.Op, e.Alpha)
	}
	if e.Op != Clamp && (e.Lo != 0 || e.Hi != 0) {
		return fmt.Errorf("%s takes no bounds, has %v, %v", e.Op, e.Lo, e.Hi)
	}
	if e.Op == Clamp && e.Lo > e.Hi {
		return fmt.Errorf("clamp: lower bound %s exceeds upper bound %s", formatNumber(e.Lo), formatNumber(e.Hi))
	}
	return nil
}

// Chain is a sequence of elements applied in order to each output value.
// The empty (or nil) Chain leaves the value unchanged.
type Chain []Element

// String returns the canonical text of the chain: the elements' canonical
// texts joined by commas, without spaces; "" for the empty chain. Parse
// reads it back to an equal chain.
func (c Chain) String() string {
	parts := make([]string, len(c))
	for i, e := range c {
		parts[i] = e.String()
	}
	return strings.Join(parts, ",")
}

// Key returns the text that identifies the chain in cache keys: its
// canonical String, "" for the empty chain (so that a convolution without
// an epilogue keeps the key it had before epilogues existed). Two chains
// have the same Key exactly when they are equal.
func (c Chain) Key() string { return c.String() }

// NeedsScaleShift reports whether the chain reads the per-channel scale and
// shift vectors (K floats each), which Forward must then be given.
func (c Chain) NeedsScaleShift() bool { return c.has(ScaleShift) }

// NeedsResidual reports whether the chain reads the residual tensor (of the
// output's shape and layout), which Forward must then be given.
func (c Chain) NeedsResidual() bool { return c.has(Residual) }

// has reports whether some element of c is op.
func (c Chain) has(op Op) bool {
	return slices.ContainsFunc(c, func(e Element) bool { return e.Op == op })
}

// Validate reports why c is not a chain Parse could have produced: an
// invalid element (Element.Validate) or a second scale_shift or residual.
func (c Chain) Validate() error {
	seen := map[Op]int{}
	for i, e := range c {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("element %d: %w", i+1, err)
		}
		if j, dup := seen[e.Op]; dup {
			return fmt.Errorf("element %d: %w", i+1, duplicateError(e.Op, j+1))
		}
		if e.Op == ScaleShift || e.Op == Residual {
			seen[e.Op] = i
		}
	}
	return nil
}

// duplicateError explains why op, already element first (1-based), may not
// appear again.
func duplicateError(op Op, first int) error {
	switch op {
	case ScaleShift:
		return fmt.Errorf("scale_shift appears twice (first as element %d): the kernel takes one scale and one shift vector; fold the two into one (scale = a2·a1, shift = a2·b1 + b2)", first)
	default: // Residual
		return fmt.Errorf("residual appears twice (first as element %d): Forward takes one residual tensor and the chain adds it once, as residual or residual(α)", first)
	}
}

// formatNumber writes v as the shortest decimal that reads back as the same
// float32.
func formatNumber(v float32) string {
	return strconv.FormatFloat(float64(v), 'g', -1, 32)
}

// MarshalText writes the chain's canonical text (String), so that a Chain
// in JSON reads as in the grammar.
func (c Chain) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses text with Parse.
func (c *Chain) UnmarshalText(text []byte) error {
	p, err := Parse(string(text))
	if err != nil {
		return err
	}
	*c = p
	return nil
}
