package resnetblock

import (
	"errors"
	"fmt"

	"github.com/convgen/convgen/convrt"
	"github.com/convgen/convgen/examples/resnet-block/conv3x3"
	"github.com/convgen/convgen/examples/resnet-block/down"
	"github.com/convgen/convgen/examples/resnet-block/expand"
)

// Layer is one generated convolution, seen through convrt.
type Layer struct {
	Name  string
	FLOPs float64
	Load  func() (convrt.Conv, error)
}

// Layers lists the example's convolutions.
var Layers = []Layer{
	{"conv3x3", conv3x3.FLOPs, func() (convrt.Conv, error) { return conv3x3.Load() }},
	{"down", down.FLOPs, func() (convrt.Conv, error) { return down.Load() }},
	{"expand", expand.FLOPs, func() (convrt.Conv, error) { return expand.Load() }},
}

// LoadAll loads every layer into the CUDA context current on the calling
// (locked) OS thread, closing those loaded when one fails; without the
// cuda build tag the error wraps convrt.ErrNoCUDA.
func LoadAll() ([]convrt.Conv, error) {
	var convs []convrt.Conv
	for _, l := range Layers {
		c, err := l.Load()
		if err != nil {
			for _, loaded := range convs {
				loaded.Close()
			}
			return nil, fmt.Errorf("%s: %w", l.Name, err)
		}
		convs = append(convs, c)
	}
	return convs, nil
}

// Unavailable says whether err means that this build cannot run kernels.
func Unavailable(err error) bool { return errors.Is(err, convrt.ErrNoCUDA) }
