package pipeline

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/internal/version"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// flagship is AlexNet's first layer.
const flagship = "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2"

const h200 = "NVIDIA H200"

const fixturePTX = "//\n// fixture PTX\n//\n.version 7.8\n.target sm_90\n.address_size 64\n"

// flagshipProblem is the flagship in fp32 NCHW.
func flagshipProblem(t *testing.T) problem.Problem {
	t.Helper()
	shape, err := problem.ParseShape(flagship)
	if err != nil {
		t.Fatal(err)
	}
	return problem.Problem{Shape: shape, Precision: problem.FP32, Layout: problem.NCHW}
}

// fixture builds a tuning record for the flagship, fp32 NCHW, as if tuned on
// device, with the winner a real kept candidate of the direct family.
func fixture(t *testing.T, device string, sms int) tunecache.Record {
	t.Helper()
	p := flagshipProblem(t)
	info := gpu.Info{Name: device, ComputeCapability: "9.0", Arch: "sm_90", SMs: sms, Driver: "13.0",
		ClockMHz: 1980, SharedOptin: 232448, L2Bytes: 50 << 20, MemoryGBps: 4200}
	cands, err := kernels.Enumerate(p, autotune.Limits(info, "11.8"))
	if err != nil {
		t.Fatal(err)
	}
	var win kernels.Candidate
	for _, c := range cands {
		if c.Rejected == "" && c.Family == "direct" {
			win = c
			break
		}
	}
	if win.Family == "" {
		t.Fatal("the flagship has no kept direct candidate")
	}
	k, err := kernels.RenderCandidate(p, win)
	if err != nil {
		t.Fatal(err)
	}
	top := tunecache.Measured{ID: win.ID(), Registers: 96, SharedBytes: k.SharedBytes, Threads: k.Block[0], MedianMS: 1.9,
		P10MS: 1.88, P90MS: 1.95, Runs: 30, RelError: 2.1e-7}
	return tunecache.Record{
		Key: tunecache.Key{Shape: p.Shape.String(), Precision: "fp32", Layout: "nchw", NVRTCVersion: "13.0",
			Device: device, ComputeCapability: "9.0", SMCount: sms, Driver: "13.0"},
		ConvgenVersion: version.Convgen,
		Winner:         tunecache.Timing{Family: "direct", Config: win.Config, MedianMS: 1.9, SpreadMS: 0.07, RelError: 2.1e-7},
		KernelSHA256:   kernels.Hash(k),
		Kernel:         k.Name, Launch: k.Launch, Arch: "sm_90",
		CUBIN:   tunecache.Gzip([]byte("\x7fELF\x02\x01\x01 fixture cubin \x00\x01\x02\xff")),
		PTX:     tunecache.Gzip([]byte(fixturePTX)),
		Command: "convgen (fixture)",
		Summary: tunecache.Summary{DeviceArch: info.Arch, ClockMHz: info.ClockMHz, MemoryGBps: info.MemoryGBps,
			Counts: []tunecache.Count{{Status: "ok", N: 1}}, Top: []tunecache.Measured{top}, BestPerFamily: []tunecache.Measured{top}},
	}
}

// testRequest is the request of a package for the flagship, fp32 NCHW.
func testRequest(t *testing.T, out, cache string) Request {
	t.Helper()
	return Request{Problem: flagshipProblem(t), Out: out, Pkg: "alexnet", Cache: cache,
		Command: "convgen -shape " + flagship + " -o " + filepath.ToSlash(out), Log: io.Discard}
}

// readTree reads every file in dir (not recursive; generated packages are flat).
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("%s: unexpected subdirectory %s", dir, e.Name())
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
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
