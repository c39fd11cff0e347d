package gen

import (
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

// outFP32 is fp16NHWC storing FP32 outputs (-out-precision fp32) through
// the chain residual(0.5),relu, whose residual is of the output's type.
func outFP32(t testing.TB) Binding {
	t.Helper()
	b := fp16NHWC(t)
	b.Package = "outfp32"
	c, err := epilogue.Parse("residual(0.5),relu")
	if err != nil {
		t.Fatal(err)
	}
	b.Problem.Epilogue, b.Problem.OutPrecision = c, problem.StorageFP32
	b.Command += " -epilogue residual(0.5),relu -out-precision fp32"
	return b
}

// TestOutPrecisionFiles: a package whose output type differs from the
// input's names it in its doc (header, memory section with both element
// types, the looser bound), its constants (OutPrecision,
// OutputElementBytes), its spec and its test's bound; one whose
// out-precision is the input's own type is the package without one, byte
// for byte; a gradient with an out-precision and an unknown type are
// refused.
func TestOutPrecisionFiles(t *testing.T) {
	fs := files(t, outFP32(t))
	for name, want := range map[string][]string{
		"doc.go": {"output fp32: each output stored as fp32, rounded once from its FP32 value (the input is fp16)",
			"in, filter and bias of fp16 (ElementBytes = 2 bytes each", "out and the residual of float32 (OutputElementBytes = 4 bytes each)",
			"relative L2 error at most 0.002"},
		"shape.go":            {"OutputElementBytes = 4 bytes of one element of out", "OutPrecision problem.Storage = problem.StorageFP32"},
		"kernel.go":           {"OutPrecision: OutPrecision"},
		"shape_test.go":       {"spec.Problem.OutElementBytes() != OutputElementBytes"},
		"kernel_cuda_test.go": {"errorBound is the relative L2 error that precision fp16 stored as fp32 allows"},
	} {
		text := strings.Join(strings.Fields(strings.ReplaceAll(string(fs[name]), "//", "")), " ") // alignment, wrapping and comment marks aside
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
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
