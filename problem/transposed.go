package problem

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/convgen/convgen/internal/clip"
)

// Transposed is a transposed convolution with PyTorch's ConvTranspose2d
// semantics, its sizes named as ConvTranspose2d names them: input
// N×C×H×W (C = in_channels), weight C×(K/Groups)×R×S (K = out_channels),
// output N×K×HO×WO with
//
//	HO = (H−1)·stride_h − 2·pad_h + dilation_h·(R−1) + output_padding_h + 1
//
// (WO likewise). It is the data gradient of the forward convolution whose
// input is its output (Dgrad): convgen computes it with that op's kernels.
type Transposed struct {
	// Shape holds N, C, H, W, K, R, S, strides, padding, dilation and
	// groups in ConvTranspose2d's sense; its Bias is false (a transposed
	// convolution's bias is not fused).
	Shape
	// OutputPadH and OutputPadW are ConvTranspose2d's output_padding: rows
	// and columns added to one side of the output, each less than its
	// stride.
	OutputPadH, OutputPadW int
}

// transposedKeys are ParseTransposed's keys: ParseShape's and
// output_padding.
var transposedKeys = append(append([]string(nil), shapeKeys...), "output_padding", "output_padding_h", "output_padding_w")

// ErrTransposedBias says that a transposed convolution asked for a bias:
// its kernels (the data gradient's) add none.
var ErrTransposedBias = errors.New("a transposed convolution's kernel (the data gradient's) adds no bias: give bias=false and add the bias after it")

// ParseTransposed reads a transposed convolution from comma-separated
// KEY=VALUE pairs in ConvTranspose2d's sense (Transposed): ParseShape's
// keys (C the input channels, K the output channels, H×W the input) and
// output_padding (also _h/_w, default 0). bias defaults to false; bias=true
// is refused (ErrTransposedBias).
func ParseTransposed(spec string) (Transposed, error) {
	s, rest, err := parseShape(spec, transposedKeys, false)
	if err != nil {
		return Transposed{}, err
	}
	t := Transposed{Shape: s}
	vals, spelled := map[string]string{}, map[string]string{}
	for k, v := range rest {
		vals[k], spelled[k] = v[0], v[1]
	}
	if t.OutputPadH, t.OutputPadW, err = pairOf(vals, spelled, "output_padding", 0, nonNegative); err != nil {
		return Transposed{}, err
	}
	if _, err := t.Dgrad(); err != nil {
		return Transposed{}, err
	}
	return t, nil
}

// OutputSize is the transposed convolution's output height and width.
func (t Transposed) OutputSize() (ho, wo int) {
	return transposedSize(t.H, t.StrideH, t.PadH, t.DilationH, t.R, t.OutputPadH),
		transposedSize(t.W, t.StrideW, t.PadW, t.DilationW, t.S, t.OutputPadW)
}

func transposedSize(in, stride, pad, dilation, taps, outPad int) int {
	return (in-1)*stride - 2*pad + dilation*(taps-1) + outPad + 1
}

// Dgrad is the shape whose data gradient (OpDgrad) computes t: the forward
// convolution of an N×K×HO×WO input (t's output) to C output channels
// (t's input channels) at t's input size, with t's filter size, strides,
// padding, dilation and groups. Its bias does not enter its data gradient;
// it is true, ParseShape's default and nn.Conv2d's, so that t shares the
// tuning records of that convolution's -op dgrad and -train runs. Its dgrad kernel's parameters (out, in, filter)
// are t's output, input and weight: ConvTranspose2d's weight, C×(K/G)×R×S,
// is the forward's filter in KCRS order (KRSC for NHWC: C×R×S×(K/G)).
// It fails where t is not a valid transposed convolution, where its
// output_padding is not less than its stride (the forward's output would
// not be t's input), or where t has a bias.
func (t Transposed) Dgrad() (Shape, error) {
	if err := t.validate(); err != nil {
		return Shape{}, err
	}
	ho, wo := t.OutputSize()
	f := Shape{N: t.N, C: t.K, H: ho, W: wo, K: t.C, R: t.R, S: t.S,
		StrideH: t.StrideH, StrideW: t.StrideW, PadH: t.PadH, PadW: t.PadW,
		DilationH: t.DilationH, DilationW: t.DilationW, Groups: t.Groups, Bias: true}
	if err := f.Validate(); err != nil {
		return Shape{}, fmt.Errorf("transposed convolution as a data gradient: %w", err)
	}
	if f.P() != t.H || f.Q() != t.W {
		return Shape{}, fmt.Errorf("shape: the forward convolution of the %dx%d output gives %dx%d, not the %dx%d input", ho, wo, f.P(), f.Q(), t.H, t.W)
	}
	return f, nil
}

// validate checks t in its own terms (C the input channels, K the output
// channels, H×W the input), so that its messages name the keys as the
// user wrote them.
func (t Transposed) validate() error {
	if t.Bias {
		return fmt.Errorf("shape: bias=true: %w", ErrTransposedBias)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"N", t.N}, {"C", t.C}, {"H", t.H}, {"W", t.W}, {"K", t.K}, {"R", t.R}, {"S", t.S},
		{"stride_h", t.StrideH}, {"stride_w", t.StrideW}, {"dilation_h", t.DilationH}, {"dilation_w", t.DilationW}, {"groups", t.Groups}} {
		if f.v < 1 {
			return fmt.Errorf("shape: %s=%d: must be positive", f.name, f.v)
		}
		if f.v > maxDim {
			return fmt.Errorf("shape: %s=%d is too large: each size, stride, pad and dilation is at most %d (2^29-1)", f.name, f.v, maxDim)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"pad_h", t.PadH}, {"pad_w", t.PadW}} {
		if f.v < 0 || f.v > maxDim {
			return fmt.Errorf("shape: %s=%d: must be non-negative and at most %d (2^29-1)", f.name, f.v, maxDim)
		}
	}
	pads := []struct {
		name                  string
		pad, stride, dilation int
	}{{"output_padding_h", t.OutputPadH, t.StrideH, t.DilationH}, {"output_padding_w", t.OutputPadW, t.StrideW, t.DilationW}}
	if pads[0].pad == pads[1].pad && pads[0].stride == pads[1].stride && pads[0].dilation == pads[1].dilation {
		pads = pads[:1]
		pads[0].name = "output_padding" // both axes alike: as one key
	}
	for _, o := range pads {
		if o.pad < 0 || o.pad >= o.stride {
			msg := fmt.Sprintf("shape: %s=%d: must be non-negative and less than the stride (%d)", o.name, o.pad, o.stride)
			if o.pad >= o.stride && o.pad < o.dilation {
				msg += fmt.Sprintf("; PyTorch also takes it below the dilation (%d), but convgen computes a transposed convolution as a data gradient, whose output_padding is the rows past the forward's last window, fewer than the stride", o.dilation)
			}
			return errors.New(msg)
		}
	}
	if t.C%t.Groups != 0 {
		return fmt.Errorf("shape: C=%d (in_channels) is not divisible by groups=%d", t.C, t.Groups)
	}
	if t.K%t.Groups != 0 {
		return fmt.Errorf("shape: K=%d (out_channels) is not divisible by groups=%d", t.K, t.Groups)
	}
	ho, wo := t.OutputSize()
	if ho < 1 || wo < 1 {
		return fmt.Errorf("shape: the transposed convolution's output (H-1)*stride - 2*pad + dilation*(R-1) + output_padding + 1 is %dx%d: must be at least 1x1 (padding %s too large)",
			ho, wo, clip.Quote(strconv.Itoa(t.PadH)+","+strconv.Itoa(t.PadW)))
	}
	if ho > maxDim || wo > maxDim {
		return fmt.Errorf("shape: the transposed convolution's output %dx%d is too large (at most %d a side)", ho, wo, maxDim)
	}
	for _, m := range []measure{
		{"input N*C*H*W", product(t.N, t.C, t.H, t.W)},
		{"output N*K*HO*WO", product(t.N, t.K, ho, wo)},
		{"weight C*(K/groups)*R*S", product(t.C, t.K/t.Groups, t.R, t.S)},
		{"padded output rows N*K*(HO+2*pad_h)", product(t.N, t.K, ho+2*t.PadH)},
	} {
		if m.elems > maxElems {
			return fmt.Errorf("shape: the transposed convolution's %s has more than %d (2^40) elements, the most convgen serves", m.name, maxElems)
		}
	}
	return nil
}

// TransposedOf is the transposed convolution that s's data gradient
// computes (the inverse of Dgrad, but for s's bias, which the data
// gradient ignores): input channels s.K at s's output size,
// output channels s.C, s's filter size, strides, padding, dilation and
// groups, and the output_padding that gives back s's input size (the rows
// and columns past the forward's last window, each less than the stride).
func TransposedOf(s Shape) Transposed {
	t := Transposed{Shape: Shape{N: s.N, C: s.K, H: s.P(), W: s.Q(), K: s.C, R: s.R, S: s.S,
		StrideH: s.StrideH, StrideW: s.StrideW, PadH: s.PadH, PadW: s.PadW,
		DilationH: s.DilationH, DilationW: s.DilationW, Groups: s.Groups}}
	t.OutputPadH = s.H - transposedSize(s.P(), s.StrideH, s.PadH, s.DilationH, s.R, 0)
	t.OutputPadW = s.W - transposedSize(s.Q(), s.StrideW, s.PadW, s.DilationW, s.S, 0)
	return t
}
