package pipeline

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/convgen/convgen/tunecache"
)

// TestPlainWinners: a fused problem's search starts from the fastest
// candidates (at most plainFirst) of its plain problem's record on the
// same device; a plain problem, or one whose plain record is another
// device's, starts from none.
func TestPlainWinners(t *testing.T) {
	plain := fixture(t, h200, 132)
	plain.Summary.Top = []tunecache.Measured{{ID: "direct/A=1"}, {ID: "direct/A=2"}, {ID: "direct/A=3"}, {ID: "direct/A=4"}, {ID: "direct/A=5"}}
	other := fixture(t, "NVIDIA H100 80GB HBM3", 132)
	other.Key.Shape = "N=1,C=1,H=1,W=1,K=1,R=1,S=1,stride=1,pad=0,dilation=1,groups=1,bias=true" // another problem: its plain record is elsewhere
	path := filepath.Join(t.TempDir(), "cache.json")
	putRecords(t, path, plain, other)
	cache, err := tunecache.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	fused := plain.Key
	fused.Epilogue = "scale_shift,relu"
	if got, want := plainWinners(cache, fused), []string{"direct/A=1", "direct/A=2", "direct/A=3", "direct/A=4"}; !slices.Equal(got, want) {
		t.Errorf("fused: %v, want %v", got, want)
	}
	cast := plain.Key
	cast.OutPrecision = "bf16"
	if got := plainWinners(cache, cast); len(got) != plainFirst {
		t.Errorf("other output type: %v, want the %d fastest", got, plainFirst)
	}
	if got := plainWinners(cache, plain.Key); got != nil {
		t.Errorf("plain problem: %v, want none", got)
	}
	elsewhere := other.Key
	elsewhere.Epilogue = "relu"
	elsewhere.Device = "NVIDIA A100"
	if got := plainWinners(cache, elsewhere); got != nil {
		t.Errorf("no plain record on this device: %v, want none", got)
	}
}
