package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/cachetest"
	"github.com/convgen/convgen/internal/testfs"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// trainRecords are the flagship's fprop, dgrad and wgrad records on one
// device.
func trainRecords(t *testing.T) []tunecache.Record {
	fwd := fixture(t, h200, 132)
	return []tunecache.Record{fwd, cachetest.OpRecord(t, fwd, problem.OpDgrad), cachetest.OpRecord(t, fwd, problem.OpWgrad)}
}

// TestTrainFlag: -train is recorded in the regenerating command line
// (without -op), goes in a config file as "train", and is a usage error
// (exit 2) with -op, -epilogue, -out-precision and the flags of one op's
// search or package.
func TestTrainFlag(t *testing.T) {
	c, err := parseFlags([]string{"-shape", flagship, "-o", "conv", "-train"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !c.train || c.problem.Op != problem.OpFprop || !strings.HasSuffix(c.command(), " -train") || strings.Contains(c.command(), "-op") {
		t.Errorf("train %v, op %v, command %q", c.train, c.problem.Op, c.command())
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"-op fprop", []string{"-op", "fprop"}, "-train and -op: give one"},
		{"-op dgrad", []string{"-op", "dgrad"}, "-train and -op: give one"},
		{"-epilogue", []string{"-epilogue", "relu"}, "-train does not go with -epilogue relu"},
		{"-out-precision", []string{"-precision", "fp16", "-out-precision", "fp32"}, "-train does not go with -out-precision fp32"},
		{"-list", []string{"-list"}, "-train goes with a package to write"},
		{"-compile-only", []string{"-compile-only"}, "-train goes with a package to write"},
		{"-pin", []string{"-pin", "direct/x"}, "-train does not go with -pin"},
		{"-untuned", []string{"-untuned"}, "-train does not go with -untuned"},
	} {
		r := runConvgen(t, append([]string{"-shape", flagship, "-o", filepath.Join(t.TempDir(), "conv"), "-train"}, tc.args...)...)
		if r.code != exitUsage {
			t.Errorf("%s: exit %d, want %d (stderr %q)", tc.name, r.code, exitUsage, r.stderr)
		}
		oneErrorLine(t, r, tc.want)
	}
	args := ConfigPackage{Shape: flagship, Out: "conv", Train: true}.args(Config{}, "net/convgen.json")
	if !slices.Contains(args, "-train") {
		t.Errorf("config args %q lack -train", args)
	}
	err = runConfig(t.Context(), "net/convgen.json", []string{"-train"}, io.Discard, io.Discard)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "belongs in the config file") {
		t.Errorf("-config with -train: %v, want a usage error", err)
	}
}

// TestTrainReplay: from a cache with the three records, -train writes one
// package without a GPU, its Go files as in testdata/golden/train (-update
// rewrites them), and a second run writes the same bytes.
func TestTrainReplay(t *testing.T) {
	golden, err := filepath.Abs(filepath.Join("testdata", "golden", "train"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	putRecords(t, "cache.json", trainRecords(t)...)
	args := []string{"-shape", flagship, "-o", "alexnettrain", "-cache", "cache.json", "-train"}
	r := runConvgen(t, args...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"op fprop:", "op dgrad:", "op wgrad:", "wrote training package alexnettrain"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	got := testfs.ReadTree(t, "alexnettrain")
	for _, name := range []string{"kernel_fprop_sm_90.cubin", "kernel_dgrad_sm_90.cubin", "kernel_wgrad_sm_90.cubin", "report.json", "REPORT.md"} {
		if got[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	if *update {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(golden, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, src := range got {
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		path := filepath.Join(golden, name+".golden")
		if *update {
			if err := os.WriteFile(path, src, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (go test ./cmd/convgen -run TestTrainReplay -update creates it)", err)
			continue
		}
		if !bytes.Equal(src, want) {
			t.Errorf("%s differs from %s (run with -update if the change is intended)", name, path)
		}
	}
	if r := runConvgen(t, args...); r.code != 0 {
		t.Fatalf("again: exit %d, stderr %q", r.code, r.stderr)
	}
	for name, src := range got {
		if again, err := os.ReadFile(filepath.Join("alexnettrain", name)); err != nil || !bytes.Equal(again, src) {
			t.Errorf("a second replay changed %s (%v)", name, err)
		}
	}
}

// TestTrainMixedDevices: ops replayed from records of two GPU models
// write the package with one warning line on stderr naming the ops and
// models (none with -q); a report.json left in the directory that is not
// a training package's (it decodes in part) does not stop the run.
func TestTrainMixedDevices(t *testing.T) {
	const h100 = "NVIDIA H100 80GB HBM3"
	fwd := fixture(t, h200, 132)
	recs := []tunecache.Record{fwd, cachetest.OpRecord(t, fixture(t, h100, 132), problem.OpDgrad), cachetest.OpRecord(t, fwd, problem.OpWgrad)}
	dir := t.TempDir()
	cache, out := filepath.Join(dir, "cache.json"), filepath.Join(dir, "conv")
	putRecords(t, cache, recs...)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "doc.go"), []byte("// Code generated by convgen. DO NOT EDIT.\n\npackage conv\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "report.json"), []byte(`{"ops":[{"command":5},{}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-shape", flagship, "-o", out, "-cache", cache, "-train"}
	r := runConvgen(t, args...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	want := "convgen: warning: the training package's ops were tuned on different GPU models: fprop and wgrad on NVIDIA H200, dgrad on " + h100 + "; "
	if !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr %q, want one line starting with %q", r.stderr, want)
	}
	if r := runConvgen(t, append(args, "-q")...); r.code != 0 || r.stderr != "" {
		t.Errorf("-q: exit %d, stderr %q, want 0 and nothing", r.code, r.stderr)
	}
}

// TestTrainMissingRecord: without one op's record, -train fails with the
// exit status of a missing record, one error line naming the op, and
// writes nothing (nor the PyTorch module).
func TestTrainMissingRecord(t *testing.T) {
	recs := trainRecords(t)
	for _, tc := range []struct {
		op   string
		recs []tunecache.Record
	}{{"dgrad", []tunecache.Record{recs[0], recs[2]}}, {"wgrad", recs[:2]}, {"fprop", recs[1:]}} {
		dir := t.TempDir()
		cache := filepath.Join(dir, "cache.json")
		putRecords(t, cache, tc.recs...)
		out, torch := filepath.Join(dir, "conv"), filepath.Join(dir, "conv_torch")
		r := runConvgen(t, "-shape", flagship, "-o", out, "-cache", cache, "-train", "-torch", torch)
		if r.code != exitNoRecord {
			t.Errorf("no %s record: exit %d, want %d (stderr %q)", tc.op, r.code, exitNoRecord, r.stderr)
		}
		oneErrorLine(t, r, "op "+tc.op+": ", "tune op "+tc.op+" on a GPU")
		if strings.Contains(r.stderr, "-untuned") {
			t.Errorf("no %s record: stderr %q points at -untuned, which -train refuses", tc.op, r.stderr)
		}
		for _, p := range []string{out, torch} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("no %s record: %s: %v, want nothing written", tc.op, p, err)
			}
		}
	}
}
