package gen

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"github.com/convgen/convgen/epilogue"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/testfs"
	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/problem"
	"github.com/dave/jennifer/jen"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// alexNet is the golden binding: the AlexNet first layer, fp32, NCHW, with
// fake CUBIN and PTX. Its shared memory is above 48 KiB, so that the cgo
// shim is generated too.
func alexNet(t testing.TB) Binding {
	t.Helper()
	sh, err := problem.ParseShape("N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2")
	if err != nil {
		t.Fatal(err)
	}
	return Binding{
		Package: "alexnet",
		Problem: problem.Problem{Shape: sh, Precision: problem.FP32, Layout: problem.NCHW},
		Kernel:  "convgen_direct_fwd",
		Launch:  launch.Launch{Grid: [3]int{95, 1, 256}, Block: [3]int{256, 1, 1}, SharedBytes: 73728},
		Arch:    "sm_90",
		CUBIN:   []byte("\x7fELF\x02\x01\x01fake cubin\x00\xff"),
		PTX:     "//\n// fake PTX for the golden test\n//\n.version 7.8\n.target sm_90\n.address_size 64\n",
		Command: "convgen -shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -precision fp32 -layout nchw -pkg alexnet -o ./alexnet",
		Summary: "tuned on NVIDIA H200 (sm_90): median 1.620 ms, rel. error 2.1e-07",
	}
}

// oddShape is a second binding that takes the other branches: NHWC, no
// bias, groups, dilation, unequal strides and pads, TF32, and shared memory
// below 48 KiB (no cgo shim).
func oddShape(t testing.TB) Binding {
	t.Helper()
	sh, err := problem.ParseShape("N=3,C=8,H=17,W=19,K=12,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=3,dilation=2,groups=4,bias=false")
	if err != nil {
		t.Fatal(err)
	}
	return Binding{
		Package: "odd",
		Problem: problem.Problem{Shape: sh, Precision: problem.TF32, Layout: problem.NHWC},
		Kernel:  "odd_kernel",
		Launch:  launch.Launch{Grid: [3]int{7, 2, 1}, Block: [3]int{32, 4, 1}, SharedBytes: 1024},
		Arch:    "sm_90a",
		CUBIN:   []byte{0x7f, 'E', 'L', 'F'},
		PTX:     "",
		Command: "convgen -shape odd -o ./odd",
		Summary: "not tuned: test binding",
	}
}

// fp16NHWC is the golden 2-byte binding: alexNet in fp16 and NHWC, an
// sm_90a winner with its own fake CUBIN and shared memory below 48 KiB,
// and a fallback (above 48 KiB, so the cgo shim is generated for it).
func fp16NHWC(t testing.TB) Binding {
	t.Helper()
	b := alexNet(t)
	b.Package = "fp16nhwc"
	b.Problem.Precision, b.Problem.Layout = problem.FP16, problem.NHWC
	b.Kernel = "convgen_wgmmahalf_fp16_golden"
	b.Arch = "sm_90a"
	b.Grid = [3]int{448, 1, 1}
	b.SharedBytes = 40960
	b.CUBIN = []byte("\x7fELF\x02\x01\x01fake fp16 cubin\x00\xff")
	b.Fallback = &Fallback{Kernel: "convgen_mmahalf_fp16_golden",
		Launch: launch.Launch{Grid: [3]int{196, 2, 1}, Block: [3]int{256, 1, 1}, SharedBytes: 65536}, Arch: "compute_80", PTX: "//\n// fake fallback PTX for the golden test\n//\n.version 7.8\n.target sm_80\n.address_size 64\n",
		Summary: "mmahalf/TileK=48: median 0.400 ms, rel. error 2.0e-04 on the tuning GPU"}
	b.Command = "convgen -shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -precision fp16 -layout nhwc -pkg fp16nhwc -o ./fp16nhwc"
	b.Summary = "not tuned: golden test binding"
	return b
}

// oddBF16 is oddShape in bf16 and NCHW: the other 2-byte type, without bias.
func oddBF16(t testing.TB) Binding {
	t.Helper()
	b := oddShape(t)
	b.Package = "oddbf16"
	b.Problem.Precision = problem.BF16
	b.Problem.Layout = problem.NCHW
	b.Command = "convgen -shape odd -precision bf16 -layout nchw -o ./oddbf16"
	return b
}

// fusedFP16 is fp16NHWC with an epilogue chain that reads every array and
// has every kind of parameter: its package takes ForwardEpilogue.
func fusedFP16(t testing.TB) Binding {
	t.Helper()
	b := fp16NHWC(t)
	b.Package = "fused"
	c, err := epilogue.Parse("scale_shift,residual(0.5),leaky_relu(0.1),clamp(-1,6),gelu")
	if err != nil {
		t.Fatal(err)
	}
	b.Problem.Epilogue = c
	b.Command += " -epilogue scale_shift,residual(0.5),leaky_relu(0.1),clamp(-1,6),gelu"
	return b
}

// dgradFP16 is fp16NHWC's data gradient (op dgrad): its package takes
// BackwardData.
func dgradFP16(t testing.TB) Binding {
	t.Helper()
	b := fp16NHWC(t)
	b.Package = "dgradfp16"
	b.Problem.Op = problem.OpDgrad
	b.Kernel, b.Fallback.Kernel = "convgen_dgrad_golden", "convgen_dgrad_fallback_golden"
	b.Command = "convgen -shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -precision fp16 -layout nhwc -op dgrad -pkg dgradfp16 -o ./dgradfp16"
	return b
}

// wgradTF32 is alexNet's filter and bias gradient (op wgrad) in TF32: its
// package takes BackwardFilter with an FP32 dBias.
func wgradTF32(t testing.TB) Binding {
	t.Helper()
	b := alexNet(t)
	b.Package = "wgradtf32"
	b.Problem.Precision, b.Problem.Op = problem.TF32, problem.OpWgrad
	b.Kernel = "convgen_wgrad_golden"
	b.Command = "convgen -shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -precision tf32 -layout nchw -op wgrad -pkg wgradtf32 -o ./wgradtf32"
	return b
}

// wgradOdd is oddShape's filter gradient: groups, no bias (no dBias), no
// PTX.
func wgradOdd(t testing.TB) Binding {
	t.Helper()
	b := oddShape(t)
	b.Package = "wgradodd"
	b.Problem.Op = problem.OpWgrad
	b.Command = "convgen -shape odd -op wgrad -o ./wgradodd"
	return b
}

// allBindings lists every test binding.
func allBindings(t testing.TB) []Binding {
	return []Binding{alexNet(t), oddShape(t), fp16NHWC(t), oddBF16(t), fusedFP16(t), dgradFP16(t), wgradTF32(t), wgradOdd(t), outFP32(t)}
}

func files(t *testing.T, b Binding) map[string][]byte {
	t.Helper()
	fs, err := Files(b)
	if err != nil {
		t.Fatalf("Files: %v", err)
	}
	return fs
}

func sortedNames(files map[string][]byte) []string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		b    Binding
		want []string
	}{
		{alexNet(t), []string{"doc.go", "kernel.go", "kernel.ptx", "kernel_cuda_test.go", "kernel_sm_90.cubin", "shape.go", "shape_test.go"}},
		{fp16NHWC(t), []string{"doc.go", "kernel.go", "kernel.ptx", "kernel_cuda_test.go", "kernel_sm_90a.cubin", "shape.go", "shape_test.go"}},
		{fusedFP16(t), []string{"doc.go", "kernel.go", "kernel.ptx", "kernel_cuda_test.go", "kernel_sm_90a.cubin", "shape.go", "shape_test.go"}},
		{dgradFP16(t), []string{"doc.go", "kernel.go", "kernel.ptx", "kernel_cuda_test.go", "kernel_sm_90a.cubin", "shape.go", "shape_test.go"}},
		{wgradTF32(t), []string{"doc.go", "kernel.go", "kernel.ptx", "kernel_cuda_test.go", "kernel_sm_90.cubin", "shape.go", "shape_test.go"}},
		{outFP32(t), []string{"doc.go", "kernel.go", "kernel.ptx", "kernel_cuda_test.go", "kernel_sm_90a.cubin", "shape.go", "shape_test.go"}},
	} {
		t.Run(tc.b.Package, func(t *testing.T) { golden(t, tc.b.Package, files(t, tc.b), tc.want) })
	}
}

// golden compares the files got of the package name with
// testdata/golden/<name>, or rewrites them there with -update; want are
// the file names expected.
func golden(t *testing.T, name string, got map[string][]byte, want []string) {
	dir := filepath.Join("testdata", "golden", name)
	if names := sortedNames(got); !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
	if *update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, src := range got {
			if err := os.WriteFile(filepath.Join(dir, name+".golden"), src, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, src := range got {
		golden, err := os.ReadFile(filepath.Join(dir, name+".golden"))
		if err != nil {
			t.Errorf("%v (run go test ./gen -run TestGolden -update to create it)", err)
			continue
		}
		if !bytes.Equal(src, golden) {
			t.Errorf("%s differs from %s.golden (run with -update if the change is intended):\n%s", name, name, firstDiff(src, golden))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".golden"); !ok || got[name] == nil {
			t.Errorf("stale golden file %s: no generated file matches it (run with -update)", e.Name())
		}
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("line %d:\n got: %q\nwant: %q", i+1, gl, wl)
		}
	}
	return "(no line differs)"
}

func TestHeader(t *testing.T) {
	header := regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)
	tags := map[string]string{
		"doc.go":              "",
		"shape.go":            "",
		"kernel.go":           "",
		"kernel_cuda_test.go": "//go:build cuda",
		"shape_test.go":       "",
	}
	for _, b := range allBindings(t) {
		for name, src := range files(t, b) {
			if !strings.HasSuffix(name, ".go") {
				continue
			}
			lines := strings.SplitN(string(src), "\n", 3)
			if !header.MatchString(lines[0]) || lines[0] != Header {
				t.Errorf("%s/%s: first line %q is not the generated header", b.Package, name, lines[0])
			}
			if want := "// Regenerate with: " + b.Command; lines[1] != want {
				t.Errorf("%s/%s: second line %q, want %q", b.Package, name, lines[1], want)
			}
			tag, ok := tags[name]
			if !ok {
				t.Errorf("%s/%s: unexpected file", b.Package, name)
			}
			if got := buildLine(src); got != tag {
				t.Errorf("%s/%s: build constraint %q, want %q", b.Package, name, got, tag)
			}
			if formatted, err := format.Source(src); err != nil || !bytes.Equal(formatted, src) {
				t.Errorf("%s/%s: not gofmt-formatted (err %v)", b.Package, name, err)
			}
		}
	}
}

// buildLine returns the //go:build line of a Go file, if any.
func buildLine(src []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "package ") {
			break
		}
		if strings.HasPrefix(line, "//go:build ") {
			return line
		}
	}
	return ""
}

func TestDeterministic(t *testing.T) {
	for _, mk := range []func(testing.TB) Binding{alexNet, oddShape, fp16NHWC, oddBF16} {
		a, b := files(t, mk(t)), files(t, mk(t))
		if names := sortedNames(a); !slices.Equal(names, sortedNames(b)) {
			t.Fatalf("file sets differ: %v vs %v", names, sortedNames(b))
		}
		for name := range a {
			if !bytes.Equal(a[name], b[name]) {
				t.Errorf("%s differs between two calls:\n%s", name, firstDiff(a[name], b[name]))
			}
		}
	}
}

// TestGoLines checks the size of a generated package: at most 200 lines of
// Go, embedded images excluded, for every test binding.
func TestGoLines(t *testing.T) {
	for _, b := range allBindings(t) {
		lines := 0
		for name, src := range files(t, b) {
			if strings.HasSuffix(name, ".go") {
				lines += bytes.Count(src, []byte("\n"))
			}
		}
		if lines > 200 {
			t.Errorf("%s: %d lines of Go, want at most 200", b.Package, lines)
		}
	}
}

// TestFilesGuardAndSpec checks what ties a generated package to convrt: the
// version guard, the spec's images and the shared types.
func TestFilesGuardAndSpec(t *testing.T) {
	src := string(files(t, fp16NHWC(t))[kernelFile])
	for _, want := range []string{
		"const _ = convrt.SupportVersion1\n",
		"type Kernel = convrt.Kernel\n",
		"var _ convrt.Conv = (*Kernel)(nil)\n",
		"//go:embed kernel_sm_90a.cubin\nvar cubin string\n",
		"//go:embed kernel.ptx\nvar ptx string\n",
		`CUBIN:     convrt.Image{Code: cubin, CC: 90, Launch: convrt.Launch{Kernel: "convgen_wgmmahalf_fp16_golden", Grid: [3]int{448, 1, 1}, Block: [3]int{256, 1, 1}, SharedBytes: 40960}},`,
		`PTX:       convrt.Image{Code: ptx, CC: 80, Launch: convrt.Launch{Kernel: "convgen_mmahalf_fp16_golden", Grid: [3]int{196, 2, 1}, Block: [3]int{256, 1, 1}, SharedBytes: 65536}},`,
		"return convrt.Load(&spec)",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("%s lacks %q", kernelFile, want)
		}
	}
}

func TestFilesRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Binding)
		want   string
	}{
		{"unknown precision", func(b *Binding) { b.Problem.Precision = "fp8" }, `precision "fp8"`},
		{"layout", func(b *Binding) { b.Problem.Layout = "chwn" }, `layout "chwn"`},
		{"package", func(b *Binding) { b.Package = "alex-net" }, `package name "alex-net"`},
		{"package main", func(b *Binding) { b.Package = "main" }, `package name "main"`},
		{"kernel", func(b *Binding) { b.Kernel = "9conv" }, `kernel name "9conv"`},
		{"arch", func(b *Binding) { b.Arch = "compute_90" }, `arch "compute_90"`},
		{"grid", func(b *Binding) { b.Grid[1] = 0 }, "every dimension must be positive"},
		{"block", func(b *Binding) { b.Block = [3]int{64, 32, 1} }, "at most 1024"},
		{"cubin", func(b *Binding) { b.CUBIN = nil }, "no CUBIN"},
		{"command", func(b *Binding) { b.Command = "convgen \\\n -o x" }, "command"},
		{"summary", func(b *Binding) { b.Summary = "" }, "summary is empty"},
		{"shape", func(b *Binding) { b.Problem.Shape.StrideH = 0 }, "shape: stride_h=0"},
		{"fallback kernel", func(b *Binding) { b.Fallback.Kernel = "a-b" }, `fallback: kernel name "a-b"`},
		{"fallback block", func(b *Binding) { b.Fallback.Block = [3]int{2048, 1, 1} }, "fallback: block"},
		{"fallback arch", func(b *Binding) { b.Fallback.Arch = "sm_80" }, `fallback arch "sm_80"`},
		{"fallback ptx", func(b *Binding) { b.Fallback.PTX = " " }, "fallback has no PTX"},
		{"fallback summary", func(b *Binding) { b.Fallback.Summary = "a\nb" }, "fallback summary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fp16NHWC(t)
			tc.change(&b)
			fs, err := Files(b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Files: %d files, error %v, want one containing %q", len(fs), err, tc.want)
			}
		})
	}
}

// TestCompile builds the generated packages (fp32, tf32, fp16 and bf16) in
// a throwaway module: always without tags, and with the cuda tag when the
// CUDA headers are at hand.
func TestCompile(t *testing.T) {
	compile := packageCompiler(t)
	for _, b := range allBindings(t) {
		t.Run(b.Package, func(t *testing.T) { compile(t, b.Package, files(t, b)) })
	}
}

// packageCompiler skips a short test; otherwise it returns compilePackage
// with this module's go.sum and the CUDA headers' environment, which
// CONVGEN_REQUIRE_CUDA_HEADERS=1 requires.
func packageCompiler(t *testing.T) func(t *testing.T, name string, pkgFiles map[string][]byte) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gosum := mainGoSum(t)
	cudaEnv, cudaWhy := testfs.CUDABuildEnv()
	if cudaEnv == nil && os.Getenv("CONVGEN_REQUIRE_CUDA_HEADERS") == "1" {
		t.Fatalf("CONVGEN_REQUIRE_CUDA_HEADERS=1 but %s", cudaWhy)
	}
	return func(t *testing.T, name string, pkgFiles map[string][]byte) {
		t.Helper()
		compilePackage(t, gosum, cudaEnv, cudaWhy, name, pkgFiles)
	}
}

// compilePackage writes the package pkg of files into a throwaway module
// and vets and tests it without tags, and with the cuda tag vets it and
// compiles its tests when cudaEnv (the CUDA headers' environment) is set;
// cudaWhy says why it is not.
func compilePackage(t *testing.T, gosum []byte, cudaEnv []string, cudaWhy, name string, pkgFiles map[string][]byte) {
	t.Helper()
	root := t.TempDir()
	gomod := "module example.com/gentest\n\ngo 1.26\n\nrequire (\n\tgithub.com/convgen/convgen v0.0.0\n\tgorgonia.org/cu v0.9.6\n)\n\nreplace github.com/convgen/convgen => " + moduleRoot(t) + "\n"
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.sum"), gosum, 0o644); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(root, name)
	if err := Write(pkg, pkgFiles); err != nil {
		t.Fatal(err)
	}
	base := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")

	// Without the tag nothing needs cgo, CUDA or gorgonia.org/cu.
	plain := append(slices.Clone(base), "CGO_ENABLED=0")
	goCmd(t, root, plain, "vet", "./...")
	goCmd(t, root, plain, "test", "./...")

	if cudaEnv == nil {
		t.Logf("skipping the cuda build: %s", cudaWhy)
		return
	}
	cuda := append(slices.Clone(base), cudaEnv...)
	goCmd(t, root, cuda, "vet", "-tags", "cuda", "./...")
	goCmd(t, pkg, cuda, "test", "-tags", "cuda", "-c", "-o", os.DevNull)
}

// moduleRoot returns the directory of convgen's go.mod, which the throwaway
// module replaces github.com/convgen/convgen with (for convrt).
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// mainGoSum returns convgen's go.sum, which holds every checksum the
// throwaway module needs to build gorgonia.org/cu offline.
func mainGoSum(t *testing.T) []byte {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("go env GOMOD: not inside convgen's module")
	}
	sum, err := os.ReadFile(filepath.Join(filepath.Dir(gomod), "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	var keep []byte
	for line := range strings.Lines(string(sum)) {
		if strings.HasPrefix(line, "github.com/convgen/") {
			continue
		}
		keep = append(keep, line...)
	}
	return keep
}

func goCmd(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

// listDir returns the names in dir, sorted.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}

// readDir returns every file in dir: name → content.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	got := map[string][]byte{}
	for _, name := range listDir(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got[name] = b
	}
	return got
}

func sameFiles(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	got := readDir(t, dir)
	if m, ok := got[ManifestFile]; ok { // Write's list of the files it wrote
		if !bytes.Equal(m, makeManifest(sortedNames(want), want)) {
			t.Errorf("%s/%s = %q, want the list of %v", dir, ManifestFile, m, sortedNames(want))
		}
		delete(got, ManifestFile)
	}
	if !slices.Equal(sortedNames(got), sortedNames(want)) {
		t.Fatalf("%s holds %v, want %v", dir, sortedNames(got), sortedNames(want))
	}
	for name := range want {
		if !bytes.Equal(got[name], want[name]) {
			t.Errorf("%s/%s: content differs", dir, name)
		}
	}
}

// onlyEntry checks that parent holds nothing but dir: no temporary or old
// directories were left behind.
func onlyEntry(t *testing.T, parent, dir string) {
	t.Helper()
	if names := listDir(t, parent); !slices.Equal(names, []string{dir}) {
		t.Errorf("%s holds %v, want only %s", parent, names, dir)
	}
}

func TestWriteCreatesAndReplaces(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "alexnet")
	first := files(t, alexNet(t))
	if err := Write(dir, first); err != nil {
		t.Fatalf("first Write: %v", err)
	}
	sameFiles(t, dir, first)
	onlyEntry(t, parent, "alexnet")

	// A file of the older generation (its CUBIN for sm_90) disappears; a
	// user's file would be refused (write_owner_test.go).
	b := alexNet(t)
	b.Arch, b.Summary = "sm_80", "tuned on NVIDIA A100 (sm_80)"
	second := files(t, b)
	if err := Write(dir, second); err != nil {
		t.Fatalf("second Write: %v", err)
	}
	sameFiles(t, dir, second)
	onlyEntry(t, parent, "alexnet")

	// An empty directory may be filled.
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(empty, first); err != nil {
		t.Fatalf("Write into an empty directory: %v", err)
	}
	sameFiles(t, empty, first)
}

func TestWriteRefusesUserDir(t *testing.T) {
	for name, user := range map[string]map[string][]byte{
		"no doc.go":        {"main.go": []byte("package main\n\nfunc main() {}\n")},
		"user doc.go":      {"doc.go": []byte("// Package mine is mine.\npackage mine\n")},
		"header not first": {"doc.go": []byte("// Copyright me.\n" + Header + "\npackage mine\n")},
	} {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "mine")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for n, b := range user {
				if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := Write(dir, files(t, alexNet(t)))
			if err == nil || !strings.Contains(err.Error(), "refusing") {
				t.Fatalf("Write over a user directory: error %v, want a refusal", err)
			}
			sameFiles(t, dir, user)
			onlyEntry(t, parent, "mine")
		})
	}
}

func TestWriteRefusesFile(t *testing.T) {
	parent := t.TempDir()
	path := filepath.Join(parent, "alexnet")
	if err := os.WriteFile(path, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, files(t, alexNet(t))); err == nil {
		t.Fatal("Write replaced a plain file")
	}
	if b, _ := os.ReadFile(path); string(b) != "mine" {
		t.Errorf("the file now holds %q", b)
	}
	onlyEntry(t, parent, "alexnet")
}

func TestWriteFailureKeepsOld(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "alexnet")
	old := files(t, alexNet(t))
	if err := Write(dir, old); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]func(map[string][]byte){
		"path separator": func(fs map[string][]byte) { fs["sub/evil.go"] = []byte("package x\n") },
		"dot dot":        func(fs map[string][]byte) { fs[".."] = []byte("x") },
		// A valid name the file system rejects: the failure comes after the
		// temporary directory was made and partly filled.
		"name too long": func(fs map[string][]byte) { fs[strings.Repeat("z", 300)+".go"] = []byte("package x\n") },
		"no doc.go":     func(fs map[string][]byte) { delete(fs, docFile) },
	} {
		t.Run(name, func(t *testing.T) {
			fs := files(t, oddShape(t))
			bad(fs)
			if err := Write(dir, fs); err == nil {
				t.Fatal("Write succeeded")
			} else {
				t.Log(err)
			}
			sameFiles(t, dir, old)
			onlyEntry(t, parent, "alexnet")
		})
	}
}

func TestWriteUnwritableParent(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "alexnet")
	old := files(t, alexNet(t))
	if err := Write(dir, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(parent, 0o755)
	if err := Write(dir, files(t, oddShape(t))); err == nil {
		t.Fatal("Write succeeded under a read-only parent")
	}
	sameFiles(t, dir, old)
	onlyEntry(t, parent, "alexnet")
}

func TestRenderErrorNumbersSource(t *testing.T) {
	f := jen.NewFile("broken")
	f.Func().Id("f").Params().Block(jen.Op("}"))
	_, err := render(f)
	if err == nil || !strings.Contains(err.Error(), "   1  package broken") {
		t.Fatalf("render: error %v, want one with the numbered source", err)
	}
}

// TestFilesArchSpecificEmbedsNoPTX: PTX built for an architecture-specific
// target (compute_90a) runs on no other GPU, so none is embedded and Load
// says the package needs the tuned architecture.
func TestFilesArchSpecificEmbedsNoPTX(t *testing.T) {
	b := oddShape(t)
	b.Arch, b.PTX = "sm_90a", "// PTX for compute_90a"
	fs := files(t, b)
	if ptx := fs[ptxFile]; len(ptx) != 0 {
		t.Errorf("%s holds %d bytes for arch %s, want none", ptxFile, len(ptx), b.Arch)
	}
	if src := string(fs[kernelFile]); !strings.Contains(src, "It needs a GPU of TunedArch") || !strings.Contains(src, "PTX:       convrt.Image{},") {
		t.Errorf("%s does not say it needs the tuned arch, or has a PTX image", kernelFile)
	}
	b.Arch = "sm_90"
	if ptx := files(t, b)[ptxFile]; string(ptx) != b.PTX {
		t.Errorf("%s = %q for arch sm_90, want the binding's PTX", ptxFile, ptx)
	}
}
