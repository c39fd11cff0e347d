package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/testfs"
)

// needNVRTC skips a test where NVRTC is missing, unless CI requires it.
func needNVRTC(t *testing.T) {
	t.Helper()
	if os.Getenv("CONVGEN_REQUIRE_NVRTC") != "1" {
		if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2"); err != nil {
			t.Skip("no NVRTC here (CI sets CONVGEN_REQUIRE_NVRTC=1)")
		}
	}
}

// TestUntuned (issue 21): without a GPU and without a record, -untuned
// writes a package of the default configuration as PTX for compute_80, no
// CUBIN, marked untuned in its doc and report; a new module that uses the
// convgen module through a replace directive builds and vets it with and
// without the cuda tag. Without -untuned the same run fails, naming the
// flag.
func TestUntuned(t *testing.T) {
	needNVRTC(t)
	root := t.TempDir()
	gosum, err := os.ReadFile(filepath.Join(moduleDir(t), "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/untuned\n\ngo 1.25\n\nrequire (\n\tgithub.com/convgen/convgen v0.0.0\n\tgorgonia.org/cu v0.9.6\n)\n\nreplace github.com/convgen/convgen => " + moduleDir(t) + "\n"
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": gosum} {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(root)
	for _, tc := range []struct{ pkg, shape, precision, layout, family string }{
		{"convhalf", "N=2,C=16,H=20,W=20,K=32,R=3,S=3,pad=1", "fp16", "nhwc", "igemm/"},
		{"convgroups", "N=2,C=8,H=9,W=11,K=8,R=3,S=3,groups=2", "fp32", "nchw", "generic/"},
	} {
		args := []string{"-shape", tc.shape, "-precision", tc.precision, "-layout", tc.layout, "-o", tc.pkg, "-cache", "convgen-cache.json"}
		if r := runConvgen(t, args...); r.code != 3 || !strings.Contains(r.stderr, "-untuned") {
			t.Errorf("%s without -untuned: exit %d, stderr %q: want 3 (no record) and a hint at -untuned", tc.pkg, r.code, r.stderr)
		}
		r := runConvgen(t, append(args, "-untuned")...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", tc.pkg, r.code, r.stderr)
		}
		files := testfs.ReadTree(t, tc.pkg)
		if slices.ContainsFunc(slices.Collect(maps.Keys(files)), func(n string) bool { return strings.HasSuffix(n, ".cubin") }) {
			t.Errorf("%s: an untuned package embeds a CUBIN", tc.pkg)
		}
		if !strings.Contains(string(files["kernel.ptx"]), ".target sm_80") {
			t.Errorf("%s: kernel.ptx is not PTX for sm_80:\n%.200s", tc.pkg, files["kernel.ptx"])
		}
		if doc := string(files["doc.go"]); !strings.Contains(doc, "UNTUNED:") || !strings.Contains(doc, tc.family) {
			t.Errorf("%s: doc.go is not marked untuned or does not name the %s default", tc.pkg, tc.family)
		}
		if md := string(files["REPORT.md"]); !strings.Contains(md, "untuned: no measurement") {
			t.Errorf("%s: REPORT.md is not marked untuned:\n%s", tc.pkg, md)
		}
		if !strings.Contains(string(files["doc.go"]), "-untuned") {
			t.Errorf("%s: the regenerate command lacks -untuned", tc.pkg)
		}
	}
	base := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	run := func(env []string, args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	plain := append(slices.Clone(base), "CGO_ENABLED=0")
	run(plain, "build", "./...")
	run(plain, "vet", "./...")
	run(plain, "test", "./...") // shape_test.go: the spec against the constants
	cuda, why := testfs.CUDABuildEnv()
	if cuda == nil {
		if os.Getenv("CONVGEN_REQUIRE_CUDA_HEADERS") == "1" {
			t.Fatalf("CONVGEN_REQUIRE_CUDA_HEADERS=1 but %s", why)
		}
		t.Skipf("the cuda build: %s", why)
	}
	cudaBase := append(slices.Clone(base), cuda...)
	run(cudaBase, "build", "-tags", "cuda", "./...")
	run(cudaBase, "vet", "-tags", "cuda", "./...")
	run(cudaBase, "test", "-tags", "cuda", "-c", "-o", os.DevNull, "./convhalf")
}

// moduleDir is the directory of convgen's go.mod.
func moduleDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}
