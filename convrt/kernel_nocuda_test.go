//go:build !cuda

package convrt

import (
	"errors"
	"strings"
	"testing"
)

// TestNoCUDA: without the cuda tag every operation says so, with ErrNoCUDA.
func TestNoCUDA(t *testing.T) {
	s := testSpec(t, "N=1,C=3,H=8,W=8,K=4,R=3,S=3")
	k, err := Load(s)
	if k != nil || !errors.Is(err, ErrNoCUDA) || !strings.HasPrefix(err.Error(), "conv: load: ") {
		t.Errorf("Load = %v, %v; want nil and conv: load: ErrNoCUDA", k, err)
	}
	if _, err := LoadPTX(s); !errors.Is(err, ErrNoCUDA) {
		t.Errorf("LoadPTX: %v, want ErrNoCUDA", err)
	}
	var c Conv = k
	if err := c.Forward(0, 16, 16, 16, 16); !errors.Is(err, ErrNoCUDA) {
		t.Errorf("Forward: %v, want ErrNoCUDA", err)
	}
	if err := c.Close(); !errors.Is(err, ErrNoCUDA) {
		t.Errorf("Close: %v, want ErrNoCUDA", err)
	}
	if _, err := Load(nil); !errors.Is(err, ErrNoCUDA) || !strings.HasPrefix(err.Error(), "convrt: load: ") {
		t.Errorf("Load(nil) = %v; want convrt: load: ErrNoCUDA", err)
	}
	if got := PtrOf(48); got != 48 {
		t.Errorf("PtrOf(48) = %d", got)
	}
}
