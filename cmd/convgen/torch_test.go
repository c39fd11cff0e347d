package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convgen/convgen/gen/torchmod"
)

// TestTorchFlag: -torch DIR is parsed, recorded in the regenerate command,
// and refused where it cannot work.
func TestTorchFlag(t *testing.T) {
	c, err := parseFlags([]string{"-shape", flagship, "-o", "conv", "-torch", "py/conv_torch"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.torch != "py/conv_torch" || !strings.Contains(c.command(), " -torch py/conv_torch") {
		t.Errorf("torch %q, command %q", c.torch, c.command())
	}
	if c, err := parseFlags([]string{"-shape", flagship, "-o", "conv"}, io.Discard); err != nil || c.torch != "" || strings.Contains(c.command(), "-torch") {
		t.Errorf("without -torch: %q, %q, %v", c.torch, c.command(), err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"twice", []string{"-o", "conv", "-torch", "a", "-torch", "b"}, "given twice"},
		{"no value", []string{"-o", "conv", "-torch"}, "needs an argument"},
		{"same as -o", []string{"-o", "conv", "-torch", "./conv/"}, "-o conv and -torch ./conv/: the same directory"},
		{"same as -report", []string{"-o", "conv", "-report", "rep", "-torch", "rep"}, "-report rep and -torch rep: the same directory"},
		{"inside -o", []string{"-o", "conv", "-torch", "conv/t"}, "-torch conv/t lies inside -o conv"},
		{"-o inside", []string{"-o", "t/conv", "-torch", "t"}, "-o t/conv lies inside -torch t"},
		// -o and -report (no -torch): the same checks.
		{"-report same as -o", []string{"-o", "conv", "-report", "conv/"}, "-o conv and -report conv/: the same directory"},
		{"-report inside -o", []string{"-o", "conv", "-report", "conv/rep"}, "-report conv/rep lies inside -o conv"},
		{"-o inside -report", []string{"-o", "rep/conv", "-report", "rep"}, "-o rep/conv lies inside -report rep"},
		{"not a Python name", []string{"-o", "conv", "-torch", "conv-torch"}, "identifier"},
		{"keyword", []string{"-o", "conv", "-torch", "x/import"}, "keyword"},
		{"torch itself", []string{"-o", "conv", "-torch", "torch"}, "hide PyTorch"},
		{"-list", []string{"-list", "-torch", "t"}, "-torch goes with a package"},
		{"-compile-only", []string{"-compile-only", "-torch", "t"}, "-torch goes with a package"},
	} {
		r := runConvgen(t, append([]string{"-shape", flagship}, tc.args...)...)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", tc.name, r.code, r.stderr)
		}
		oneErrorLine(t, r, tc.want)
	}
}

// TestTorchReplay: a replay with -torch writes the PyTorch module beside
// the package, from the same record.
func TestTorchReplay(t *testing.T) {
	rec := fixture(t, h200, 132)
	dir := t.TempDir()
	t.Chdir(dir)
	putRecords(t, "cache.json", rec)
	r := runConvgen(t, "-shape", flagship, "-o", "conv", "-cache", "cache.json", "-torch", "py/convtorch")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "wrote PyTorch module convtorch to py/convtorch") {
		t.Errorf("stdout lacks the module's line:\n%s", r.stdout)
	}
	init, err := os.ReadFile(filepath.Join("py", "convtorch", torchmod.InitFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(init), "# Regenerate with: convgen -shape "+rec.Key.Shape) || !strings.Contains(string(init), "-torch py/convtorch") {
		t.Errorf("__init__.py's regenerate line:\n%.300s", init)
	}
	var m torchmod.Meta
	js, err := os.ReadFile(filepath.Join("py", "convtorch", torchmod.MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	if c := m.Ops["fprop"].CUBIN; c == nil || c.Kernel != rec.Kernel || c.Launch != rec.Launch {
		t.Errorf("kernel.json's CUBIN %+v: want the record's kernel %s, %v", c, rec.Kernel, rec.Launch)
	}
	doc, err := os.ReadFile(filepath.Join("conv", "doc.go"))
	if err != nil || !strings.Contains(string(doc), "-torch py/convtorch") {
		t.Errorf("the Go package's regenerate command lacks -torch: %v", err)
	}
}

// TestTorchConfig: a config file's "torch" writes each package's module,
// relative to the file; -torch on the command line with -config is refused.
func TestTorchConfig(t *testing.T) {
	dir := t.TempDir()
	putRecords(t, filepath.Join(dir, "net", "cache.json"), fixture(t, h200, 132))
	conf := filepath.Join(dir, "net", "convgen.json")
	if err := os.WriteFile(conf, []byte(`{"cache": "cache.json", "packages": [
		{"shape": "`+flagship+`", "out": "conv1", "torch": "py/conv1"},
		{"shape": "`+flagship+`", "out": "conv2"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runConvgen(t, "-config", conf, "-q"); r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "net", "py", "conv1", torchmod.InitFile)); err != nil {
		t.Errorf("conv1's module: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "net", "conv2", "doc.go")); err != nil {
		t.Errorf("conv2: %v", err)
	}
	r := runConvgen(t, "-config", conf, "-torch", "x")
	if r.code != 2 {
		t.Errorf("-config with -torch: exit %d, want 2", r.code)
	}
	oneErrorLine(t, r, "belongs in the config file")
}

// TestReportOverPackage: -report (or -torch) naming a directory that holds
// another generated package is refused before anything is written, and
// the package is left as it was.
func TestReportOverPackage(t *testing.T) {
	rec := fixture(t, h200, 132)
	dir := t.TempDir()
	t.Chdir(dir)
	putRecords(t, "cache.json", rec)
	if r := runConvgen(t, "-shape", flagship, "-o", "conv", "-cache", "cache.json"); r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	doc, err := os.ReadFile(filepath.Join("conv", "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"-report", "-torch"} {
		r := runConvgen(t, "-shape", flagship, "-o", "other", "-cache", "cache.json", flag, "conv")
		if r.code != 2 {
			t.Errorf("%s conv: exit %d, want 2 (stderr %q)", flag, r.code, r.stderr)
		}
		oneErrorLine(t, r, flag+" conv holds a generated Go package")
		if _, err := os.Stat("other"); !os.IsNotExist(err) {
			t.Errorf("%s conv: -o other written (%v)", flag, err)
		}
		if got, err := os.ReadFile(filepath.Join("conv", "doc.go")); err != nil || string(got) != string(doc) {
			t.Errorf("%s conv: the package's doc.go changed (%v)", flag, err)
		}
	}
}
