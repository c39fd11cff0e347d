package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// writeLegacyCache writes recs as a cache file without checksums and
// without Put's superseding, as files written before both were.
func writeLegacyCache(t *testing.T, path string, recs ...tunecache.Record) {
	t.Helper()
	f := tunecache.File{Format: tunecache.Format}
	for _, r := range recs {
		f.Records = append(f.Records, tunecache.FileRecord{Record: r})
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReplayAfterUpgrade (issue 22, item 2): a cache holding two records of
// one device that differ only in driver and NVRTC (re-tuned after an
// upgrade, before Put superseded by device model) replays the newest, with
// and without -device and -arch, instead of exiting 2 with a choice no
// flag can make.
func TestReplayAfterUpgrade(t *testing.T) {
	old := fixture(t, h200, 132)
	upgraded := fixture(t, h200, 132)
	upgraded.Key.Driver, upgraded.Key.NVRTCVersion = "13.1", "13.1"
	other := fixture(t, "NVIDIA H100 80GB HBM3", 132)
	for _, args := range [][]string{{"-device", h200, "-arch", "sm_90"}, {"-device", h200}} {
		dir := t.TempDir()
		cache := filepath.Join(dir, "cache.json")
		writeLegacyCache(t, cache, upgraded, old, other)
		r := runConvgen(t, append([]string{"-shape", flagship, "-o", filepath.Join(dir, "pkg"), "-cache", cache}, args...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "replaying the newest, NVRTC 13.1, driver 13.1") {
			t.Errorf("%v: stdout %q does not say the newest record was replayed", args, r.stdout)
		}
	}
	// Without -device the two device models still need a choice.
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.json")
	writeLegacyCache(t, cache, upgraded, old, other)
	r := runConvgen(t, "-shape", flagship, "-o", filepath.Join(dir, "pkg"), "-cache", cache)
	if r.code != 2 {
		t.Errorf("two device models without -device: exit %d, want 2", r.code)
	}
	oneErrorLine(t, r, "2 records", "-device")
}

// testConfig is the configuration of a run for the flagship, fp32 NCHW.
func testConfig(t *testing.T, out, cache string) config {
	t.Helper()
	shape, err := problem.ParseShape(flagship)
	if err != nil {
		t.Fatal(err)
	}
	return config{problem: problem.Problem{Shape: shape, Precision: problem.FP32, Layout: problem.NCHW},
		out: out, pkg: "alexnet", cache: cache}
}

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
		var stdout bytes.Buffer
		err := keepAndWrite(testConfig(t, out, filepath.Join(blocker, "cache.json")), rec, nil, false, &stdout)
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
		err := keepAndWrite(testConfig(t, filepath.Join(blocker, "alexnet"), cache), rec, nil, false, &bytes.Buffer{})
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
		err := keepAndWrite(testConfig(t, filepath.Join(blocker, "alexnet"), cache), rec, nil, true, &bytes.Buffer{})
		files := rescued(t, tmp, rec)
		if err == nil || len(files) != 1 || !strings.Contains(err.Error(), files[0]) {
			t.Errorf("error %v, rescue files %v: want one, named in the error", err, files)
		}
		if _, serr := os.Stat(cache); serr == nil {
			t.Errorf("a pinned run wrote the cache")
		}
	})
}
