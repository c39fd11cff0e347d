package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/gen"
	"github.com/convgen/convgen/gen/torchmod"
	"github.com/convgen/convgen/internal/testfs"
)

// TestTorchModule replays the flagship's record with Request.Torch: the
// PyTorch module beside the package holds the package's own images and a
// kernel.json that agrees with the record.
func TestTorchModule(t *testing.T) {
	needNoGPU(t)
	dir := t.TempDir()
	out, torch, cache := filepath.Join(dir, "alexnet"), filepath.Join(dir, "alexnet_torch"), filepath.Join(dir, "cache.json")
	rec := fixture(t, h200, 132)
	putRecords(t, cache, rec)
	r := testRequest(t, out, cache)
	r.Torch = torch
	res, err := Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	pkg, mod := testfs.ReadTree(t, out), testfs.ReadTree(t, torch)
	want := []string{torchmod.InitFile, torchmod.MetaFile, "kernel.ptx", "kernel_" + rec.Arch + ".cubin"}
	slices.Sort(want)
	if !slices.Equal(res.TorchFiles, want) {
		t.Errorf("TorchFiles %v, want %v", res.TorchFiles, want)
	}
	for _, name := range []string{"kernel.ptx", "kernel_" + rec.Arch + ".cubin"} {
		if len(mod[name]) == 0 || !bytes.Equal(mod[name], pkg[name]) {
			t.Errorf("%s: the module's is not the package's", name)
		}
	}
	if _, ok := mod[gen.ManifestFile]; !ok {
		t.Error("the module has no manifest")
	}
	var m torchmod.Meta
	if err := json.Unmarshal(mod[torchmod.MetaFile], &m); err != nil {
		t.Fatal(err)
	}
	c := m.Ops["fprop"].CUBIN
	if c == nil || c.Kernel != rec.Kernel || c.Launch != rec.Launch || c.Arch != rec.Arch || m.Problem.Shape != r.Problem.Shape.String() {
		t.Errorf("kernel.json's CUBIN %+v, shape %s; the record's kernel %s, launch %v, arch %s", c, m.Problem.Shape, rec.Kernel, rec.Launch, rec.Arch)
	}
	if !strings.Contains(string(mod[torchmod.InitFile]), "import alexnet_torch") {
		t.Error("__init__.py's usage does not import the module by its directory's name")
	}
	// Regenerating replaces it, Python's byte-code cache included.
	if err := os.MkdirAll(filepath.Join(torch, "__pycache__"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), r); err != nil {
		t.Errorf("regenerate over __pycache__: %v", err)
	}
}

// TestTorchTargetCheckedFirst: a -torch directory whose name Python cannot
// import is refused before anything is written.
func TestTorchTargetCheckedFirst(t *testing.T) {
	needNoGPU(t)
	dir := t.TempDir()
	out, cache := filepath.Join(dir, "alexnet"), filepath.Join(dir, "cache.json")
	putRecords(t, cache, fixture(t, h200, 132))
	r := testRequest(t, out, cache)
	r.Torch = filepath.Join(dir, "alex-net")
	if _, err := Run(context.Background(), r); err == nil || !strings.Contains(err.Error(), "-torch") {
		t.Fatalf("Run: %v, want a -torch error", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the package was written before the -torch check: %v", err)
	}
}

// TestTorchEpilogue: -torch with an epilogue chain writes the fused
// module (Conv2dFused, the chain in kernel.json).
func TestTorchEpilogue(t *testing.T) {
	needNoGPU(t)
	dir := t.TempDir()
	out, cache := filepath.Join(dir, "alexnet"), filepath.Join(dir, "cache.json")
	chain, err := epilogue.Parse("relu")
	if err != nil {
		t.Fatal(err)
	}
	putRecords(t, cache, fusedFixture(t, chain))
	r := testRequest(t, out, cache)
	r.Problem.Epilogue = chain
	r.Torch = filepath.Join(dir, "alexnet_torch")
	if _, err := Run(context.Background(), r); err != nil {
		t.Fatalf("Run: %v", err)
	}
	js, err := os.ReadFile(filepath.Join(r.Torch, torchmod.MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	var m torchmod.Meta
	if err := json.Unmarshal(js, &m); err != nil || m.Class != "Conv2dFused" || m.Epilogue == nil || m.Epilogue.Chain != "relu" {
		t.Errorf("kernel.json: class %q, epilogue %+v, %v", m.Class, m.Epilogue, err)
	}
}
