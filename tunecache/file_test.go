package tunecache

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPutThroughSymlink (issue 22, item 8): Put through a symbolic link
// writes the file it links to, and the link stays a link; a dangling link
// gets its target created.
func TestPutThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real", "tune.json")
	mustPut(t, target, testRecord(shapeOf(1), "NVIDIA H200", 0.5))
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(filepath.Join("real", "tune.json"), link); err != nil {
		t.Fatal(err)
	}
	rec := testRecord(shapeOf(2), "NVIDIA H200", 0.5)
	mustPut(t, link, rec)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v, %v", fi.Mode(), err)
	}
	if n := len(mustLoad(t, target).Records()); n != 2 {
		t.Errorf("the link's target holds %d records, want 2", n)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "link.json*")); len(tmps) != 1 {
		t.Errorf("files beside the link: %v, want only the link", tmps)
	}

	dangling := filepath.Join(dir, "dangling.json")
	if err := os.Symlink("new.json", dangling); err != nil {
		t.Fatal(err)
	}
	mustPut(t, dangling, rec)
	if _, ok := mustLoad(t, filepath.Join(dir, "new.json")).Lookup(rec.Key); !ok {
		t.Errorf("Put through a dangling link did not create its target")
	}
	if err := CheckWritable(link); err != nil {
		t.Errorf("CheckWritable through a link: %v", err)
	}
}

// TestNotRegular (issue 22, item 8): a device or a directory as the cache
// is refused at once, by Load, Put and CheckWritable, without reading it
// (/dev/zero would never end).
func TestNotRegular(t *testing.T) {
	paths := []string{t.TempDir()}
	if _, err := os.Stat("/dev/zero"); err == nil {
		paths = append(paths, "/dev/zero")
	}
	for _, path := range paths {
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Load(%s) = %v, want a not-a-regular-file error", path, err)
		}
		if err := CheckWritable(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("CheckWritable(%s) = %v, want a not-a-regular-file error", path, err)
		}
	}
	// Put: the directory only (a lock file beside /dev/zero would be made
	// in /dev).
	if err := Put(paths[0], testRecord(shapeOf(1), "NVIDIA H200", 0.5)); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Put(a directory) = %v, want a not-a-regular-file error", err)
	}
}

// TestTooLarge (issue 22, item 8): a file larger than MaxFileBytes is
// refused as corrupt without reading it; readFile also stops reading at
// its limit.
func TestTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, MaxFileBytes+1); err != nil { // sparse: nothing is written
		t.Fatal(err)
	}
	_, err := Load(path)
	if !errors.As(err, new(*CorruptError)) || !strings.Contains(err.Error(), "more than") {
		t.Errorf("Load of a %d-byte file = %v, want a corrupt-cache error", MaxFileBytes+1, err)
	}
	if err := os.Truncate(path, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := readFile(path, 99); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("readFile over its limit = %v, want an error", err)
	}
	if data, err := readFile(path, 100); err != nil || len(data) != 100 {
		t.Errorf("readFile at its limit = %d bytes, %v", len(data), err)
	}
}

// TestCheckWritableTemp (issue 22, item 6): CheckWritable does what Put
// does beside the cache (create a temporary file and rename it), not only
// take the lock: a cache whose lock file can be made but whose temporary
// file cannot (here its name would be too long) is refused before tuning
// rather than after, and the probe leaves nothing behind.
func TestCheckWritableTemp(t *testing.T) {
	dir := t.TempDir()
	// 250 bytes: "NAME.lock" is the longest name a directory takes (255),
	// "NAME.tmp-123456789" is longer.
	path := filepath.Join(dir, strings.Repeat("c", 250))
	if err := CheckWritable(path); err == nil || !strings.Contains(err.Error(), "cannot write beside it") {
		t.Errorf("CheckWritable = %v, want an error", err)
	}
	if err := Put(path, testRecord(shapeOf(1), "NVIDIA H200", 0.5)); err == nil {
		t.Errorf("Put succeeded where CheckWritable cannot: the test no longer tests it")
	}
	ok := filepath.Join(dir, "tune.json")
	if err := CheckWritable(ok); err != nil {
		t.Fatalf("CheckWritable(%s): %v", ok, err)
	}
	names, _ := os.ReadDir(dir)
	var got []string
	for _, e := range names {
		got = append(got, e.Name())
	}
	if want := []string{strings.Repeat("c", 250) + ".lock", "tune.json.lock"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("directory holds %v after the checks, want only the lock files", got)
	}
}

// TestCheckWritableReadOnly (issue 22, item 6): a read-only directory that
// already holds a writable lock file is refused. Root writes anywhere, so
// the check cannot be made as root.
func TestCheckWritableReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions; TestCheckWritableTemp covers the check")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	path := filepath.Join(dir, "tune.json")
	if err := CheckWritable(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if err := CheckWritable(path); err == nil {
		t.Errorf("CheckWritable of a read-only directory with a lock file: no error")
	}
}

// TestSaveRescue: a rescued record is a one-record cache that Load reads
// back unchanged; an invalid record is refused.
func TestSaveRescue(t *testing.T) {
	dir := t.TempDir()
	rec := testRecord(shapeOf(1), "NVIDIA H200", 0.5)
	path, err := SaveRescue(dir, rec)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "convgen-record-") {
		t.Errorf("rescue file %s, want convgen-record-* in %s", path, dir)
	}
	c := mustLoad(t, path)
	if got, ok := c.Lookup(rec.Key); !ok || len(c.Records()) != 1 || !bytes.Equal(got.CUBIN, rec.CUBIN) {
		t.Errorf("rescue file holds %d records, want the one rescued", len(c.Records()))
	}
	rec.Grid[0] = 0
	if _, err := SaveRescue(dir, rec); err == nil {
		t.Errorf("SaveRescue of an invalid record: no error")
	}
}
