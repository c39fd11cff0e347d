package decoder

import (
	"fmt"

	"github.com/convgen/convgen/convrt"
	"github.com/convgen/convgen/examples/decoder/torgb"
	"github.com/convgen/convgen/problem"
)

// Transposed is the layer as PyTorch's ConvTranspose2d sees it, the
// inverse of the data-gradient problem torgb was generated for:
// ConvTranspose2d(64, 3, 7, stride=2, padding=3, output_padding=1) on
// 32×64×112×112 inputs.
func Transposed() (problem.Transposed, error) {
	s, err := problem.ParseShape(torgb.Shape)
	if err != nil {
		return problem.Transposed{}, fmt.Errorf("decoder: torgb's shape: %w", err)
	}
	return problem.TransposedOf(s), nil
}

// ToRGB enqueues y = ConvTranspose2d(x, w) on stream with torgb's kernel
// k (torgb.Load, in the CUDA context current on the calling locked OS
// thread): x the N×112×112×64 input, w the weight (64×7×7×3: in_channels,
// kernel rows, kernel columns, out_channels), y the N×224×224×3 output,
// written whole; FP16 bits, NHWC, 16-byte aligned. It is the kernel's
// BackwardData with dY = x, W = w, dX = y.
func ToRGB(k convrt.Grad, stream convrt.Stream, x, w, y convrt.DevicePtr) error {
	return k.BackwardData(stream, x, w, y)
}
