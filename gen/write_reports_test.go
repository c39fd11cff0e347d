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
