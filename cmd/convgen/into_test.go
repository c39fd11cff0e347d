package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/gen"
)

// TestOutputDot (issue 21): -o . from go:generate writes convgen's files,
// all named convgen_*, into the current package under $GOPACKAGE's name,
// leaves the user's files alone, regenerates over its own files, and
// refuses a convgen_* file it did not write; without $GOPACKAGE or -pkg
// it is a usage error.
func TestOutputDot(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.json")
	putRecords(t, cache, fixture(t, h200, 132))
	pkg := filepath.Join(dir, "mynet")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	const mine = "// Package mynet is the user's.\npackage mynet\n\nfunc Mine() {}\n"
	if err := os.WriteFile(filepath.Join(pkg, "mine.go"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(pkg)
	if r := runConvgen(t, "-shape", flagship, "-o", ".", "-cache", cache); r.code != 2 || !strings.Contains(r.stderr, "GOPACKAGE") {
		t.Errorf("-o . without $GOPACKAGE: exit %d, stderr %q: want 2 naming $GOPACKAGE", r.code, r.stderr)
	}
	t.Setenv("GOPACKAGE", "mynet")
	for range 2 { // the second run replaces its own files
		if r := runConvgen(t, "-shape", flagship, "-o", ".", "-cache", cache); r.code != 0 {
			t.Fatalf("-o .: exit %d, stderr %q", r.code, r.stderr)
		}
	}
	names := listDir(t, ".")
	for _, n := range names {
		if n != "mine.go" && n != gen.ManifestFile && !strings.HasPrefix(n, gen.FilesPrefix) {
			t.Errorf("-o . wrote %s, not named %s*", n, gen.FilesPrefix)
		}
	}
	for _, want := range []string{"convgen_doc.go", "convgen_kernel.go", "convgen_kernel.ptx", "convgen_kernel_sm_90.cubin", "convgen_REPORT.md", "convgen_report.json"} {
		if !slices.Contains(names, want) {
			t.Errorf("-o . did not write %s (wrote %v)", want, names)
		}
	}
	if b, _ := os.ReadFile("mine.go"); string(b) != mine {
		t.Errorf("mine.go changed to %q", b)
	}
	kernel, _ := os.ReadFile("convgen_kernel.go")
	if !strings.Contains(string(kernel), "package mynet") || !strings.Contains(string(kernel), "//go:embed convgen_kernel.ptx") {
		t.Errorf("convgen_kernel.go is not in package mynet or does not embed convgen_kernel.ptx:\n%.600s", kernel)
	}
	if err := os.WriteFile("convgen_extra.go", []byte("package mynet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runConvgen(t, "-shape", flagship, "-o", ".", "-cache", cache)
	if r.code != 1 {
		t.Errorf("-o . with the user's convgen_extra.go: exit %d, want 1", r.code)
	}
	oneErrorLine(t, r, "convgen_extra.go")
}
