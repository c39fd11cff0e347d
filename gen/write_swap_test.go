package gen

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// exchangeWorks says whether exchange swaps directories atomically in
// parent's file system.
func exchangeWorks(t *testing.T, parent string) bool {
	t.Helper()
	a, b := filepath.Join(parent, "a"), filepath.Join(parent, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(d)
	}
	err := exchange(a, b)
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("exchange: %v", err)
	}
	return err == nil
}

// snapshot reads the package in dir through a handle on the directory, and
// says whether dir was that same directory from before the first read to
// after the last (else the reading is inconclusive: it may have raced with
// the old package's removal). missing: dir was not there.
func snapshot(dir string) (files map[string][]byte, current, missing bool, err error) {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, true, nil
	}
	if err != nil {
		return nil, false, false, err
	}
	defer root.Close()
	before, err := root.Stat(".")
	if err != nil {
		return nil, false, false, err
	}
	files = map[string][]byte{}
	entries, rerr := fs.ReadDir(root.FS(), ".")
	for _, e := range entries {
		b, err := root.ReadFile(e.Name())
		if err != nil && rerr == nil {
			rerr = err
		}
		files[e.Name()] = b
	}
	after, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, true, nil
	}
	if err != nil {
		return nil, false, false, err
	}
	if !os.SameFile(before, after) {
		return nil, false, false, nil
	}
	// The directory was dir throughout: it can have had no file removed.
	return files, true, false, rerr
}

// TestWriteConcurrent: many writers of one directory all succeed, one
// after another, while a reader never finds it missing (where the swap is
// atomic) nor sees a mixture of two packages.
func TestWriteConcurrent(t *testing.T) {
	parent := t.TempDir()
	atomicSwap := exchangeWorks(t, parent)
	if !atomicSwap {
		t.Logf("%s/%s: no atomic exchange of directories, the reader may find the directory missing", runtime.GOOS, runtime.GOARCH)
	}
	dir := filepath.Join(parent, "pkg")
	if err := Write(dir, pkgFiles(0)); err != nil {
		t.Fatal(err)
	}
	const writers, writes = 6, 12
	if testing.Short() {
		t.Skip("many fsyncs")
	}
	done := make(chan struct{})
	var polls, consistent, inconclusive, missing atomic.Int64
	var readerErr error
	var readerDone sync.WaitGroup
	readerDone.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			polls.Add(1)
			files, current, gone, err := snapshot(dir)
			switch {
			case err != nil:
				readerErr = err
				return
			case gone:
				missing.Add(1)
				continue
			case !current:
				inconclusive.Add(1)
				continue
			}
			id, ok := packageID(files)
			if !ok {
				readerErr = fmt.Errorf("a mixture: %s holds %q", dir, slices.Sorted(maps.Keys(files)))
				return
			}
			want := withManifest(pkgFiles(id))
			if len(files) != len(want) {
				readerErr = fmt.Errorf("a mixture: %s holds %q, want %q", dir, slices.Sorted(maps.Keys(files)), slices.Sorted(maps.Keys(want)))
				return
			}
			for name, b := range want {
				if string(files[name]) != string(b) {
					readerErr = fmt.Errorf("a mixture: %s/%s = %q in package %d", dir, name, files[name], id)
					return
				}
			}
			consistent.Add(1)
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, writers*writes)
	for w := range writers {
		wg.Go(func() {
			for k := range writes {
				if err := Write(dir, pkgFiles(1+w*writes+k)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readerDone.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a writer failed: %v", err)
	}
	if readerErr != nil {
		t.Error(readerErr)
	}
	t.Logf("%d polls: %d consistent, %d raced with a removal, %d found it missing", polls.Load(), consistent.Load(), inconclusive.Load(), missing.Load())
	if atomicSwap && missing.Load() > 0 {
		t.Errorf("the reader found %s missing %d times", dir, missing.Load())
	}
	if consistent.Load() == 0 {
		t.Error("the reader never read a whole package")
	}
	parentHolds(t, parent, "pkg")
}

// packageID finds the package id in files' v<id>.txt, if there is exactly one.
func packageID(files map[string][]byte) (int, bool) {
	id, n := 0, 0
	for name := range files {
		if s, ok := strings.CutPrefix(name, "v"); ok {
			if s, ok := strings.CutSuffix(s, ".txt"); ok {
				var err error
				if id, err = strconv.Atoi(s); err != nil {
					return 0, false
				}
				n++
			}
		}
	}
	return id, n == 1
}

// TestWriteCleansStale: the temporaries of killed runs (of this version:
// with a process id, and of older ones) are removed by the next run, and
// nothing else is.
func TestWriteCleansStale(t *testing.T) {
	for _, check := range []bool{false, true} {
		t.Run(fmt.Sprintf("CheckTarget=%v", check), func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "pkg")
			if err := Write(dir, pkgFiles(1)); err != nil {
				t.Fatal(err)
			}
			stale := []string{
				".pkg.convgen-new-999999-123456/doc.go",
				".pkg.convgen-new-3141592653/shape.go", // an older version's
				".pkg.convgen-old-999999-42/pkg/doc.go",
				".pkg.convgen-old-271828/pkg/doc.go",
				".pkg.convgen-lock", // a killed holder's
			}
			kept := []string{
				".other.convgen-new-999999-1/doc.go", // another directory's
				".pkg.convgen-new-mine/x",            // not a name Write makes
				"pkg.convgen-new-1/x",
				".pkg.convgen-newer-1/x",
			}
			for _, p := range append(slices.Clone(stale), kept...) {
				mustWrite(t, filepath.Join(parent, p), "x")
			}
			var err error
			if check {
				err = CheckTarget(dir)
			} else {
				err = Write(dir, pkgFiles(2))
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"pkg"}
			for _, p := range kept {
				want = append(want, strings.Split(p, "/")[0])
			}
			parentHolds(t, parent, want...)
			if !check {
				dirHolds(t, dir, withManifest(pkgFiles(2)))
			}
		})
	}
}

// TestWriteRestoresInterrupted: a run killed between the two renames of the
// fallback left the old package only in .pkg.convgen-old-*; the next run
// puts it back before judging the directory.
func TestWriteRestoresInterrupted(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "pkg")
	if err := Write(dir, pkgFiles(1)); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, "helper.go"), "package p\n") // the user's
	old := filepath.Join(parent, ".pkg.convgen-old-999999-1")
	if err := os.Mkdir(old, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, filepath.Join(old, "pkg")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(parent, ".pkg.convgen-new-999999-2", "doc.go"), "x")

	var fe *ForeignError
	if err := Write(dir, pkgFiles(2)); !errors.As(err, &fe) {
		t.Fatalf("Write: error %v, want the refusal for the restored package's helper.go", err)
	}
	parentHolds(t, parent, "pkg")
	want := withManifest(pkgFiles(1))
	want["helper.go"] = []byte("package p\n")
	dirHolds(t, dir, want)
}

// TestReplaceInTwoSteps tests the fallback where the swap is not atomic.
func TestReplaceInTwoSteps(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "pkg")
	if err := Write(dir, pkgFiles(1)); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(parent, ".pkg.convgen-new-1-1")
	for name, b := range pkgFiles(2) {
		mustWrite(t, filepath.Join(tmp, name), string(b))
	}
	if err := replaceInTwoSteps(tmp, dir, parent, "pkg"); err != nil {
		t.Fatal(err)
	}
	dirHolds(t, dir, pkgFiles(2))
	parentHolds(t, parent, "pkg")
	// A failed second rename puts the old directory back.
	if err := replaceInTwoSteps(filepath.Join(parent, "absent"), dir, parent, "pkg"); err == nil {
		t.Error("replaceInTwoSteps of a missing directory succeeded")
	}
	dirHolds(t, dir, pkgFiles(2))
	parentHolds(t, parent, "pkg")
}

// makeUnwritable makes dir unwritable for this process: by its mode, or as
// root (who ignores modes) with the immutable attribute; it skips the test
// where neither works.
func makeUnwritable(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("running as root, which ignores permissions, and chattr +i failed (%v: %s): cannot make a directory unwritable", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
	if f, err := os.CreateTemp(dir, "probe"); err == nil {
		f.Close()
		os.Remove(f.Name())
		t.Skipf("%s is still writable after chattr +i", dir)
	}
}

// TestCheckTargetUnwritableParent: the check before tuning fails where
// Write would, for a read-only parent: new or existing output directory,
// and a writable lock file left there (which alone would pass a check
// that only opens the lock).
func TestCheckTargetUnwritableParent(t *testing.T) {
	for name, setup := range map[string]func(t *testing.T, dir string){
		"new directory": func(t *testing.T, dir string) {},
		"existing directory": func(t *testing.T, dir string) {
			if err := Write(dir, pkgFiles(1)); err != nil {
				t.Fatal(err)
			}
		},
		"writable lock file": func(t *testing.T, dir string) {
			mustWrite(t, filepath.Join(filepath.Dir(dir), ".pkg.convgen-lock"), "")
		},
	} {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "pkg")
			setup(t, dir)
			before := readAll(t, parent)
			makeUnwritable(t, parent)
			if err := CheckTarget(dir); err == nil {
				t.Fatal("CheckTarget passed for a read-only parent")
			} else {
				t.Log(err)
			}
			if err := Write(dir, pkgFiles(2)); err == nil {
				t.Fatal("Write succeeded under a read-only parent")
			}
			if after := readAll(t, parent); len(after) != len(before) {
				t.Errorf("the parent changed: %q, was %q", slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before)))
			}
		})
	}
}

// TestCheckTarget: what CheckTarget refuses and that it leaves no trace.
func TestCheckTarget(t *testing.T) {
	parent := t.TempDir()
	if err := CheckTarget(filepath.Join(parent, "new", "pkg")); err != nil {
		t.Fatalf("CheckTarget of a new directory: %v", err)
	}
	parentHolds(t, parent, "new")
	parentHolds(t, filepath.Join(parent, "new"))

	file := filepath.Join(parent, "file")
	mustWrite(t, file, "x")
	for name, dir := range map[string]string{
		"parent is a file": filepath.Join(file, "pkg"),
		"is a file":        file,
		"current dir":      ".",
		"root":             string(filepath.Separator),
		"empty":            "",
	} {
		if err := CheckTarget(dir); err == nil {
			t.Errorf("%s: CheckTarget(%q) passed", name, dir)
		}
	}
	parentHolds(t, parent, "file", "new")

	// A directory whose old files cannot be removed (checked where the
	// permissions are enforced: not for root).
	if os.Geteuid() != 0 {
		dir := filepath.Join(parent, "pkg")
		if err := Write(dir, pkgFiles(1)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o755)
		if err := CheckTarget(dir); err == nil {
			t.Error("CheckTarget passed for a directory whose files cannot be removed")
		}
	}
}

// TestWriteKilled kills writers at random moments: the directory is
// always there (where the swap is atomic) and a whole package, and the
// next Write succeeds and leaves nothing else behind.
func TestWriteKilled(t *testing.T) {
	if dir := os.Getenv("CONVGEN_TEST_WRITE_LOOP"); dir != "" {
		for i := 1; ; i++ {
			if err := Write(dir, pkgFiles(i)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
		}
	}
	if testing.Short() {
		t.Skip("starts processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	parent := t.TempDir()
	atomicSwap := exchangeWorks(t, parent)
	dir := filepath.Join(parent, "pkg")
	if err := Write(dir, pkgFiles(0)); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		cmd := exec.Command(exe, "-test.run=^TestWriteKilled$")
		cmd.Env = append(os.Environ(), "CONVGEN_TEST_WRITE_LOOP="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+i*7) * time.Millisecond)
		cmd.Process.Kill()
		if err := cmd.Wait(); err != nil && cmd.ProcessState.ExitCode() == 3 {
			t.Fatalf("the writer failed: %v", err)
		}
		files, current, missing, err := snapshot(dir)
		switch {
		case err != nil:
			t.Fatal(err)
		case missing && atomicSwap:
			t.Fatalf("kill %d: %s is missing", i, dir)
		case current:
			if id, ok := packageID(files); !ok || len(files) != len(withManifest(pkgFiles(id))) {
				t.Fatalf("kill %d: %s holds %q", i, dir, slices.Sorted(maps.Keys(files)))
			}
		}
	}
	if err := Write(dir, pkgFiles(1000)); err != nil {
		t.Fatal(err)
	}
	dirHolds(t, dir, withManifest(pkgFiles(1000)))
	parentHolds(t, parent, "pkg")
}
