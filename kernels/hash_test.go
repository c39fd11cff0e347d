package kernels

import (
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

func TestHash(t *testing.T) {
	p := problem.Problem{Shape: problem.Shape{N: 2, C: 3, H: 16, W: 16, K: 8, R: 3, S: 3, StrideH: 1, StrideW: 1,
		PadH: 1, PadW: 1, DilationH: 1, DilationW: 1, Groups: 1, Bias: true}, Precision: problem.FP32, Layout: problem.NCHW}
	k, err := Reference(p)
	if err != nil {
		t.Fatal(err)
	}
	base := Hash(k)
	if len(base) != 64 {
		t.Fatalf("Hash = %q, want 64 hex digits", base)
	}
	if again, _ := Reference(p); Hash(again) != base {
		t.Error("rendering the same kernel twice gives two hashes")
	}
	commented := k
	commented.Source = "// a new header comment\n" + strings.Replace(k.Source, "\n", " /* note */\n\n", 3)
	if Hash(commented) != base {
		t.Error("a comment-only change altered the hash")
	}
	i := strings.LastIndex(k.Source, ";")
	for name, edit := range map[string]func(*Kernel){
		"one character of code": func(k *Kernel) { k.Source = k.Source[:i] + " ;" + k.Source[i:] },
		"the grid":              func(k *Kernel) { k.Grid[0]++ },
		"the block":             func(k *Kernel) { k.Block[1] = 2 },
		"the shared memory":     func(k *Kernel) { k.SharedBytes = 16 },
		"the name":              func(k *Kernel) { k.Name += "2" },
		"the arch suffix":       func(k *Kernel) { k.ArchSuffix = "a" },
	} {
		changed := k
		edit(&changed)
		if Hash(changed) == base {
			t.Errorf("changing %s kept the hash", name)
		}
	}
}
