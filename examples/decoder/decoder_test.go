//go:build !cuda

package decoder

import (
	"errors"
	"testing"

	"github.com/convgen/convgen/convrt"
	"github.com/convgen/convgen/examples/decoder/torgb"
	"github.com/convgen/convgen/problem"
)

// TestTransposedWithoutCUDA: the generated package is the data gradient
// whose transposed convolution is the layer asked for (64 → 3 channels,
// 112² → 224², output_padding 1), and without the cuda tag Load fails with
// convrt.ErrNoCUDA instead of crashing.
func TestTransposedWithoutCUDA(t *testing.T) {
	tr, err := Transposed()
	if err != nil {
		t.Fatal(err)
	}
	if ho, wo := tr.OutputSize(); tr.C != 64 || tr.K != 3 || tr.H != 112 || tr.W != 112 || ho != 224 || wo != 224 || tr.OutputPadH != 1 || tr.OutputPadW != 1 {
		t.Errorf("the layer is %+v with output %dx%d, want ConvTranspose2d(64, 3, 7, stride=2, padding=3, output_padding=1) from 112² to 224²", tr, ho, wo)
	}
	if torgb.Op != problem.OpDgrad || torgb.Precision != problem.FP16 || torgb.Layout != problem.NHWC {
		t.Errorf("torgb is op %s, %s %s", torgb.Op, torgb.Precision, torgb.Layout)
	}
	if _, err := torgb.Load(); err == nil || !errors.Is(err, convrt.ErrNoCUDA) {
		t.Errorf("Load without cuda: %v, want an error wrapping convrt.ErrNoCUDA", err)
	}
}
