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

// testRequest is the request of a package for the flagship, fp32 NCHW.
func testRequest(t *testing.T, out, cache string) Request {
	t.Helper()
	return Request{Problem: flagshipProblem(t), Out: out, Pkg: "alexnet", Cache: cache,
		Command: "convgen -shape " + flagship + " -o " + filepath.ToSlash(out), Log: io.Discard}
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
