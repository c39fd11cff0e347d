//go:build !cuda

package resnetblock

import "testing"

// TestLayersWithoutCUDA: every generated package builds into the list of
// convrt.Conv loaders, states its problem's FLOPs, and without the cuda
// tag LoadAll fails with convrt.ErrNoCUDA instead of crashing.
func TestLayersWithoutCUDA(t *testing.T) {
	for _, l := range Layers {
		if l.FLOPs <= 0 {
			t.Errorf("%s: FLOPs %g", l.Name, l.FLOPs)
		}
	}
	if convs, err := LoadAll(); !Unavailable(err) || convs != nil {
		t.Errorf("LoadAll without cuda: %v, %v: want an error wrapping convrt.ErrNoCUDA", convs, err)
	}
}
