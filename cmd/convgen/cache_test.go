package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
