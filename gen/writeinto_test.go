package gen

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWriteInto: convgen's files go among the user's, which stay as they
// are; a second run replaces its own files and removes those it no longer
// writes; a file with convgen's prefix that it did not write, or one
// changed since, is refused before anything is written.
func TestWriteInto(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "main.go"), "package main\n")
	mustWrite(t, filepath.Join(dir, "doc.go"), "// Package main is mine.\npackage main\n")
	first := map[string][]byte{"convgen_doc.go": []byte("one\n"), "convgen_kernel_sm_90.cubin": []byte("cubin")}
	if err := WriteInto(dir, FilesPrefix, first); err != nil {
		t.Fatal(err)
	}
	second := map[string][]byte{"convgen_doc.go": []byte("two\n"), "convgen_kernel_sm_80.cubin": []byte("other")}
	if err := WriteInto(dir, FilesPrefix, second); err != nil {
		t.Fatalf("second run over its own files: %v", err)
	}
	want := withManifest(second)
	want["main.go"] = []byte("package main\n")
	want["doc.go"] = []byte("// Package main is mine.\npackage main\n")
	dirHolds(t, dir, want)
	if err := CheckInto(dir, FilesPrefix); err != nil {
		t.Errorf("CheckInto over convgen's own files: %v", err)
	}

	mustWrite(t, filepath.Join(dir, "convgen_notes.go"), "mine")
	var fe *ForeignError
	if err := CheckInto(dir, FilesPrefix); !errors.As(err, &fe) || len(fe.Entries) != 1 || fe.Entries[0] != (Foreign{"convgen_notes.go", NotWritten}) {
		t.Errorf("CheckInto with a user's convgen_notes.go: %v", err)
	}
	third := map[string][]byte{"convgen_doc.go": []byte("three\n"), "convgen_notes.go": []byte("convgen's")}
	if err := WriteInto(dir, FilesPrefix, third); !errors.As(err, &fe) {
		t.Errorf("WriteInto over a user's convgen_notes.go: %v, want a *ForeignError", err)
	}
	os.Remove(filepath.Join(dir, "convgen_notes.go"))
	mustWrite(t, filepath.Join(dir, "convgen_doc.go"), "edited by hand\n")
	if err := WriteInto(dir, FilesPrefix, third); !errors.As(err, &fe) || fe.Entries[0] != (Foreign{"convgen_doc.go", Changed}) {
		t.Errorf("WriteInto over a changed convgen_doc.go: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "convgen_doc.go")); string(b) != "edited by hand\n" {
		t.Errorf("the refused run changed convgen_doc.go to %q", b)
	}
	if err := WriteInto(dir, FilesPrefix, map[string][]byte{"main.go": nil}); err == nil {
		t.Error("WriteInto accepted a file name without the prefix")
	}
}

// TestWriteIntoPackageManifest: a directory whose manifest is a whole
// generated package's is not taken for one of convgen's files among the
// user's.
func TestWriteIntoPackageManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pkg")
	if err := Write(dir, pkgFiles(1)); err != nil {
		t.Fatal(err)
	}
	if err := WriteInto(dir, FilesPrefix, map[string][]byte{"convgen_doc.go": []byte("x")}); err == nil {
		t.Error("WriteInto accepted a generated package's directory")
	}
}

// TestWriteIntoAfterKilledRun: a run killed after it replaced some of its
// files but before its ManifestFile listed them leaves its pending
// manifest; the next run owns those files (and removes the ones it no
// longer writes) instead of refusing them as changed, and still refuses a
// user's file.
func TestWriteIntoAfterKilledRun(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "main.go"), "package main\n")
	first := map[string][]byte{"convgen_doc.go": []byte("one\n"), "convgen_kernel_sm_90.cubin": []byte("cubin")}
	if err := WriteInto(dir, FilesPrefix, first); err != nil {
		t.Fatal(err)
	}
	// The killed run: its pending manifest, convgen_doc.go replaced, its
	// new convgen_kernel_sm_80.cubin written, the old manifest in place.
	second := map[string][]byte{"convgen_doc.go": []byte("two\n"), "convgen_kernel_sm_80.cubin": []byte("other")}
	mustWrite(t, filepath.Join(dir, intoPending), string(withManifest(second)[ManifestFile]))
	mustWrite(t, filepath.Join(dir, "convgen_doc.go"), "two\n")
	mustWrite(t, filepath.Join(dir, "convgen_kernel_sm_80.cubin"), "other")

	if err := CheckInto(dir, FilesPrefix); err != nil {
		t.Errorf("CheckInto after a killed run: %v", err)
	}
	mustWrite(t, filepath.Join(dir, "convgen_mine.go"), "mine")
	var fe *ForeignError
	if err := WriteInto(dir, FilesPrefix, map[string][]byte{"convgen_doc.go": []byte("x"), "convgen_mine.go": nil}); !errors.As(err, &fe) {
		t.Errorf("WriteInto over a user's convgen_mine.go after a killed run: %v, want a *ForeignError", err)
	}
	os.Remove(filepath.Join(dir, "convgen_mine.go"))

	third := map[string][]byte{"convgen_doc.go": []byte("three\n")}
	if err := WriteInto(dir, FilesPrefix, third); err != nil {
		t.Fatalf("WriteInto after a killed run: %v", err)
	}
	want := withManifest(third)
	want["main.go"] = []byte("package main\n")
	dirHolds(t, dir, want)
}

// TestWriteIntoRemovesKilledRunsTemps: the temporary files a killed run
// left beside convgen's files go with the next run; files of other names
// stay.
func TestWriteIntoRemovesKilledRunsTemps(t *testing.T) {
	dir := t.TempDir()
	left := []string{".convgen_doc.go.convgen-new-12345", "..convgen-manifest.convgen-new-9", "..files.convgen-pending.convgen-new-77"}
	kept := []string{".mine.go.convgen-new-1", ".convgen_doc.go.convgen-new-abc"}
	for _, name := range append(slices.Clone(left), kept...) {
		mustWrite(t, filepath.Join(dir, name), "x")
	}
	files := map[string][]byte{"convgen_doc.go": []byte("one\n")}
	if err := WriteInto(dir, FilesPrefix, files); err != nil {
		t.Fatal(err)
	}
	want := withManifest(files)
	for _, name := range kept {
		want[name] = []byte("x")
	}
	dirHolds(t, dir, want)
}
