package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// TestWriteSources: -source-dir writes the sources of the candidates NVRTC
// compiled or failed to compile, skips rejected ones and failures that had
// no source (a rendering error), and names each file after its kernel.
func TestWriteSources(t *testing.T) {
	shape, err := problem.ParseShape("N=2,C=3,H=32,W=32,K=16,R=3,S=3,pad=1")
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: shape, Precision: problem.TF32, Layout: problem.NCHW}
	cands, err := kernels.Enumerate(p, kernels.DefaultLimits(80))
	if err != nil {
		t.Fatal(err)
	}
	var kept []kernels.Candidate
	for _, c := range cands {
		if c.Rejected == "" {
			kept = append(kept, c)
		}
	}
	if len(kept) < 3 {
		t.Fatalf("%d kept candidates, want at least 3", len(kept))
	}
	trial := func(c kernels.Candidate, s autotune.Status) autotune.Trial {
		return autotune.Trial{ID: c.ID(), Family: c.Family, Config: c.Config, Status: s}
	}
	trials := []autotune.Trial{
		trial(kept[0], autotune.StatusCompiled),
		trial(kept[1], autotune.StatusCompile),
		trial(kept[2], autotune.StatusRejected),
		{ID: "nosuch/X=1", Family: "nosuch", Config: kernels.Config{"X": 1}, Status: autotune.StatusCompile},
	}
	dir := filepath.Join(t.TempDir(), "src")
	n, err := writeSources(dir, p, trials)
	if err != nil || n != 2 {
		t.Fatalf("writeSources = %d, %v; want 2, nil", n, err)
	}
	for _, c := range kept[:2] {
		k, err := kernels.RenderCandidate(p, c)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, k.Name+".cu"))
		if err != nil || string(b) != k.Source {
			t.Errorf("%s.cu: %v; want the rendered source of %s", k.Name, err, c.ID())
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 2 {
		t.Errorf("%d files in the source directory, want 2", len(files))
	}
}
