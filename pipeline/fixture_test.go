package pipeline

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/internal/cachetest"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// flagship is AlexNet's first layer.
const flagship = cachetest.Flagship

const h200 = cachetest.H200

const fixturePTX = cachetest.PTX

// flagshipProblem is the flagship in fp32 NCHW.
func flagshipProblem(t *testing.T) problem.Problem {
	return cachetest.FlagshipProblem(t)
}

// fixture builds a tuning record for the flagship, fp32 NCHW, as if tuned on
// device, with the winner a real kept candidate of the direct family.
func fixture(t *testing.T, device string, sms int) tunecache.Record {
	return cachetest.Record(t, device, sms)
}

// gradFixture is fwd's record for op (dgrad or wgrad) of the same problem
// on the same device (cachetest.OpRecord).
func gradFixture(t *testing.T, fwd tunecache.Record, op problem.Op) tunecache.Record {
	return cachetest.OpRecord(t, fwd, op)
}

// testRequest is the request of a package for the flagship, fp32 NCHW.
func testRequest(t *testing.T, out, cache string) Request {
	t.Helper()
	return Request{Problem: flagshipProblem(t), Out: out, Pkg: "alexnet", Cache: cache,
		Command: "convgen -shape " + flagship + " -o " + filepath.ToSlash(out), Log: io.Discard}
}

// cachedRequest is testRequest in a directory of its own: the package
// goes to alexnet in it, the cache cache.json there holds recs, and with
// torch the PyTorch module goes to alexnet_torch beside the package.
func cachedRequest(t *testing.T, torch bool, recs ...tunecache.Record) Request {
	t.Helper()
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.json")
	putRecords(t, cache, recs...)
	r := testRequest(t, filepath.Join(dir, "alexnet"), cache)
	if torch {
		r.Torch = filepath.Join(dir, "alexnet_torch")
	}
	return r
}

// listDir lists the names in dir, sorted.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// needNoGPU fails a test that expects Run to replay: it needs a build
// without the cuda tag.
func needNoGPU(t *testing.T) {
	t.Helper()
	if gpu.Available() {
		t.Fatal("these tests expect a build without the cuda tag: Run must replay from the cache")
	}
}

func putRecords(t *testing.T, path string, recs ...tunecache.Record) {
	t.Helper()
	for _, r := range recs {
		if err := tunecache.Put(path, r); err != nil {
			t.Fatalf("tunecache.Put: %v", err)
		}
	}
}
