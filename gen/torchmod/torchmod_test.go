package torchmod

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/gen"
	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/problem"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const alexShape = "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2"

func shape(t testing.TB, spec string) problem.Shape {
	t.Helper()
	sh, err := problem.ParseShape(spec)
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

// tf32NCHW is a tuned binding with a fallback: the flagship's tf32 record
// with fake images.
func tf32NCHW(t testing.TB) gen.Binding {
	return gen.Binding{
		Package: "tf32",
		Problem: problem.Problem{Shape: shape(t, alexShape), Precision: problem.TF32, Layout: problem.NCHW},
		Kernel:  "convgen_wgmmarow_tf32_golden",
		Launch:  launch.Launch{Grid: [3]int{132, 1, 1}, Block: [3]int{512, 1, 1}, SharedBytes: 230464},
		Arch:    "sm_90a",
		CUBIN:   []byte("\x7fELF\x02\x01\x01fake tf32 cubin\x00\xff"),
		PTX:     "// the winner's PTX: not embedded, sm_90a-specific\n",
		Command: "convgen -shape " + alexShape + " -precision tf32 -layout nchw -pkg tf32 -o tf32 -torch tf32torch",
		Summary: "tuned on NVIDIA H200 (sm_90a): wgmmarow, median 0.251 ms, rel. error 3.9e-04",
		Fallback: &gen.Fallback{Kernel: "convgen_mma_tf32_golden", Arch: "compute_80",
			Launch:  launch.Launch{Grid: [3]int{1568, 2, 1}, Block: [3]int{64, 1, 1}, SharedBytes: 99360},
			PTX:     "//\n// fake fallback PTX\n//\n.version 7.8\n.target sm_80\n.address_size 64\n",
			Summary: "mma/TileK=48, median 1.212 ms, rel. error 2.8e-04 on NVIDIA H200"},
	}
}

// oddFP16NHWC takes the other branches: NHWC, fp16, no bias, groups,
// dilation, unequal strides and pads, an sm_90 winner whose own PTX is
// embedded, shared memory below 48 KiB.
func oddFP16NHWC(t testing.TB) gen.Binding {
	return gen.Binding{
		Package: "odd",
		Problem: problem.Problem{Shape: shape(t, "N=3,C=8,H=17,W=19,K=12,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=3,dilation=2,groups=4,bias=false"),
			Precision: problem.FP16, Layout: problem.NHWC},
		Kernel:  "odd_kernel",
		Launch:  launch.Launch{Grid: [3]int{7, 2, 1}, Block: [3]int{32, 4, 1}, SharedBytes: 1024},
		Arch:    "sm_90",
		CUBIN:   []byte{0x7f, 'E', 'L', 'F'},
		PTX:     "// odd PTX\n.version 7.8\n.target sm_90\n",
		Command: "convgen -shape odd -precision fp16 -layout nhwc -o ./odd -torch ./oddtorch",
		Summary: "not tuned: test binding",
	}
}

// untunedBF16 is an untuned package: PTX only, for compute_80.
func untunedBF16(t testing.TB) gen.Binding {
	return gen.Binding{
		Package: "untuned",
		Problem: problem.Problem{Shape: shape(t, "N=2,C=16,H=9,W=9,K=32,R=3,S=3,pad=1"), Precision: problem.BF16, Layout: problem.NCHW},
		Kernel:  "convgen_igemm_default",
		Launch:  launch.Launch{Grid: [3]int{3, 1, 1}, Block: [3]int{128, 1, 1}, SharedBytes: 50000},
		Arch:    "compute_80",
		PTX:     "// untuned PTX\n.version 7.8\n.target sm_80\n",
		Command: "convgen -shape N=2,C=16,H=9,W=9,K=32,R=3,S=3,pad=1 -precision bf16 -untuned -o u -torch ut",
		Summary: "untuned: no measurement; default configuration igemm/x as PTX for compute_80",
		Untuned: true,
	}
}

func render(t *testing.T, b gen.Binding, name string, grads ...gen.Binding) map[string][]byte {
	t.Helper()
	files, err := Files(b, name, grads...)
	if err != nil {
		t.Fatalf("Files: %v", err)
	}
	return files
}

func meta(t *testing.T, files map[string][]byte) Meta {
	t.Helper()
	var m Meta
	dec := json.NewDecoder(bytes.NewReader(files[MetaFile]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", MetaFile, err)
	}
	return m
}

// TestGolden compares the rendered package with testdata/golden/NAME, or
// rewrites it there with -update.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		b    gen.Binding
		name string
		want []string
	}{
		{tf32NCHW(t), "tf32torch", []string{InitFile, MetaFile, "kernel.ptx", "kernel_sm_90a.cubin"}},
		{oddFP16NHWC(t), "oddtorch", []string{InitFile, MetaFile, "kernel.ptx", "kernel_sm_90.cubin"}},
		{untunedBF16(t), "ut", []string{InitFile, MetaFile, "kernel.ptx"}},
		{fusedTF32(t), "fusedtorch", []string{InitFile, MetaFile, "kernel.ptx", "kernel_sm_90a.cubin"}},
		{reluFP16(t), "relutorch", []string{InitFile, MetaFile, "kernel.ptx", "kernel_sm_90.cubin"}},
		{tf32NCHW(t), "gradtorch", []string{InitFile, "dgrad_kernel.ptx", "dgrad_kernel_sm_90a.cubin",
			MetaFile, "kernel.ptx", "kernel_sm_90a.cubin", "wgrad_kernel.ptx", "wgrad_kernel_sm_90a.cubin"}},
		{fusedTF32(t), "gradfusedtorch", []string{InitFile, "dgrad_kernel.ptx", "dgrad_kernel_sm_90a.cubin",
			MetaFile, "kernel.ptx", "kernel_sm_90a.cubin", "wgrad_kernel.ptx", "wgrad_kernel_sm_90a.cubin"}},
		{oddFP16NHWC(t), "wgradtorch", []string{InitFile, MetaFile, "kernel.ptx", "kernel_sm_90.cubin", "wgrad_kernel.ptx", "wgrad_kernel_sm_90.cubin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := render(t, tc.b, tc.name, goldenGrads(t, tc.b, tc.name)...)
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range got {
					if !yield(n) {
						return
					}
				}
			})
			if !slices.Equal(names, tc.want) {
				t.Errorf("files %v, want %v", names, tc.want)
			}
			dir := filepath.Join("testdata", "golden", tc.name)
			if *update {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for _, n := range []string{InitFile, MetaFile} {
					if err := os.WriteFile(filepath.Join(dir, n+".golden"), got[n], 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, n := range []string{InitFile, MetaFile} {
				want, err := os.ReadFile(filepath.Join(dir, n+".golden"))
				if err != nil {
					t.Fatalf("%v (run go test ./gen/torchmod -run TestGolden -update to create it)", err)
				}
				if !bytes.Equal(got[n], want) {
					t.Errorf("%s differs from its golden file (run with -update if the change is intended):\n%s", n, firstDiff(got[n], want))
				}
			}
		})
	}
}

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
		if gl != wl {
			return fmt.Sprintf("line %d:\n got: %q\nwant: %q", i+1, gl, wl)
		}
	}
	return "(no line differs)"
}

// TestImagesAreGoPackages checks that the images are byte for byte those
// gen embeds in the Go package of the same binding.
func TestImagesAreGoPackages(t *testing.T) {
	for _, b := range []gen.Binding{tf32NCHW(t), oddFP16NHWC(t), untunedBF16(t)} {
		t.Run(b.Package, func(t *testing.T) {
			goFiles, err := gen.Files(b)
			if err != nil {
				t.Fatal(err)
			}
			files := render(t, b, "m")
			for name, data := range files {
				if name == InitFile || name == MetaFile {
					continue
				}
				if g, ok := goFiles[name]; !ok || !bytes.Equal(g, data) {
					t.Errorf("%s: not the Go package's file of that name (in it: %t)", name, ok)
				}
			}
			for name := range goFiles {
				if (strings.HasSuffix(name, ".cubin") || strings.HasSuffix(name, ".ptx")) && len(goFiles[name]) > 0 && files[name] == nil {
					t.Errorf("the Go package embeds %s, the Python one lacks it", name)
				}
			}
		})
	}
}

// TestMetaAgreesWithBinding checks kernel.json against the binding it was
// rendered from: problem, dtype, layouts, parameter order and each image's
// file, architecture and launch.
func TestMetaAgreesWithBinding(t *testing.T) {
	t.Run("tuned with fallback", func(t *testing.T) {
		b := tf32NCHW(t)
		m := meta(t, render(t, b, "m"))
		sh := b.Problem.Shape
		want := Problem{N: 256, C: 3, H: 224, W: 224, K: 96, R: 11, S: 11, P: sh.P(), Q: sh.Q(), Stride: [2]int{4, 4},
			Padding: [2]int{2, 2}, Dilation: [2]int{1, 1}, Groups: 1, Bias: true, Shape: sh.String()}
		if m.Problem != want || m.Problem.P != 55 || m.Problem.Q != 55 {
			t.Errorf("problem %+v, want %+v (P=Q=55)", m.Problem, want)
		}
		if m.Format != MetaFormat || m.Package != "tf32" || m.Precision != "tf32" || m.Layout != "nchw" || m.FilterLayout != "kcrs" ||
			m.DType != "float32" || m.Alignment != 16 || m.Untuned || m.Backward != "pytorch" || m.Command != b.Command || m.Summary != b.Summary {
			t.Errorf("meta %+v", m)
		}
		op, ok := m.Ops["fprop"]
		if !ok || len(m.Ops) != 1 {
			t.Fatalf("ops %v, want fprop only", m.Ops)
		}
		if !slices.Equal(op.Params, []string{"out", "in", "filter", "bias"}) {
			t.Errorf("params %v", op.Params)
		}
		if c := op.CUBIN; c == nil || c.File != "kernel_sm_90a.cubin" || c.Arch != "sm_90a" || c.CC != 90 || c.Kernel != b.Kernel || c.Launch != b.Launch {
			t.Errorf("cubin %+v", c)
		}
		fb := b.Fallback
		if p := op.PTX; p == nil || p.File != "kernel.ptx" || p.Arch != "compute_80" || p.CC != 80 || p.Kernel != fb.Kernel || p.Launch != fb.Launch {
			t.Errorf("ptx %+v, want the fallback's", p)
		}
	})
	t.Run("own PTX, nhwc fp16 without bias", func(t *testing.T) {
		b := oddFP16NHWC(t)
		m := meta(t, render(t, b, "m"))
		p := m.Problem
		if p.Stride != [2]int{2, 1} || p.Padding != [2]int{1, 3} || p.Dilation != [2]int{2, 2} || p.Groups != 4 || p.Bias ||
			p.P != b.Problem.Shape.P() || p.Q != b.Problem.Shape.Q() {
			t.Errorf("problem %+v", p)
		}
		if m.DType != "float16" || m.Layout != "nhwc" || m.FilterLayout != "krsc" {
			t.Errorf("dtype %s, layout %s, filter %s", m.DType, m.Layout, m.FilterLayout)
		}
		op := m.Ops["fprop"]
		if x := op.PTX; x == nil || x.Arch != "compute_90" || x.CC != 90 || x.Kernel != b.Kernel || x.Launch != b.Launch {
			t.Errorf("ptx %+v, want the winner's own for compute_90", x)
		}
	})
	t.Run("architecture-specific winner without fallback", func(t *testing.T) {
		b := tf32NCHW(t)
		b.Fallback = nil
		files := render(t, b, "m")
		if op := meta(t, files).Ops["fprop"]; op.PTX != nil || op.CUBIN == nil {
			t.Errorf("ptx %+v, cubin %+v: want the CUBIN alone (sm_90a PTX runs nowhere else)", op.PTX, op.CUBIN)
		}
		if _, ok := files["kernel.ptx"]; ok {
			t.Error("kernel.ptx written without PTX")
		}
	})
	t.Run("untuned", func(t *testing.T) {
		b := untunedBF16(t)
		m := meta(t, render(t, b, "m"))
		op := m.Ops["fprop"]
		if !m.Untuned || op.CUBIN != nil || op.PTX == nil || op.PTX.CC != 80 || op.PTX.Kernel != b.Kernel || op.PTX.SharedBytes != 50000 || m.DType != "bfloat16" {
			t.Errorf("untuned meta %+v, op %+v", m, op)
		}
	})
}

func TestDTypes(t *testing.T) {
	for _, p := range problem.Precisions {
		if _, ok := dtypes[p]; !ok {
			t.Errorf("precision %s has no torch dtype", p)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"tf32", "tf32_torch", "_x", "Conv1"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1x", "tf32-torch", "a.b", "class", "None", "torch", "é"} {
		if err := CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", bad)
		}
	}
	if _, err := Files(tf32NCHW(t), "for"); err == nil {
		t.Error("Files with a keyword as name: no error")
	}
}

func TestBadBindingRefused(t *testing.T) {
	b := tf32NCHW(t)
	b.CUBIN = nil
	if _, err := Files(b, "m"); err == nil || !strings.Contains(err.Error(), "CUBIN") {
		t.Errorf("Files without CUBIN: %v", err)
	}
	b = tf32NCHW(t)
	b.Summary = `evil """ summary`
	if _, err := Files(b, "m"); err == nil || !strings.Contains(err.Error(), "docstring") {
		t.Errorf("Files with a triple quote in the summary: %v", err)
	}
}

func TestDeterministic(t *testing.T) {
	a, b := render(t, tf32NCHW(t), "m"), render(t, tf32NCHW(t), "m")
	for n := range a {
		if !bytes.Equal(a[n], b[n]) {
			t.Errorf("%s differs between two renders", n)
		}
	}
}

func TestHeader(t *testing.T) {
	init := string(render(t, tf32NCHW(t), "m")[InitFile])
	first, rest, _ := strings.Cut(init, "\n")
	if first != Header {
		t.Errorf("first line %q, want %q", first, Header)
	}
	if !strings.HasPrefix(rest, "# Regenerate with: "+tf32NCHW(t).Command+"\n") {
		t.Errorf("second line: %.100q", rest)
	}
}

// TestWrite writes the package, then again over Python's byte-code cache,
// and refuses a directory with a foreign file.
func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tf32torch")
	b := tf32NCHW(t)
	if err := Write(dir, b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, gen.ManifestFile)); err != nil {
		t.Errorf("no manifest: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "__pycache__"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "__pycache__", "__init__.cpython-311.pyc"), []byte("pyc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckTarget(dir); err != nil {
		t.Errorf("CheckTarget over __pycache__: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "__pycache__"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, b); err != nil {
		t.Errorf("Write over __pycache__: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "__pycache__")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("__pycache__ still there: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine.py"), []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var foreign *gen.ForeignError
	if err := Write(dir, b); !errors.As(err, &foreign) {
		t.Errorf("Write over a foreign file: %v, want a *gen.ForeignError", err)
	}
	if err := CheckTarget(filepath.Join(t.TempDir(), "tf32-torch")); err == nil {
		t.Error("CheckTarget of a directory whose name is no Python identifier: no error")
	}
}

// python returns a python3 that imports what needs, or "" with why not.
func python(t *testing.T, needs string) string {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import "+needs).Run() == nil {
			return path
		}
	}
	return ""
}

// TestPyCompile byte-compiles every rendered __init__.py.
func TestPyCompile(t *testing.T) {
	py := python(t, "py_compile")
	if py == "" {
		t.Skip("no python3 on PATH or at /usr/bin/python3: the emitted Python is not compiled")
	}
	for _, m := range pythonModules(t) {
		dir := filepath.Join(t.TempDir(), "m")
		if err := WriteFiles(dir, render(t, m.b, "m", m.grads...)); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(py, "-c", "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)",
			filepath.Join(dir, InitFile), filepath.Join(t.TempDir(), "init.pyc")).CombinedOutput()
		if err != nil {
			t.Errorf("%s: py_compile: %v\n%s", m.name, err, out)
		}
	}
}

// TestPythonCPU runs testdata/cpu_check.py, which checks with PyTorch on
// the CPU what needs no GPU: construction, ValueErrors, initialisation and
// state_dict against nn.Conv2d, the input checks and the fallback.
func TestPythonCPU(t *testing.T) {
	py := python(t, "torch")
	if py == "" {
		t.Skip("no python3 with PyTorch (python3 or /usr/bin/python3): the CPU checks of the module do not run")
	}
	for _, m := range pythonModules(t) {
		t.Run(m.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "convmod")
			if err := WriteFiles(dir, render(t, m.b, "convmod", m.grads...)); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(py, filepath.Join("testdata", "cpu_check.py"), dir).CombinedOutput()
			if err != nil {
				t.Errorf("cpu_check.py: %v\n%s", err, out)
			}
		})
	}
}

// TestPythonDriver runs testdata/driver_check.py against
// testdata/fakecuda/fakecuda.c built as libcuda.so.1: the module's ctypes
// calls (image picked by compute capability, load options, function name,
// shared-memory opt-in, launch geometry, stream, parameter order, contexts,
// errors) and forward's fast path (its launches, when it gives way to the
// full checks, autograd, threads), without a GPU; it prints the host time
// of a call.
func TestPythonDriver(t *testing.T) {
	py := python(t, "torch")
	if py == "" {
		t.Skip("no python3 with PyTorch (python3 or /usr/bin/python3): the driver calls of the module are not checked")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) to build the fake libcuda.so.1: the driver calls of the module are not checked")
	}
	lib := t.TempDir()
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", filepath.Join(lib, "libcuda.so.1"), filepath.Join("testdata", "fakecuda", "fakecuda.c")).CombinedOutput(); err != nil {
		t.Fatalf("build the fake libcuda: %v\n%s", err, out)
	}
	for _, m := range pythonModules(t) {
		t.Run(m.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "convmod")
			if err := WriteFiles(dir, render(t, m.b, "convmod", m.grads...)); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(py, filepath.Join("testdata", "driver_check.py"), dir)
			cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+lib)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("driver_check.py: %v\n%s", err, out)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "info ") {
					t.Log(line) // the host time of a call, for the record
				}
			}
		})
	}
}

// chained returns b with the epilogue chain spec.
func chained(t testing.TB, b gen.Binding, spec string) gen.Binding {
	t.Helper()
	c, err := epilogue.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	b.Problem.Epilogue = c
	return b
}

// fusedTF32 is the flagship's tf32 binding with a chain that reads every
// array and has constants: scale_shift, a scaled residual, leaky_relu.
func fusedTF32(t testing.TB) gen.Binding {
	b := chained(t, tf32NCHW(t), "scale_shift,residual(0.5),leaky_relu(0.1)")
	b.Problem.Shape = shape(t, "N=2,C=3,H=32,W=32,K=16,R=3,S=3,pad=1") // small: the CPU checks allocate residuals
	return b
}

// reluFP16 is the odd fp16 NHWC binding (no bias) with the one-element
// chain relu: the class gets the alias Conv2dReLU.
func reluFP16(t testing.TB) gen.Binding { return chained(t, oddFP16NHWC(t), "relu") }

// TestEpilogueMeta: a chain module's kernel.json names the class, the
// chain, its elements with their float32 constants as float64, and the
// kernel's extra parameters in convrt.ForwardEpilogue's order.
func TestEpilogueMeta(t *testing.T) {
	m := meta(t, render(t, fusedTF32(t), "m"))
	want := &Epilogue{Chain: "scale_shift,residual(0.5),leaky_relu(0.1)", Elements: []EpilogueElement{
		{Op: "scale_shift"}, {Op: "residual", Args: []float64{0.5}}, {Op: "leaky_relu", Args: []float64{float64(float32(0.1))}}}}
	if m.Class != "Conv2dFused" || m.Epilogue == nil || m.Epilogue.Chain != want.Chain || fmt.Sprint(m.Epilogue.Elements) != fmt.Sprint(want.Elements) {
		t.Errorf("class %q, epilogue %+v, want Conv2dFused, %+v", m.Class, m.Epilogue, want)
	}
	if got := m.Ops["fprop"].Params; !slices.Equal(got, []string{"out", "in", "filter", "bias", "scale", "shift", "residual"}) {
		t.Errorf("params %v", got)
	}
	for spec, ps := range map[string][]string{"relu": {"out", "in", "filter", "bias"}, "residual,gelu": {"out", "in", "filter", "bias", "residual"},
		"clamp(-1,2),scale_shift": {"out", "in", "filter", "bias", "scale", "shift"}} {
		m := meta(t, render(t, chained(t, tf32NCHW(t), spec), "m"))
		if got := m.Ops["fprop"].Params; !slices.Equal(got, ps) {
			t.Errorf("%s: params %v, want %v", spec, got, ps)
		}
	}
	if m := meta(t, render(t, chained(t, tf32NCHW(t), "clamp(-1,2)"), "m")); fmt.Sprint(m.Epilogue.Elements) != "[{clamp [-1 2]}]" {
		t.Errorf("clamp's bounds: %v", m.Epilogue.Elements)
	}
	if m := meta(t, render(t, tf32NCHW(t), "m")); m.Class != "Conv2d" || m.Epilogue != nil {
		t.Errorf("plain module: class %q, epilogue %+v", m.Class, m.Epilogue)
	}
}

// TestEpilogueClassNames: Conv2dFused for every chain, an alias for a
// one-element chain, the usage line naming the class.
func TestEpilogueClassNames(t *testing.T) {
	for _, op := range epilogue.Ops() {
		c := epilogue.Chain{{Op: op}}
		if want := "Conv2d" + op.GoName(); alias(c) != want {
			t.Errorf("alias of %s: %q, want %q", op, alias(c), want)
		}
	}
	init := string(render(t, reluFP16(t), "m")[InitFile])
	for _, want := range []string{`__all__ = ["Conv2dFused", "Conv2dReLU", "chain", "EPILOGUE",`, "Conv2dReLU = Conv2dFused",
		"conv = m.Conv2dFused(8, 12, (3, 5)", "- relu: max(y, 0)"} {
		if !strings.Contains(init, want) {
			t.Errorf("__init__.py lacks %q", want)
		}
	}
	if init := string(render(t, fusedTF32(t), "m")[InitFile]); strings.Contains(init, "Conv2dReLU") || !strings.Contains(init, "leaky_relu(0.1): y if y > 0 else 0.1*y") {
		t.Error("a three-element chain: an alias, or the constant missing from the docstring")
	}
}

// TestEpilogueServed: every valid chain is served; an invalid one is not.
func TestEpilogueServed(t *testing.T) {
	if err := Serves(fusedTF32(t).Problem); err != nil {
		t.Errorf("Serves with a chain: %v", err)
	}
	b := tf32NCHW(t)
	b.Problem.Epilogue = epilogue.Chain{{Op: epilogue.Clamp, Lo: 2, Hi: 1}}
	if err := Serves(b.Problem); err == nil || !strings.Contains(err.Error(), "epilogue") {
		t.Errorf("Serves with an invalid chain: %v", err)
	}
	if _, err := Files(b, "m"); err == nil {
		t.Error("Files with an invalid chain: no error")
	}
}

// chainCase is one chain's module and what epilogue.Apply computes on a
// grid of values, for testdata/chain_check.py: y is (1, 2, 1, len(Y))
// with channel k's row Y (scaled by 1+k), z likewise from Z.
type chainCase struct {
	Dir   string      `json:"dir"`
	Chain string      `json:"chain"`
	Y     []jsonFloat `json:"y"`
	Z     []jsonFloat `json:"z"`
	Scale []float64   `json:"scale"`
	Shift []float64   `json:"shift"`
	Want  []jsonFloat `json:"want"` // channel 0's row, then channel 1's
}

// jsonFloat writes NaN and ±Inf as strings Python's float() reads.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"nan"`), nil
	case math.IsInf(v, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-inf"`), nil
	}
	return json.Marshal(v)
}

// TestPythonChain runs testdata/chain_check.py: each element's (and a few
// chains') torch mirror in the emitted module, chain(), in float64 against
// epilogue.Apply on a grid of values with NaN and infinities, and the
// backward of Conv2dFused on the CPU against float64 autograd.
func TestPythonChain(t *testing.T) {
	py := python(t, "torch")
	if py == "" {
		t.Skip("no python3 with PyTorch (python3 or /usr/bin/python3): the chain mirror is not checked")
	}
	specs := []string{"scale_shift", "residual", "residual(0.5)", "relu", "relu6", "leaky_relu(0.1)", "clamp(-1,2)",
		"sigmoid", "tanh", "gelu", "gelu_tanh", "silu", "hardswish", "mish",
		"scale_shift,residual(-0.25),gelu_tanh", "residual,relu,clamp(0.5,3),mish"}
	ys := []float64{0, 0.5, -0.5, 1, -1, 2.5, -2.5, 3, -3, 4, -4, 7, -7, 30, -30, 1e3, -1e3, -1e-3, 1e-8,
		math.NaN(), math.Inf(1), math.Inf(-1)}
	scale, shift := []float64{1.25, -0.5}, []float64{0.75, 2}
	base := tf32NCHW(t)
	base.Problem.Shape = shape(t, "N=1,C=1,H=1,W=22,K=2,R=1,S=1")
	var cases []chainCase
	for i, spec := range specs {
		b := chained(t, base, spec)
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("chain%d", i))
		if err := Write(dir, b); err != nil {
			t.Fatal(err)
		}
		c := chainCase{Dir: dir, Chain: spec, Scale: scale, Shift: shift}
		for k := range 2 {
			for j, y := range ys {
				y *= float64(1 + k)
				z := float64(float32(math.Sin(float64(j)) * 3))
				if k == 0 {
					c.Y, c.Z = append(c.Y, jsonFloat(y)), append(c.Z, jsonFloat(z))
				}
				c.Want = append(c.Want, jsonFloat(epilogue.Apply(b.Problem.Epilogue, y, k, scale, shift, z)))
			}
		}
		cases = append(cases, c)
	}
	js, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "cases.json")
	if err := os.WriteFile(in, js, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, filepath.Join("testdata", "chain_check.py"), in).CombinedOutput()
	if err != nil {
		t.Errorf("chain_check.py: %v\n%s", err, out)
	} else if testing.Verbose() {
		t.Logf("%s", out)
	}
}

// gradBinding is the binding of op's kernel (dgrad or wgrad) for b's
// problem, with fake images: for an sm_90a forward an sm_90a winner with
// a compute_80 fallback, else a winner whose own PTX is embedded.
func gradBinding(t testing.TB, b gen.Binding, op problem.Op) gen.Binding {
	t.Helper()
	g := b
	g.Problem.Op, g.Problem.Epilogue = op, nil
	g.Package = b.Package + op.String()
	g.Kernel = "convgen_" + op.String() + "_golden"
	g.Launch = launch.Launch{Grid: [3]int{264, 1, 1}, Block: [3]int{256, 1, 1}, SharedBytes: 65536}
	if op == problem.OpDgrad {
		g.Launch = launch.Launch{Grid: [3]int{96, 4, 2}, Block: [3]int{128, 1, 1}, SharedBytes: 2048}
	}
	g.CUBIN = []byte("\x7fELF\x02\x01\x01fake " + op.String() + " cubin\x00")
	g.PTX = "// " + op.String() + " PTX\n.version 7.8\n.target " + strings.TrimSuffix(b.Arch, "a") + "\n"
	g.Command = strings.Replace(b.Command, "convgen ", "convgen -op "+op.String()+" ", 1)
	g.Summary = "tuned on NVIDIA H200 (" + b.Arch + "): " + op.String() + "mma, median 0.412 ms, rel. error 2.0e-07"
	g.Fallback = nil
	if strings.HasSuffix(b.Arch, "a") {
		g.Fallback = &gen.Fallback{Kernel: "convgen_" + op.String() + "_fallback", Arch: "compute_80",
			Launch:  launch.Launch{Grid: [3]int{4000, 1, 1}, Block: [3]int{128, 1, 1}, SharedBytes: 0},
			PTX:     "// fake " + op.String() + " fallback PTX\n.version 7.8\n.target sm_80\n",
			Summary: op.String() + "/Threads=128, median 3.100 ms, rel. error 1.0e-07 on NVIDIA H200"}
	}
	return g
}

// goldenGrads are the gradient bindings of the golden module name: both
// for gradtorch and gradfusedtorch, wgrad alone for wgradtorch, none for
// the others.
func goldenGrads(t testing.TB, b gen.Binding, name string) []gen.Binding {
	switch name {
	case "gradtorch", "gradfusedtorch":
		return []gen.Binding{gradBinding(t, b, problem.OpDgrad), gradBinding(t, b, problem.OpWgrad)}
	case "wgradtorch":
		return []gen.Binding{gradBinding(t, b, problem.OpWgrad)}
	}
	return nil
}

// gradModule is a module to write for the Python tests: a binding, its
// gradient bindings and a name for the subtest.
type gradModule struct {
	name  string
	b     gen.Binding
	grads []gen.Binding
}

// pythonModules are the modules the Python tests run: every golden one.
func pythonModules(t testing.TB) []gradModule {
	var ms []gradModule
	for _, m := range []struct {
		name string
		b    gen.Binding
	}{{"tf32torch", tf32NCHW(t)}, {"oddtorch", oddFP16NHWC(t)}, {"ut", untunedBF16(t)}, {"fusedtorch", fusedTF32(t)},
		{"relutorch", reluFP16(t)}, {"gradtorch", tf32NCHW(t)}, {"gradfusedtorch", fusedTF32(t)}, {"wgradtorch", oddFP16NHWC(t)}} {
		if m.name == "gradtorch" { // the flagship's first layer, smaller: PyTorch's CPU backward runs on it
			m.b.Problem.Shape = shape(t, "N=4,C=3,H=35,W=39,K=16,R=11,S=11,stride=4,pad=2")
		}
		ms = append(ms, gradModule{m.name, m.b, goldenGrads(t, m.b, m.name)})
	}
	return ms
}

// TestGradMeta: the gradient kernels' ops in kernel.json (parameters in
// the kernel's order, images named with the op in front, byte for byte
// those of each gradient's Go package), Backward naming them, and the
// bindings Files refuses.
func TestGradMeta(t *testing.T) {
	b := tf32NCHW(t)
	grads := goldenGrads(t, b, "gradtorch")
	files := render(t, b, "m", grads...)
	m := meta(t, files)
	if m.Backward != "dgrad+wgrad" || len(m.Ops) != 3 {
		t.Errorf("backward %q, ops %v", m.Backward, slices.Sorted(maps.Keys(m.Ops)))
	}
	for _, g := range grads {
		op := m.Ops[g.Problem.Op.String()]
		want := map[problem.Op][]string{problem.OpDgrad: {"dX", "dY", "W", "unused"}, problem.OpWgrad: {"dW", "X", "dY", "dBias"}}[g.Problem.Op]
		if !slices.Equal(op.Params, want) {
			t.Errorf("%s params %v, want %v", g.Problem.Op, op.Params, want)
		}
		goFiles, err := gen.Files(g)
		if err != nil {
			t.Fatal(err)
		}
		if c := op.CUBIN; c == nil || c.Kernel != g.Kernel || c.Launch != g.Launch || c.File != g.Problem.Op.String()+"_kernel_sm_90a.cubin" ||
			!bytes.Equal(files[c.File], goFiles["kernel_sm_90a.cubin"]) {
			t.Errorf("%s cubin %+v", g.Problem.Op, c)
		}
		if x := op.PTX; x == nil || x.Kernel != g.Fallback.Kernel || x.Launch != g.Fallback.Launch || x.CC != 80 ||
			!bytes.Equal(files[x.File], goFiles["kernel.ptx"]) {
			t.Errorf("%s ptx %+v", g.Problem.Op, x)
		}
	}
	if m := meta(t, render(t, b, "m", grads[1])); m.Backward != "wgrad" || len(m.Ops) != 2 {
		t.Errorf("wgrad alone: backward %q, %d ops", m.Backward, len(m.Ops))
	}
	other := gradBinding(t, b, problem.OpDgrad)
	other.Problem.Precision = problem.FP32
	bad := map[string][]gen.Binding{
		"another precision": {other},
		"two dgrad":         {grads[0], grads[0]},
		"an fprop":          {b},
	}
	for what, gs := range bad {
		if _, err := Files(b, "m", gs...); err == nil {
			t.Errorf("Files with %s: no error", what)
		}
	}
	if _, err := Files(grads[0], "m"); err == nil {
		t.Error("Files of a dgrad binding: no error")
	}
	init := string(files[InitFile])
	for _, want := range []string{"BACKWARD_KERNELS = tuple(", "use_convgen_backward=None", "- dgrad: sm_90a CUBIN (kernel convgen_dgrad_golden)",
		"def _gradients(", "def backward_info("} {
		if !strings.Contains(init, want) {
			t.Errorf("__init__.py lacks %q", want)
		}
	}
	if init := string(render(t, b, "m")[InitFile]); strings.Contains(init, "BACKWARD_KERNELS") || strings.Contains(init, "use_convgen_backward") {
		t.Error("a module without gradient kernels mentions them")
	}
}
