package gen

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/problem"
)

// trainFP16 is the golden training package: fp16NHWC's three ops, the
// forward and dgrad with a fallback, wgrad an sm_90a kernel without PTX
// (so its PTX test is skipped), tuned on another GPU model than the other
// two (so the doc says so).
func trainFP16(t testing.TB) Train {
	t.Helper()
	fwd := fp16NHWC(t)
	dgrad := dgradFP16(t)
	wgrad := fp16NHWC(t)
	wgrad.Problem.Op = problem.OpWgrad
	wgrad.Kernel, wgrad.Fallback = "convgen_wgrad_golden", nil
	wgrad.Launch = launch.Launch{Grid: [3]int{96, 3, 1}, Block: [3]int{128, 1, 1}, SharedBytes: 2048}
	wgrad.CUBIN = []byte("\x7fELF\x02\x01\x01fake wgrad cubin\x00\xff")
	wgrad.Summary = "tuned on NVIDIA H100 80GB HBM3 (sm_90a): wgradmma, median 2.500 ms, rel. error 3.0e-07"
	return Train{Package: "trainfp16", Ops: [3]Binding{fwd, dgrad, wgrad}, Devices: [3]string{"NVIDIA H200", "NVIDIA H200", "NVIDIA H100 80GB HBM3"},
		Command: "convgen -shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -precision fp16 -layout nhwc -pkg trainfp16 -o ./trainfp16 -train"}
}

// trainOdd is oddShape's training package: no bias, groups, TF32, no PTX
// for any op.
func trainOdd(t testing.TB) Train {
	t.Helper()
	var ops [3]Binding
	for i, op := range TrainOps() {
		b := oddShape(t)
		b.Problem.Op = op
		b.Kernel = "odd_" + op.String()
		ops[i] = b
	}
	return Train{Package: "trainodd", Command: "convgen -shape odd -o ./trainodd -train", Ops: ops}
}

func trainFiles(t *testing.T, tr Train) map[string][]byte {
	t.Helper()
	fs, err := TrainFiles(tr)
	if err != nil {
		t.Fatalf("TrainFiles: %v", err)
	}
	return fs
}

// TestTrainGolden compares the training package with
// testdata/golden/trainfp16 (-update rewrites it): one CUBIN and one PTX
// per op, one set of Go files.
func TestTrainGolden(t *testing.T) {
	tr := trainFP16(t)
	golden(t, "trainfp16", trainFiles(t, tr), []string{"doc.go", "kernel.go", "kernel_cuda_test.go", "kernel_dgrad.ptx", "kernel_dgrad_sm_90a.cubin",
		"kernel_fprop.ptx", "kernel_fprop_sm_90a.cubin", "kernel_wgrad.ptx", "kernel_wgrad_sm_90a.cubin", "shape.go", "shape_test.go"})
}

// TestTrainFiles: each op's images are its own binding's, the Go files
// carry the header and name the three methods, a file prefix starts every
// name, and the output does not depend on the call.
func TestTrainFiles(t *testing.T) {
	tr := trainFP16(t)
	got := trainFiles(t, tr)
	for i, op := range TrainOps() {
		b := tr.Ops[i]
		if cubin := got["kernel_"+op.String()+"_sm_90a.cubin"]; string(cubin) != string(b.CUBIN) {
			t.Errorf("%s: CUBIN %q, want the binding's", op, cubin)
		}
		wantPTX := ""
		if b.Fallback != nil {
			wantPTX = b.Fallback.PTX
		}
		if ptx := got["kernel_"+op.String()+".ptx"]; string(ptx) != wantPTX {
			t.Errorf("%s: PTX %q, want %q", op, ptx, wantPTX)
		}
	}
	for name, src := range got {
		if strings.HasSuffix(name, ".go") && !strings.HasPrefix(string(src), Header+"\n") {
			t.Errorf("%s lacks the header", name)
		}
	}
	kernel := string(got["kernel.go"])
	for _, m := range []string{"Forward", "BackwardData", "BackwardFilter", "Close", "OpInfo"} {
		if !strings.Contains(kernel, "func (k *Kernel) "+m+"(") {
			t.Errorf("kernel.go lacks the method %s", m)
		}
	}
	again := trainFiles(t, trainFP16(t))
	for name, src := range got {
		if string(again[name]) != string(src) {
			t.Errorf("%s differs between two renderings", name)
		}
	}
	tr.FilePrefix = FilesPrefix
	for name := range trainFiles(t, tr) {
		if !strings.HasPrefix(name, FilesPrefix) {
			t.Errorf("with a file prefix: %s", name)
		}
	}
}

// TestTrainFilesRejects: the three bindings must be fprop, dgrad and
// wgrad of one problem without an epilogue chain or output precision, each
// valid; the error names the op.
func TestTrainFilesRejects(t *testing.T) {
	relu, err := epilogue.Parse("relu")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Train)
		want   string
	}{
		{"ops out of order", func(tr *Train) { tr.Ops[1], tr.Ops[2] = tr.Ops[2], tr.Ops[1] }, "binding 1 is of op wgrad, want dgrad"},
		{"another precision", func(tr *Train) { tr.Ops[2].Problem.Precision = problem.BF16 }, "op wgrad is of"},
		{"another shape", func(tr *Train) { tr.Ops[1].Problem.Shape.K = 64 }, "op dgrad is of"},
		{"a chain", func(tr *Train) { tr.Ops[0].Problem.Epilogue = relu }, "op fprop: epilogue"},
		{"an output precision", func(tr *Train) { tr.Ops[0].Problem.OutPrecision = problem.StorageFP32 }, "op fprop: output precision fp32"},
		{"untuned", func(tr *Train) { tr.Ops[1].Untuned = true }, "op dgrad: an untuned binding"},
		{"no CUBIN", func(tr *Train) { tr.Ops[2].CUBIN = nil }, "op wgrad: gen: no CUBIN"},
		{"bad package", func(tr *Train) { tr.Package = "func" }, "op fprop: gen:"},
		{"bad prefix", func(tr *Train) { tr.FilePrefix = "../x_" }, "file prefix"},
	} {
		tr := trainFP16(t)
		tc.change(&tr)
		files, err := TrainFiles(tr)
		if err == nil || !strings.Contains(err.Error(), tc.want) || files != nil {
			t.Errorf("%s: %v (%d files), want an error with %q and no files", tc.name, err, len(files), tc.want)
		}
	}
	tr := trainFP16(t)
	tr.Ops[0].Problem.Epilogue = relu
	if _, err := TrainFiles(tr); !errors.Is(err, problem.ErrEpilogueOp) {
		t.Errorf("a chain: %v, want problem.ErrEpilogueOp", err)
	}
}

// TestTrainCompile builds the training packages in a throwaway module,
// without tags and, where the CUDA headers are at hand, with the cuda tag
// (its tests compiled, not run).
func TestTrainCompile(t *testing.T) {
	compile := packageCompiler(t)
	for _, tr := range []Train{trainFP16(t), trainOdd(t)} {
		t.Run(tr.Package, func(t *testing.T) { compile(t, tr.Package, trainFiles(t, tr)) })
	}
}

// TestTrainWrite: a training package goes to disk with Write, whole, and
// Write replaces it as it replaces a one-op package.
func TestTrainWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "trainfp16")
	files := trainFiles(t, trainFP16(t))
	for range 2 {
		if err := Write(dir, files); err != nil {
			t.Fatal(err)
		}
	}
	names := listDir(t, dir)
	for name := range files {
		if !slices.Contains(names, name) {
			t.Errorf("%s not written (%v)", name, names)
		}
	}
}

// TestMixedDevices: the description names each GPU model with its ops, in
// the ops' order, and is empty when one model (or none) is known.
func TestMixedDevices(t *testing.T) {
	const a, b, c = "NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"
	for _, tc := range []struct {
		devices [3]string
		want    string
	}{
		{[3]string{a, a, a}, ""},
		{[3]string{}, ""},
		{[3]string{a, "", a}, ""},
		{[3]string{a, b, a}, "fprop and wgrad on " + a + ", dgrad on " + b},
		{[3]string{b, a, a}, "fprop on " + b + ", dgrad and wgrad on " + a},
		{[3]string{a, b, c}, "fprop on " + a + ", dgrad on " + b + ", wgrad on " + c},
		{[3]string{a, "", b}, "fprop on " + a + ", wgrad on " + b},
	} {
		if got := MixedDevices(tc.devices); got != tc.want {
			t.Errorf("MixedDevices(%q) = %q, want %q", tc.devices, got, tc.want)
		}
	}
	tr := trainFP16(t)
	doc := strings.Join(strings.Fields(strings.ReplaceAll(string(trainFiles(t, tr)["doc.go"]), "//", " ")), " ")
	para := "The ops were tuned on different GPU models: fprop and dgrad on NVIDIA H200, wgrad on NVIDIA H100 80GB HBM3."
	if !strings.Contains(doc, para) {
		t.Errorf("doc.go lacks %q", para)
	}
	tr.Devices = [3]string{a, a, a}
	if doc := string(trainFiles(t, tr)["doc.go"]); strings.Contains(doc, "different GPU models") {
		t.Error("doc.go of one GPU model's ops says they differ")
	}
}
