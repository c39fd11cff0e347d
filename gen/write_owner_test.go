package gen

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pkgFiles is a small package as Write takes it, every file marked with id,
// one file's name too, so that files of two packages cannot pass for one.
func pkgFiles(id int) map[string][]byte {
	return map[string][]byte{
		"doc.go":                      fmt.Appendf(nil, "%s\n\n// Package p is package %d.\npackage p\n", Header, id),
		"shape.go":                    fmt.Appendf(nil, "%s\n\npackage p\n\nconst ID = %d\n", Header, id),
		fmt.Sprintf("v%d.txt", id):    fmt.Appendf(nil, "%d\n", id),
		"kernel_sm_90.cubin":          fmt.Appendf(nil, "cubin %d\n", id),
		"REPORT.md":                   fmt.Appendf(nil, "# report %d\n", id),
		fmt.Sprintf("id%d.ptx", id%3): fmt.Appendf(nil, "ptx %d\n", id),
	}
}

// withManifest is files plus the ManifestFile Write adds.
func withManifest(files map[string][]byte) map[string][]byte {
	all := map[string][]byte{}
	names := make([]string, 0, len(files))
	for name, b := range files {
		all[name] = b
		names = append(names, name)
	}
	slices.Sort(names)
	all[ManifestFile] = makeManifest(names, files)
	return all
}

// dirHolds checks that dir holds exactly want, as regular files.
func dirHolds(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got, wantNames []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	for name := range want {
		wantNames = append(wantNames, name)
	}
	slices.Sort(wantNames)
	if !slices.Equal(got, wantNames) {
		t.Fatalf("%s holds %q, want %q", dir, got, wantNames)
	}
	for name, b := range want {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != string(b) {
			t.Errorf("%s/%s = %q, %v; want %q", dir, name, got, err, b)
		}
	}
}

// parentHolds checks that parent holds only the names given: no lock file,
// no temporaries.
func parentHolds(t *testing.T, parent string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("%s holds %q, want %q", parent, got, names)
	}
}

func mustWrite(t *testing.T, path string, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWriteManifest: Write lists what it wrote in ManifestFile, in
// sha256sum's format, and replaces such a directory.
func TestWriteManifest(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "pkg")
	if err := Write(dir, pkgFiles(1)); err != nil {
		t.Fatal(err)
	}
	dirHolds(t, dir, withManifest(pkgFiles(1)))
	manifest, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pkgFiles(1)["doc.go"])
	if line := fmt.Sprintf("%x  doc.go\n", sum); !strings.Contains(string(manifest), line) {
		t.Errorf("%s = %q, want a line %q", ManifestFile, manifest, line)
	}
	if path, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command(path, "--strict", "-c", ManifestFile)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c %s: %v\n%s", ManifestFile, err, out)
		}
	}
	if err := Write(dir, pkgFiles(2)); err != nil {
		t.Fatalf("replacing a generated directory: %v", err)
	}
	dirHolds(t, dir, withManifest(pkgFiles(2)))
	parentHolds(t, parent, "pkg")

	if err := Write(dir, map[string][]byte{"doc.go": pkgFiles(1)["doc.go"], ManifestFile: nil}); err == nil {
		t.Error("Write took a file named like its manifest")
	}
	if err := Write(dir, map[string][]byte{"doc.go": pkgFiles(1)["doc.go"], "a\nb": nil}); err == nil {
		t.Error("Write took a file name with a newline, which the manifest cannot list")
	}
	dirHolds(t, dir, withManifest(pkgFiles(2)))
}

// TestWriteRefusesForeign: nothing convgen did not write is deleted; the
// refusal names every such entry and leaves the directory as it was.
func TestWriteRefusesForeign(t *testing.T) {
	for name, tc := range map[string]struct {
		legacy bool // the directory has no manifest, as before manifests
		add    func(t *testing.T, dir string)
		want   []Foreign
	}{
		"user file": {add: func(t *testing.T, dir string) { mustWrite(t, filepath.Join(dir, "helper.go"), "package p\n") },
			want: []Foreign{{"helper.go", NotWritten}}},
		"subdirectory": {add: func(t *testing.T, dir string) { mustWrite(t, filepath.Join(dir, "sub", "x.go"), "package x\n") },
			want: []Foreign{{"sub", NotRegular}}},
		"empty subdirectory": {add: func(t *testing.T, dir string) { os.Mkdir(filepath.Join(dir, "sub"), 0o755) },
			want: []Foreign{{"sub", NotRegular}}},
		"changed file": {add: func(t *testing.T, dir string) {
			mustWrite(t, filepath.Join(dir, "shape.go"), Header+"\npackage p // mine now\n")
		},
			want: []Foreign{{"shape.go", Changed}}},
		"symbolic link": {add: func(t *testing.T, dir string) {
			if err := os.Symlink("doc.go", filepath.Join(dir, "link.go")); err != nil {
				t.Skip("no symbolic links:", err)
			}
		}, want: []Foreign{{"link.go", NotRegular}}},
		"several": {add: func(t *testing.T, dir string) {
			mustWrite(t, filepath.Join(dir, "helper.go"), "package p\n")
			mustWrite(t, filepath.Join(dir, "a", "b"), "x")
			mustWrite(t, filepath.Join(dir, "REPORT.md"), "my notes")
		}, want: []Foreign{{"REPORT.md", Changed}, {"a", NotRegular}, {"helper.go", NotWritten}}},
		"legacy user file": {legacy: true, add: func(t *testing.T, dir string) { mustWrite(t, filepath.Join(dir, "helper.go"), "package p\n") },
			want: []Foreign{{"helper.go", NotWritten}}},
		"legacy subdirectory": {legacy: true, add: func(t *testing.T, dir string) { os.Mkdir(filepath.Join(dir, "sub"), 0o755) },
			want: []Foreign{{"sub", NotRegular}}},
		"legacy Go file without the header": {legacy: true, add: func(t *testing.T, dir string) { mustWrite(t, filepath.Join(dir, "kernel_cuda.go"), "package p\n") },
			want: []Foreign{{"kernel_cuda.go", Changed}}},
	} {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "pkg")
			if err := Write(dir, pkgFiles(1)); err != nil {
				t.Fatal(err)
			}
			if tc.legacy { // only the names convgen generated then
				for _, name := range []string{ManifestFile, "v1.txt", "id1.ptx"} {
					if err := os.Remove(filepath.Join(dir, name)); err != nil {
						t.Fatal(err)
					}
				}
			}
			tc.add(t, dir)
			before := readAll(t, dir)
			err := Write(dir, pkgFiles(2))
			var fe *ForeignError
			if !errors.As(err, &fe) {
				t.Fatalf("Write: error %v, want a *ForeignError", err)
			}
			if !slices.Equal(fe.Entries, tc.want) || fe.Manifest == tc.legacy {
				t.Errorf("refused for %v (manifest %v), want %v", fe.Entries, fe.Manifest, tc.want)
			}
			for _, f := range tc.want {
				if !strings.Contains(err.Error(), fmt.Sprintf("%q (%s)", f.Name, f.Why)) {
					t.Errorf("the error does not name %q: %v", f.Name, err)
				}
			}
			if err := CheckTarget(dir); !errors.As(err, &fe) {
				t.Errorf("CheckTarget: error %v, want a *ForeignError", err)
			}
			if after := readAll(t, dir); !maps.Equal(before, after) {
				t.Errorf("the directory changed: %q, was %q", slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before)))
			}
			parentHolds(t, parent, "pkg")
		})
	}
}

// TestWriteLegacy: a directory convgen wrote before manifests (doc.go with
// the header, only its file names) is still replaced, and gets a manifest;
// one whose doc.go is a symbolic link to such a file is not.
func TestWriteLegacy(t *testing.T) {
	legacy := map[string][]byte{}
	for _, name := range []string{"doc.go", "shape.go", "shape_test.go", "kernel_cuda.go", "funcattr_cuda.go",
		"kernel_nocuda.go", "kernel_cuda_test.go"} {
		legacy[name] = []byte(Header + "\n\npackage p\n")
	}
	for _, name := range []string{"kernel.ptx", "REPORT.md", "report.json", "kernel_sm_80.cubin", "kernel_sm_90a.cubin"} {
		legacy[name] = []byte("x")
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "pkg")
	for name, b := range legacy {
		mustWrite(t, filepath.Join(dir, name), string(b))
	}
	if err := CheckTarget(dir); err != nil {
		t.Fatalf("CheckTarget on a directory of the old scheme: %v", err)
	}
	if err := Write(dir, pkgFiles(1)); err != nil {
		t.Fatalf("Write over a directory of the old scheme: %v", err)
	}
	dirHolds(t, dir, withManifest(pkgFiles(1)))

	// A symbolic link does not make a user's directory convgen's.
	user := filepath.Join(parent, "user")
	mustWrite(t, filepath.Join(user, "main.go"), "package main\n")
	if err := os.Symlink(filepath.Join(dir, "doc.go"), filepath.Join(user, "doc.go")); err != nil {
		t.Skip("no symbolic links:", err)
	}
	if err := Write(user, pkgFiles(2)); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("Write over a user directory with a linked doc.go: error %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(user, "main.go")); err != nil {
		t.Errorf("main.go: %v", err)
	}
}

// TestWriteDamagedManifest: a manifest that cannot be read is no licence
// to delete.
func TestWriteDamagedManifest(t *testing.T) {
	for name, manifest := range map[string]string{
		"not hex":      strings.Repeat("z", 64) + "  doc.go\n",
		"short sum":    "abcd  doc.go\n",
		"one space":    strings.Repeat("a", 64) + " doc.go\n",
		"path":         strings.Repeat("a", 64) + "  ../doc.go\n",
		"listed twice": strings.Repeat("a", 64) + "  doc.go\n" + strings.Repeat("a", 64) + "  doc.go\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "pkg")
			if err := Write(dir, pkgFiles(1)); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, filepath.Join(dir, ManifestFile), manifest)
			err := Write(dir, pkgFiles(2))
			if err == nil || !strings.Contains(err.Error(), "damaged") {
				t.Fatalf("Write: error %v, want a refusal for the damaged manifest", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "v1.txt")); err != nil {
				t.Error(err)
			}
		})
	}
}

func readAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			got[rel] = "link " + target
			return err
		case d.IsDir():
			got[rel] = "dir"
		default:
			b, err := os.ReadFile(path)
			got[rel] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
