package gen

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSwapInPutsBackForeign stands in for a user who adds a file to -o
// after Write checked it and before the exchange: swapIn finds it in the
// exchanged-out package, exchanges the two back and refuses, naming it, so
// that the user's file is never deleted and -o keeps the old package.
func TestSwapInPutsBackForeign(t *testing.T) {
	parent := t.TempDir()
	dir, tmp := filepath.Join(parent, "pkg"), filepath.Join(parent, ".pkg.convgen-new-1")
	if err := Write(dir, pkgFiles(1)); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, "helper.go"), "package p\n") // the late user file
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range withManifest(pkgFiles(2)) {
		mustWrite(t, filepath.Join(tmp, name), string(b))
	}

	err := swapIn(tmp, dir)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no atomic exchange here: %v", err)
	}
	var foreign *ForeignError
	if !errors.As(err, &foreign) || len(foreign.Entries) != 1 || foreign.Entries[0].Name != "helper.go" {
		t.Fatalf("swapIn = %v, want a *ForeignError naming helper.go", err)
	}
	old := withManifest(pkgFiles(1))
	old["helper.go"] = []byte("package p\n")
	dirHolds(t, dir, old)
	dirHolds(t, tmp, withManifest(pkgFiles(2)))
}

// TestSwapInClean exchanges a package that nothing touched.
func TestSwapInClean(t *testing.T) {
	parent := t.TempDir()
	dir, tmp := filepath.Join(parent, "pkg"), filepath.Join(parent, ".pkg.convgen-new-1")
	if err := Write(dir, pkgFiles(1)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range withManifest(pkgFiles(2)) {
		mustWrite(t, filepath.Join(tmp, name), string(b))
	}
	err := swapIn(tmp, dir)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no atomic exchange here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dirHolds(t, dir, withManifest(pkgFiles(2)))
	dirHolds(t, tmp, withManifest(pkgFiles(1)))
}
