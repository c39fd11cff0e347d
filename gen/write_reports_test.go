package gen

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteReports: a directory of reports needs no doc.go, gets a
// manifest, is replaced by the next run, and a directory with the user's
// files is refused as for a package.
func TestWriteReports(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "reports")
	files := map[string][]byte{"REPORT.md": []byte("# one\n"), "report.json": []byte("{}\n")}
	if err := Write(dir, files); err == nil {
		t.Fatal("Write accepted files without a doc.go")
	}
	if err := WriteReports(dir, files); err != nil {
		t.Fatalf("WriteReports: %v", err)
	}
	dirHolds(t, dir, withManifest(files))
	again := map[string][]byte{"REPORT.md": []byte("# two\n")}
	if err := WriteReports(dir, again); err != nil {
		t.Fatalf("WriteReports over its own directory: %v", err)
	}
	dirHolds(t, dir, withManifest(again))
	mustWrite(t, filepath.Join(dir, "notes.txt"), "mine")
	var fe *ForeignError
	if err := WriteReports(dir, files); !errors.As(err, &fe) {
		t.Errorf("WriteReports over a user's file: %v, want a *ForeignError", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the user's file: %q, %v", b, err)
	}
}

// TestWriteReportsRefusesPackage: neither the reports nor a module
// replace a generated package, which Write replaces.
func TestWriteReportsRefusesPackage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pkg")
	pkg := map[string][]byte{"doc.go": []byte(Header + "\n\npackage pkg\n")}
	if err := Write(dir, pkg); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if !HoldsPackage(dir) {
		t.Fatal("HoldsPackage: false for a written package")
	}
	reports := map[string][]byte{"REPORT.md": []byte("# r\n")}
	for name, write := range map[string]func(string, map[string][]byte) error{"WriteReports": WriteReports, "WriteDir": WriteDir} {
		if err := write(dir, reports); err == nil {
			t.Errorf("%s replaced a generated package", name)
		}
	}
	dirHolds(t, dir, withManifest(pkg))
	if err := Write(dir, pkg); err != nil {
		t.Errorf("Write over its own package: %v", err)
	}
	if HoldsPackage(filepath.Join(t.TempDir(), "none")) {
		t.Error("HoldsPackage: true for a missing directory")
	}
}
