package gen

import (
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

// outFP32 is fp16NHWC storing FP32 outputs (-out-precision fp32).
func outFP32(t testing.TB) Binding {
	t.Helper()
	b := fp16NHWC(t)
	b.Package = "outfp32"
	b.Problem.OutPrecision = problem.StorageFP32
	b.Command += " -out-precision fp32"
	return b
}

// TestOutPrecisionFiles: a package whose output type differs from the
// input's names it in its doc (header, memory section with both element
// types, a residual's too, the looser bound), its constant
// OutputElementBytes (checked by TestSpec), its spec and its test's bound;
// one whose out-precision is the input's own type is the package without
// one, byte for byte; a gradient with an out-precision and an unknown
// type are refused.
func TestOutPrecisionFiles(t *testing.T) {
	fs := files(t, outFP32(t))
	for name, want := range map[string][]string{
		"doc.go": {"precision fp16: FP16 operands with FP32 accumulation, fp16 (IEEE binary16) data, fp32 output (rounded once from FP32)",
			"one dense array of fp16 (ElementBytes = 2 bytes each", "(out: float32, OutputElementBytes = 4 bytes each)",
			"relative L2 error at most 0.002"},
		"shape.go":            {"OutputElementBytes = 4 bytes of one element of out (and of a residual): fp32, the output precision"},
		"kernel.go":           {"OutPrecision: problem.StorageFP32"},
		"shape_test.go":       {"|| spec.Problem.OutElementBytes() != OutputElementBytes {"},
		"kernel_cuda_test.go": {"errorBound is the relative L2 error that precision fp16 stored as fp32 allows"},
	} {
		text := strings.Join(strings.Fields(strings.ReplaceAll(string(fs[name]), "//", "")), " ") // alignment, wrapping and comment marks aside
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
	}
	res := outFP32(t)
	c, err := epilogue.Parse("residual(0.5),relu")
	if err != nil {
		t.Fatal(err)
	}
	res.Problem.Epilogue = c
	if doc := strings.Join(strings.Fields(strings.ReplaceAll(string(files(t, res)["doc.go"]), "//", "")), " "); !strings.Contains(doc, "(out and the residual: float32, OutputElementBytes = 4 bytes each)") {
		t.Error("with a residual, doc.go does not give the residual the output's type")
	}
	same := fp16NHWC(t)
	same.Problem.OutPrecision = problem.StorageFP16
	plain := files(t, fp16NHWC(t))
	for name, src := range files(t, same) {
		if string(src) != string(plain[name]) {
			t.Errorf("%s: out-precision fp16 on fp16 differs from no out-precision", name)
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*Binding)
		want   string
	}{
		{"unknown", func(b *Binding) { b.Problem.OutPrecision = "tf32" }, `output precision "tf32"`},
		{"gradient", func(b *Binding) { b.Problem.Op = problem.OpDgrad; b.Problem.Epilogue = nil }, "applies only to op=fprop"},
	} {
		b := outFP32(t)
		tc.change(&b)
		if _, err := Files(b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Files error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
