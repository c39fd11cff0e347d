package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/internal/cachetest"
	"github.com/convgen/convgen/internal/testfs"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/report"
	"github.com/convgen/convgen/tunecache"
)

// flagship is AlexNet's first layer.
const flagship = cachetest.Flagship

// result is one run of the command.
type result struct {
	code           int
	stdout, stderr string
}

func runConvgen(t *testing.T, args ...string) result {
	t.Helper()
	if gpu.Available() {
		t.Fatal("these tests expect a build without the cuda tag: generate must replay from the cache")
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

// oneErrorLine checks that stderr is exactly one line starting with
// "convgen:" and containing every one of want.
func oneErrorLine(t *testing.T, r result, want ...string) {
	t.Helper()
	line, rest, ok := strings.Cut(r.stderr, "\n")
	if !ok || rest != "" || !strings.HasPrefix(line, "convgen: ") {
		t.Errorf("stderr = %q: want exactly one line starting with \"convgen: \"", r.stderr)
		return
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("stderr %q does not mention %q", line, w)
		}
	}
}

// listDir lists every entry under dir, recursively, as slash paths.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			rel, _ := filepath.Rel(dir, path)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

func TestUsageErrors(t *testing.T) {
	const bad = "N=1,C=3,H=8,W=8,K=4,R=3,S=3"
	tests := []struct {
		name string
		args []string // -o and -cache are added unless noOut
		want []string
		// noOut leaves out -o (the "missing -o" case).
		noOut bool
	}{
		{"missing -shape", nil, []string{"-shape"}, false},
		{"empty -shape", []string{"-shape", ""}, []string{"-shape"}, false},
		{"-shape without value", []string{"-shape"}, []string{"shape"}, true},
		{"unknown key", []string{"-shape", flagship + ",foo=1"}, []string{`unknown key "foo"`}, false},
		{"repeated key", []string{"-shape", flagship + ",n=2"}, []string{`"n"`, "twice"}, false},
		{"K=0", []string{"-shape", "N=1,C=3,H=8,W=8,K=0,R=3,S=3"}, []string{"K=", "positive"}, false},
		{"output size below 1", []string{"-shape", "N=1,C=3,H=8,W=8,K=4,R=13,S=3,pad=2"}, []string{"P=", "at least 1"}, false},
		{"groups=3, C=4", []string{"-shape", "N=1,C=4,H=8,W=8,K=6,R=3,S=3,groups=3"}, []string{"C=4", "not divisible by groups=3"}, false},
		{"too large", []string{"-shape", "N=1000000,C=1000,H=1000,W=2,K=1,R=1,S=1"}, []string{"2^40"}, false},
		{"-precision fp64", []string{"-shape", bad, "-precision", "fp64"}, []string{"-precision", `"fp64"`}, false},
		{"-layout nhcw", []string{"-shape", bad, "-layout", "nhcw"}, []string{"-layout", `"nhcw"`}, false},
		{"-arch sm9", []string{"-shape", bad, "-arch", "sm9"}, []string{"-arch", `"sm9"`}, false},
		{"missing -o", []string{"-shape", bad}, []string{"-o"}, true},
		{"-pkg 1bad", []string{"-shape", bad, "-pkg", "1bad"}, []string{"-pkg", `"1bad"`}, false},
		{"-pkg keyword", []string{"-shape", bad, "-pkg", "func"}, []string{"-pkg", `"func"`}, false},
		{"-runs 5", []string{"-shape", bad, "-runs", "5"}, []string{"-runs 5"}, false},
		{"-runs not a number", []string{"-shape", bad, "-runs", "many"}, []string{"runs", `"many"`}, false},
		{"-trials -1", []string{"-shape", bad, "-trials", "-1"}, []string{"-trials -1"}, false},
		{"-jobs -1", []string{"-shape", bad, "-jobs", "-1"}, []string{"-jobs -1"}, false},
		{"-time -1s", []string{"-shape", bad, "-time", "-1s"}, []string{"-time -1s"}, false},
		{"-compile-timeout 0s", []string{"-shape", bad, "-compile-timeout", "0s"}, []string{"-compile-timeout 0s", "positive"}, false},
		{"-pin without a GPU", []string{"-shape", bad, "-pin", "direct/TileK=8"}, []string{"-pin", "cuda", "-compile-only"}, false},
		{"-retune without a GPU", []string{"-shape", bad, "-retune"}, []string{"-retune", "cuda"}, false},
		{"-o . without -pkg", []string{"-shape", bad, "-o", "."}, []string{"-o .", "-pkg"}, true},
		{"-shape twice", []string{"-shape", bad, "-shape", flagship}, []string{"--shape", "given twice", bad}, false},
		{"-o twice", []string{"-shape", bad, "-o", "other"}, []string{"--out", "given twice"}, false},
		{"-precision twice", []string{"-shape", bad, "-precision", "tf32", "--precision=fp16"}, []string{"--precision", "given twice", `"tf32"`}, false},
		{"empty -cache", []string{"-shape", bad, "-cache="}, []string{"-cache"}, false},
		{"positional argument", []string{"-shape", bad, "extra"}, []string{`unexpected argument "extra"`}, false},
		{"unknown flag", []string{"-shape", bad, "--bogus"}, []string{"bogus"}, false},
		{"unknown flag, one dash", []string{"-shape", bad, "-bogus"}, []string{"bogus"}, false},
		{"-source-dir without -compile-only", []string{"-shape", bad, "-source-dir", "src"}, []string{"-source-dir needs -compile-only"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "alexnet")
			cache := filepath.Join(dir, "cache.json")
			args := slices.Clone(tt.args)
			if !tt.noOut {
				// Before the case's own flags, so that a trailing flag
				// without value stays last.
				args = append([]string{"-o", out, "-cache", cache}, args...)
			} else {
				args = append([]string{"-cache", cache}, args...)
			}
			r := runConvgen(t, args...)
			if r.code != 2 {
				t.Errorf("exit code %d, want 2 (stderr %q)", r.code, r.stderr)
			}
			oneErrorLine(t, r, tt.want...)
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing on a usage error", r.stdout)
			}
			if got := listDir(t, dir); len(got) != 0 {
				t.Errorf("a usage error left %v in the directory", got)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, flag := range []string{"-help", "--help", "-h"} {
		t.Run(flag, func(t *testing.T) {
			dir := t.TempDir()
			r := runConvgen(t, flag, "-o", filepath.Join(dir, "x"), "-cache", filepath.Join(dir, "c.json"))
			if r.code != 0 {
				t.Errorf("exit code %d, want 0", r.code)
			}
			for _, w := range []string{"usage: convgen", "--shape", "--precision", "--device", "given once"} {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("help output (stdout) lacks %q:\n%s", w, r.stdout)
				}
			}
			if r.stderr != "" {
				t.Errorf("stderr = %q, want nothing: help goes to stdout", r.stderr)
			}
			if got := listDir(t, dir); len(got) != 0 {
				t.Errorf("-help left %v in the directory", got)
			}
		})
	}
}

// fixture builds a tuning record for the flagship, fp32 NCHW, as if tuned on
// device, with the winner a real kept candidate of the direct family.
func fixture(t *testing.T, device string, sms int) tunecache.Record {
	return cachetest.Record(t, device, sms)
}

const fixturePTX = cachetest.PTX

func putRecords(t *testing.T, path string, recs ...tunecache.Record) {
	t.Helper()
	for _, r := range recs {
		if err := tunecache.Put(path, r); err != nil {
			t.Fatalf("tunecache.Put: %v", err)
		}
	}
}

const h200 = cachetest.H200

func TestReplay(t *testing.T) {
	rec := fixture(t, h200, 132)
	// The same relative -o and -cache strings, run from two working
	// directories: the command line recorded in the files is the same, so
	// must every byte be.
	const out, cache = "tmp/alexnet", "tuning/cache.json"
	var trees []map[string][]byte
	for i := range 2 {
		dir := t.TempDir()
		t.Chdir(dir)
		putRecords(t, cache, rec)
		if err := os.MkdirAll("tmp", 0o755); err != nil {
			t.Fatal(err)
		}
		r := runConvgen(t, "-shape", flagship, "-o", out, "-cache", cache)
		if r.code != 0 {
			t.Fatalf("run %d: exit code %d, stderr %q", i, r.code, r.stderr)
		}
		if r.stderr != "" {
			t.Errorf("run %d: stderr = %q, want nothing", i, r.stderr)
		}
		for _, w := range []string{"replaying", h200, "wrote package alexnet"} {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("run %d: stdout lacks %q:\n%s", i, w, r.stdout)
			}
		}
		trees = append(trees, testfs.ReadTree(t, filepath.Join(dir, "tmp", "alexnet")))
		if got := listDir(t, filepath.Join(dir, "tmp")); !slices.Contains(got, "alexnet") || slices.ContainsFunc(got, func(n string) bool {
			return strings.Contains(n, "convgen-") && !strings.HasSuffix(n, ".convgen-manifest")
		}) {
			t.Errorf("run %d: tmp/ holds %v: want alexnet and no leftover temporary directory", i, got)
		}
	}
	files := trees[0]
	for _, name := range []string{"doc.go", "shape.go", "REPORT.md", "report.json", "kernel_sm_90.cubin", "kernel.ptx"} {
		if _, ok := files[name]; !ok {
			t.Errorf("the package lacks %s (has %v)", name, slices.Sorted(maps.Keys(files)))
		}
	}
	if first, _, _ := strings.Cut(string(files["doc.go"]), "\n"); first != "// Code generated by convgen. DO NOT EDIT." {
		t.Errorf("doc.go starts with %q", first)
	}
	if cubin, _ := rec.CUBIN.Open(); !bytes.Equal(files["kernel_sm_90.cubin"], cubin) {
		t.Errorf("kernel_sm_90.cubin = %q, want the record's CUBIN", files["kernel_sm_90.cubin"])
	}
	if string(files["kernel.ptx"]) != fixturePTX {
		t.Errorf("kernel.ptx = %q, want the record's PTX", files["kernel.ptx"])
	}
	for name, content := range files {
		if strings.HasSuffix(name, ".go") {
			if !bytes.Contains(content, []byte("-o tmp/alexnet")) || !bytes.HasPrefix(content, []byte("// Code generated by convgen. DO NOT EDIT.\n")) {
				t.Errorf("%s lacks the generated header or the regenerate command with -o tmp/alexnet", name)
			}
			if !bytes.Contains(content, []byte("package alexnet")) {
				t.Errorf("%s is not in package alexnet", name)
			}
		}
	}
	if !bytes.Contains(files["doc.go"], []byte(rec.Kernel)) {
		t.Errorf("doc.go does not name the kernel %s", rec.Kernel)
	}

	var data report.Data
	if err := json.Unmarshal(files["report.json"], &data); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	wantCmd := "convgen -shape " + rec.Key.Shape + " -precision fp32 -layout nchw -pkg alexnet -o tmp/alexnet -cache tuning/cache.json"
	if data.Command != wantCmd {
		t.Errorf("report.json command = %q\nwant %q", data.Command, wantCmd)
	}
	if data.Device.Name != h200 || data.Device.SMs != 132 || data.Device.Arch != "sm_90" {
		t.Errorf("report.json device = %+v", data.Device)
	}
	if w, ok := data.WinnerRow(); !ok || w.MedianMS != 1.9 || w.Registers != 96 {
		t.Errorf("report.json winner %q: row %+v, found %v", data.Winner, w, ok)
	}
	if data.SchemaVersion != report.SchemaVersion || len(data.Counts) != 1 || data.Counts[0].Status != "ok" {
		t.Errorf("report.json schema %d, counts %v", data.SchemaVersion, data.Counts)
	}
	md := string(files["REPORT.md"])
	for _, w := range []string{"# convgen tuning report", data.Winner, h200, wantCmd} {
		if !strings.Contains(md, w) {
			t.Errorf("REPORT.md lacks %q", w)
		}
	}

	// Byte-identical replays.
	if len(trees[1]) != len(trees[0]) {
		t.Errorf("second replay wrote %d files, first %d", len(trees[1]), len(trees[0]))
	}
	for name, a := range trees[0] {
		b, ok := trees[1][name]
		if !ok {
			t.Errorf("second replay lacks %s", name)
		} else if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two replays of the same command", name)
		}
	}

	// Regenerating over convgen's own output is allowed and gives the same
	// bytes again.
	r := runConvgen(t, "-shape", flagship, "-o", out, "-cache", cache)
	if r.code != 0 {
		t.Fatalf("regenerating over the package: exit code %d, stderr %q", r.code, r.stderr)
	}
	again := testfs.ReadTree(t, out)
	if len(again) != len(trees[1]) {
		t.Errorf("regenerated package has %d files, want %d", len(again), len(trees[1]))
	}
	for name, b := range trees[1] {
		if !bytes.Equal(again[name], b) {
			t.Errorf("%s changed when regenerated over itself", name)
		}
	}
}

// TestFlagSpellings checks that flags work with one dash or two, with the
// value separate or after "=".
func TestFlagSpellings(t *testing.T) {
	rec := fixture(t, h200, 132)
	tests := [][]string{
		{"-shape", flagship, "-o", "pkg", "-cache", "c.json"},
		{"--shape", flagship, "--out", "pkg", "--cache", "c.json"},
		{"-shape=" + flagship, "-out=pkg", "-cache=c.json", "-precision=FP32", "-layout=NCHW"},
		{"--shape=" + flagship, "-o=pkg", "--cache=c.json", "--precision", "fp32", "--pkg", "pkg"},
	}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			putRecords(t, "c.json", rec)
			r := runConvgen(t, args...)
			if r.code != 0 {
				t.Fatalf("exit code %d, stderr %q", r.code, r.stderr)
			}
			if fi, err := os.Stat(filepath.Join("pkg", "doc.go")); err != nil || fi.Size() == 0 {
				t.Errorf("pkg/doc.go not written: %v", err)
			}
		})
	}
}

func TestCorruptCache(t *testing.T) {
	for _, garbage := range []string{"{not json", `{"format": 99, "records": []}`, ""} {
		t.Run(garbage, func(t *testing.T) {
			dir := t.TempDir()
			cache := filepath.Join(dir, "cache.json")
			if err := os.WriteFile(cache, []byte(garbage), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "alexnet")
			r := runConvgen(t, "-shape", flagship, "-o", out, "-cache", cache)
			if r.code != 1 {
				t.Errorf("exit code %d, want 1 (stderr %q)", r.code, r.stderr)
			}
			oneErrorLine(t, r, "corrupt", cache)
			got, err := os.ReadFile(cache)
			if err != nil || string(got) != garbage {
				t.Errorf("the corrupt cache changed: %q, %v", got, err)
			}
			if names := listDir(t, dir); !slices.Equal(names, []string{"cache.json"}) {
				t.Errorf("directory holds %v, want only cache.json", names)
			}
		})
	}
}

func TestNoRecordOffline(t *testing.T) {
	stale := fixture(t, h200, 132)
	stale.KernelSHA256 = strings.Repeat("0", 64)
	staleFallback := fixture(t, h200, 132)
	staleFallback.Fallback = &tunecache.Fallback{Timing: staleFallback.Winner, KernelSHA256: strings.Repeat("1", 64),
		Kernel: staleFallback.Kernel, Launch: launch.Launch{Grid: staleFallback.Grid, Block: staleFallback.Block}, Arch: "compute_80", PTX: staleFallback.PTX}
	otherShape := fixture(t, h200, 132)
	otherShape.Key.Shape = strings.Replace(otherShape.Key.Shape, "N=256", "N=128", 1)
	const notApply = "records of this problem do not apply"
	tests := []struct {
		name  string
		recs  []tunecache.Record
		write bool // create the cache file (empty when recs is nil)
		args  []string
		why   []string // what the error must also say: why the problem's records were not used
	}{
		{"missing cache file", nil, false, nil, nil},
		{"empty cache", nil, true, nil, nil},
		{"stale winner", []tunecache.Record{stale}, true, nil, []string{notApply, "the winner's kernel source changed since it was tuned", "recorded 000000000000", "-retune"}},
		{"stale fallback", []tunecache.Record{staleFallback}, true, nil, []string{notApply, "the fallback's kernel source changed since it was tuned", "-retune"}},
		{"other shape", []tunecache.Record{otherShape}, true, nil, nil},
		{"other precision", []tunecache.Record{fixture(t, h200, 132)}, true, []string{"-precision", "tf32"}, nil},
		{"other arch", []tunecache.Record{fixture(t, h200, 132)}, true, []string{"-arch", "sm_80"}, []string{notApply, "arch sm_90", "-arch"}},
		{"other device", []tunecache.Record{fixture(t, h200, 132)}, true, []string{"-device", "NVIDIA A100"}, []string{notApply, `device "` + h200 + `"`, "-device"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cache := filepath.Join(dir, "cache.json")
			if tt.write {
				if len(tt.recs) == 0 {
					if err := os.WriteFile(cache, []byte("{\"format\": 2, \"records\": []}\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				putRecords(t, cache, tt.recs...)
			}
			before := listDir(t, dir)
			var cacheBefore []byte
			if tt.write {
				cacheBefore, _ = os.ReadFile(cache)
			}
			out := filepath.Join(dir, "alexnet")
			r := runConvgen(t, append([]string{"-shape", flagship, "-o", out, "-cache", cache}, tt.args...)...)
			if r.code != 3 {
				t.Errorf("exit code %d, want 3: no record to replay (stderr %q)", r.code, r.stderr)
			}
			oneErrorLine(t, r, append([]string{cache, "cuda", "no record"}, tt.why...)...)
			if tt.why == nil && strings.Contains(r.stderr, notApply) {
				t.Errorf("stderr %q explains records that are not of this problem", r.stderr)
			}
			if after := listDir(t, dir); !slices.Equal(after, before) {
				t.Errorf("directory changed from %v to %v", before, after)
			}
			if tt.write {
				if got, _ := os.ReadFile(cache); !bytes.Equal(got, cacheBefore) {
					t.Error("the cache file changed on a failed offline replay")
				}
			}
		})
	}
}

func TestSeveralDevices(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.json")
	putRecords(t, cache, fixture(t, h200, 132), fixture(t, "NVIDIA H100 80GB HBM3", 132))
	out := filepath.Join(dir, "alexnet")

	r := runConvgen(t, "-shape", flagship, "-o", out, "-cache", cache)
	if r.code != 2 {
		t.Errorf("exit code %d, want 2 (stderr %q)", r.code, r.stderr)
	}
	oneErrorLine(t, r, "-device", h200, "NVIDIA H100 80GB HBM3")
	if _, err := os.Stat(out); err == nil {
		t.Error("the output directory was written although the record was ambiguous")
	}

	r = runConvgen(t, "-shape", flagship, "-o", out, "-cache", cache, "-device", h200)
	if r.code != 0 {
		t.Fatalf("with -device: exit code %d, stderr %q", r.code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var data report.Data
	if err := json.Unmarshal(b, &data); err != nil {
		t.Fatal(err)
	}
	if data.Device.Name != h200 {
		t.Errorf("report.json device %q, want the record of %q", data.Device.Name, h200)
	}
	doc, err := os.ReadFile(filepath.Join(out, "doc.go"))
	if err != nil || !bytes.Contains(doc, []byte(h200)) || bytes.Contains(doc, []byte("H100")) {
		t.Errorf("doc.go does not say it was tuned on %s alone (%v)", h200, err)
	}
}

func TestRefusesUserDirectory(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.json")
	putRecords(t, cache, fixture(t, h200, 132))
	out := filepath.Join(dir, "mine")
	if err := os.MkdirAll(filepath.Join(out, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	userFiles := map[string]string{
		"notes.txt":  "my notes\n",
		"doc.go":     "// Package mine is mine.\npackage mine\n",
		"sub/keep.c": "int main(void) { return 0; }\n",
	}
	for name, content := range userFiles {
		if err := os.WriteFile(filepath.Join(out, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := listDir(t, dir)

	r := runConvgen(t, "-shape", flagship, "-o", out, "-cache", cache)
	if r.code != 1 {
		t.Errorf("exit code %d, want 1 (stderr %q)", r.code, r.stderr)
	}
	oneErrorLine(t, r, out, "did not generate")
	for name, content := range userFiles {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || string(got) != content {
			t.Errorf("%s: %q, %v; want it untouched", name, got, err)
		}
	}
	if after := listDir(t, dir); !slices.Equal(after, before) {
		t.Errorf("directory changed from %v to %v", before, after)
	}
}

// TestReplayTuningFlags: tuning flags given to a build that replays are
// named on stderr as having no effect, and the package is still written.
func TestReplayTuningFlags(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.json")
	putRecords(t, cache, fixture(t, h200, 132))
	r := runConvgen(t, "-shape", flagship, "-o", filepath.Join(dir, "alexnet"), "-cache", cache, "-trials", "5", "-time", "1m")
	if r.code != 0 {
		t.Fatalf("exit code %d, stderr %q", r.code, r.stderr)
	}
	if want := "convgen: -trials, -time: no effect without a GPU"; !strings.HasPrefix(r.stderr, want) {
		t.Errorf("stderr = %q, want it to start with %q", r.stderr, want)
	}
	if !strings.Contains(r.stdout, "wrote package alexnet") {
		t.Errorf("stdout lacks the written package:\n%s", r.stdout)
	}
}

// TestOutputCheckedFirst: a bad -o is refused before the cache is read (on
// a GPU: before tuning), here with no cache file at all.
func TestOutputCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "afile")
	if err := os.WriteFile(out, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runConvgen(t, "-shape", flagship, "-o", out, "-cache", filepath.Join(dir, "none.json"))
	if r.code != 1 {
		t.Errorf("exit code %d, want 1 (stderr %q)", r.code, r.stderr)
	}
	oneErrorLine(t, r, out, "not a directory")
	if strings.Contains(r.stderr, "no record") {
		t.Errorf("stderr %q: the cache was consulted before -o was checked", r.stderr)
	}
}

// TestMissingCacheFile: replaying from a cache file that does not exist
// says so.
func TestMissingCacheFile(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "typo.json")
	r := runConvgen(t, "-shape", flagship, "-o", filepath.Join(dir, "alexnet"), "-cache", cache)
	if r.code != 3 {
		t.Errorf("exit code %d, want 3 (no record to replay; stderr %q)", r.code, r.stderr)
	}
	oneErrorLine(t, r, cache+" (no such file)")
}

// TestCompileOnlyPinned: with -pin, -compile-only compiles just the pinned
// candidates and counts the others as not pinned; a pin that is no
// candidate is an error before anything is compiled.
func TestCompileOnlyPinned(t *testing.T) {
	if os.Getenv("CONVGEN_REQUIRE_NVRTC") != "1" {
		if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2"); err != nil {
			t.Skip("no NVRTC here (CI sets CONVGEN_REQUIRE_NVRTC=1)")
		}
	}
	const shapeText = "N=2,C=3,H=32,W=32,K=16,R=3,S=3,pad=1"
	shape, err := problem.ParseShape(shapeText)
	if err != nil {
		t.Fatal(err)
	}
	cands, err := kernels.Enumerate(problem.Problem{Shape: shape, Precision: problem.TF32, Layout: problem.NCHW}, kernels.DefaultLimits(80))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, c := range cands {
		if c.Rejected == "" {
			kept = append(kept, c.ID())
		}
	}
	if len(kept) < 3 {
		t.Fatalf("%d kept candidates, want at least 3", len(kept))
	}
	args := []string{"-compile-only", "-q", "-shape", shapeText, "-precision", "tf32", "-arch", "sm_80", "-jobs", "2"}
	var stdout, stderr bytes.Buffer
	src := filepath.Join(t.TempDir(), "src")
	code := run(context.Background(), append(args, "--pin", kept[0], "--pin", kept[len(kept)-1], "-source-dir", src), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	want := fmt.Sprintf(": 2 compiled, 0 failed, %d rejected statically, %d not pinned", len(cands)-len(kept), len(kept)-2)
	if !strings.Contains(stdout.String(), want) || !strings.Contains(stdout.String(), "wrote 2 CUDA sources to "+src) {
		t.Errorf("stdout %q: want %q and the two sources written", stdout.String(), want)
	}
	// -source-dir: one file per compiled candidate, its config in the header.
	files, _ := filepath.Glob(filepath.Join(src, "*.cu"))
	if len(files) != 2 {
		t.Fatalf("-source-dir holds %d .cu files, want 2", len(files))
	}
	var configs []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{kept[0], kept[len(kept)-1]} {
			if strings.Contains(string(b), "// Config: "+id[strings.Index(id, "/")+1:]+"\n") {
				configs = append(configs, id)
			}
		}
	}
	if len(configs) != 2 || configs[0] == configs[1] {
		t.Errorf("sources carry the configs %q, want one file each for %q and %q", configs, kept[0], kept[len(kept)-1])
	}

	stdout.Reset()
	stderr.Reset()
	code = run(context.Background(), append(args, "--pin", "mma/NoSuchKnob=1"), &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), `"mma/NoSuchKnob=1" is no candidate`) {
		t.Errorf("bad pin: exit %d, stderr %q: want exit 2 (a bad command line) and an error naming the pin", code, stderr.String())
	}
	if strings.Contains(stdout.String(), "compiled") {
		t.Errorf("bad pin: stdout %q: nothing should be compiled", stdout.String())
	}
}

// TestCompileOnly: -compile-only compiles the search space on the CPU (no
// GPU, no -o), reports the counts and writes nothing. By default the space
// is the shape's wgrad one in tf32 (4 kernels); under the full sweep
// (CONVGEN_FULL_SWEEP=1, scripts/test -full) its forward one (80 kernels
// of mma, igemm and generic, which the kernels package's tests sample).
func TestCompileOnly(t *testing.T) {
	if os.Getenv("CONVGEN_REQUIRE_NVRTC") != "1" {
		if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2"); err != nil {
			t.Skip("no NVRTC here (CI sets CONVGEN_REQUIRE_NVRTC=1)")
		}
	}
	dir := t.TempDir()
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	args := []string{"-compile-only", "-q", "-shape", "N=2,C=3,H=32,W=32,K=16,R=3,S=3,pad=1",
		"-precision", "tf32", "-arch", "sm_80", "-jobs", "2"}
	if os.Getenv("CONVGEN_FULL_SWEEP") != "1" {
		args = append(args, "-op", "wgrad")
	}
	code := run(context.Background(), args, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "for sm_80:") || !strings.Contains(out, " 0 failed") || strings.Contains(out, " 0 compiled") {
		t.Errorf("stdout %q: want a count of compiled kernels for sm_80 and no failures", out)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("-compile-only wrote %d entries", len(entries))
	}
}

// TestCommandPinned: the command recorded for a pinned run (whose record is
// not cached) repeats its pins and -retune, so that its report says how it
// was made.
func TestCommandPinned(t *testing.T) {
	c, err := parseFlags([]string{"-shape", flagship, "-o", "x", "-pin", "direct/A=1", "-pin", "direct/A=2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.command(), "-retune -pin direct/A=1 -pin direct/A=2"; !strings.HasSuffix(got, want) {
		t.Errorf("command() = %q, want it to end with %q", got, want)
	}
	c.pin = nil
	if got := c.command(); strings.Contains(got, "-pin") || strings.Contains(got, "-retune") {
		t.Errorf("command() without pins = %q, want neither -pin nor -retune", got)
	}
}

// TestQuiet: -q prints nothing on success, not even the warning about
// tuning flags without a GPU, and a failure still says why on stderr with
// the usual exit status.
func TestQuiet(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.json")
	putRecords(t, cache, fixture(t, h200, 132))
	for _, q := range []string{"-q", "--quiet"} {
		r := runConvgen(t, q, "-shape", flagship, "-o", filepath.Join(dir, "alexnet"), "-cache", cache, "-trials", "5")
		if r.code != 0 || r.stdout != "" || r.stderr != "" {
			t.Errorf("%s: exit code %d, stdout %q, stderr %q: want 0 and nothing printed", q, r.code, r.stdout, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "alexnet", "doc.go")); err != nil {
			t.Errorf("%s: the package was not written: %v", q, err)
		}
	}
	r := runConvgen(t, "-q", "-shape", flagship, "-o", filepath.Join(dir, "other"), "-cache", filepath.Join(dir, "none.json"))
	if r.code != 3 || r.stdout != "" {
		t.Errorf("failing -q run: exit code %d, stdout %q: want 3 (no record) and nothing on stdout", r.code, r.stdout)
	}
	oneErrorLine(t, r, "no record")
}
