package problem

import (
	"fmt"
	"strings"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/internal/clip"
)

// Precision is the arithmetic a kernel uses and the element type it reads
// and writes.
type Precision string

// The precisions convgen knows. Not every kernel family serves each one.
const (
	FP32   Precision = "fp32"   // strict FP32 (FFMA), FP32 in and out
	TF32   Precision = "tf32"   // tensor cores, TF32 operands, FP32 accumulation
	TF32x3 Precision = "3xtf32" // tensor cores, split TF32 operands, FP32-accurate
	FP16   Precision = "fp16"   // half-precision data, FP32 accumulation
	BF16   Precision = "bf16"   // bfloat16 data, FP32 accumulation
)

// Precisions lists every precision in a stable order.
var Precisions = []Precision{FP32, TF32, TF32x3, FP16, BF16}

// ParsePrecision reads a precision name, case-insensitive.
func ParsePrecision(s string) (Precision, error) {
	for _, p := range Precisions {
		if strings.EqualFold(s, string(p)) {
			return p, nil
		}
	}
	return "", fmt.Errorf("precision %s: must be one of %s", clip.Quote(s), joinNames(Precisions))
}

// ErrorBound is the largest relative L2 error ‖out−ref‖/‖ref‖ against a
// float64 reference that a kernel of this precision may show.
func (p Precision) ErrorBound() float64 {
	switch p {
	case TF32:
		return 1e-3
	case FP16:
		return 2e-3
	case BF16:
		return 1e-2
	default:
		return 1e-5
	}
}

// ElementBytes is the size of one input, filter or output element.
func (p Precision) ElementBytes() int {
	if p == FP16 || p == BF16 {
		return 2
	}
	return 4
}

// Layout is the memory order of input and output (and with it the filter's).
type Layout string

// The layouts convgen knows.
const (
	NCHW Layout = "nchw" // input NCHW, filter KCRS, output NKPQ
	NHWC Layout = "nhwc" // input NHWC, filter KRSC, output NPQK
)

// Layouts lists every layout in a stable order.
var Layouts = []Layout{NCHW, NHWC}

// ParseLayout reads a layout name, case-insensitive.
func ParseLayout(s string) (Layout, error) {
	for _, l := range Layouts {
		if strings.EqualFold(s, string(l)) {
			return l, nil
		}
	}
	return "", fmt.Errorf("layout %s: must be one of %s", clip.Quote(s), joinNames(Layouts))
}

// FilterLayout names the filter's memory order for this layout.
func (l Layout) FilterLayout() string {
	if l == NHWC {
		return "krsc"
	}
	return "kcrs"
}

func joinNames[T ~string](xs []T) string {
	names := make([]string, len(xs))
	for i, x := range xs {
		names[i] = string(x)
	}
	return strings.Join(names, ", ")
}

// Problem is one convolution to generate a kernel for.
type Problem struct {
	Shape     Shape
	Precision Precision
	Layout    Layout
	// Epilogue is the chain applied to each output value after the bias,
	// before the store (docs/epilogue.md); empty for none. Only OpFprop
	// has one (Validate).
	Epilogue epilogue.Chain
	// Op is the computation: the forward convolution (the zero value) or
	// a gradient (Op).
	Op Op
	// OutPrecision is the output's element type when it differs from the
	// input's (fp16 or bf16 stored from FP32 accumulators, FP32 stored
	// from fp16 inputs); the zero value stores the input's type. Only
	// OpFprop stores another type (Validate). Use Out, OutDiffers and
	// OutElementBytes rather than reading it.
	OutPrecision Storage
}

// String is the canonical form used in reports, cache keys and docs; a
// gradient op adds " op=" and its name, a non-empty epilogue " epilogue="
// and the chain's canonical text, an output type other than the input's
// " out=" and its name, so that a forward problem without a chain or an
// output type reads as it did before they existed.
func (p Problem) String() string {
	s := fmt.Sprintf("%s precision=%s layout=%s", p.Shape, p.Precision, p.Layout)
	if p.Op != OpFprop {
		s += " op=" + p.Op.String()
	}
	if len(p.Epilogue) > 0 {
		s += " epilogue=" + p.Epilogue.String()
	}
	if p.OutDiffers() {
		s += " out=" + string(p.OutPrecision)
	}
	return s
}
