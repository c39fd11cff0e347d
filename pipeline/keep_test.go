package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convgen/convgen/tunecache"
)

// rescued returns the rescue files in dir, checking that each is a cache
// holding exactly rec.
func rescued(t *testing.T, dir string, rec tunecache.Record) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "convgen-record-*.json"))
	for _, f := range files {
		c, err := tunecache.Load(f)
		if err != nil {
			t.Fatalf("rescue file: %v", err)
		}
		if got, ok := c.Lookup(rec.Key); !ok || len(c.Records()) != 1 || !bytes.Equal(got.CUBIN, rec.CUBIN) {
			t.Errorf("rescue file %s does not hold exactly the tuned record", f)
		}
	}
	return files
}

// TestKeepAndWrite (issue 22, item 6): a finished tuning result survives a
// cache or package that cannot be written. The record is saved to the
// cache before the package is written; when Put fails it goes to a rescue
// file in the temporary directory, named in the error, and the package is
// still written; a pinned run (never cached) rescues its record when the
// package cannot be written.
func TestKeepAndWrite(t *testing.T) {
	rec := fixture(t, h200, 132)
	dir := t.TempDir()
	blocker := filepath.Join(dir, "afile") // a regular file: nothing can be made under it
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("cache fails", func(t *testing.T) {
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		out := filepath.Join(t.TempDir(), "alexnet")
		_, err := keepAndWrite(testRequest(t, out, filepath.Join(blocker, "cache.json")), rec, nil)
		files := rescued(t, tmp, rec)
		if err == nil || len(files) != 1 || !strings.Contains(err.Error(), "save tuning record") || !strings.Contains(err.Error(), files[0]) {
			t.Fatalf("error %v, rescue files %v: want one, named in the error", err, files)
		}
		if _, serr := os.Stat(filepath.Join(out, "report.json")); serr != nil {
			t.Errorf("the package was not written after the cache failed: %v", serr)
		}
	})
	t.Run("package fails", func(t *testing.T) {
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		cache := filepath.Join(t.TempDir(), "cache.json")
		_, err := keepAndWrite(testRequest(t, filepath.Join(blocker, "alexnet"), cache), rec, nil)
		if err == nil || !strings.Contains(err.Error(), "saved in "+cache) {
			t.Errorf("error %v: want one saying the record is saved in the cache", err)
		}
		c, lerr := tunecache.Load(cache)
		if lerr != nil {
			t.Fatal(lerr)
		}
		if _, ok := c.Lookup(rec.Key); !ok {
			t.Errorf("the record is not in the cache after the package write failed")
		}
		if files := rescued(t, tmp, rec); len(files) != 0 {
			t.Errorf("rescue files %v, want none (the cache holds the record)", files)
		}
	})
	t.Run("pinned package fails", func(t *testing.T) {
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		cache := filepath.Join(t.TempDir(), "cache.json")
		r := testRequest(t, filepath.Join(blocker, "alexnet"), cache)
		r.Pins = []string{rec.Summary.Top[0].ID}
		_, err := keepAndWrite(r, rec, nil)
		files := rescued(t, tmp, rec)
		if err == nil || len(files) != 1 || !strings.Contains(err.Error(), files[0]) {
			t.Errorf("error %v, rescue files %v: want one, named in the error", err, files)
		}
		if _, serr := os.Stat(cache); serr == nil {
			t.Errorf("a pinned run wrote the cache")
		}
	})
}
