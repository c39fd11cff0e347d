package gen

import (
	"strings"
	"testing"
)

// TestHalfBindings checks what sets a 2-byte binding apart from a float32
// one; fp16 has golden files besides, bf16 has not.
func TestHalfBindings(t *testing.T) {
	for _, tc := range []struct {
		b       Binding
		convert string
	}{
		{fp16NHWC(t), "convrt.FP16FromFloat32 and convrt.FP16ToFloat64"},
		{oddBF16(t), "convrt.BF16FromFloat32 and convrt.BF16ToFloat64"},
	} {
		t.Run(tc.b.Package, func(t *testing.T) {
			fs := files(t, tc.b)
			for name, want := range map[string][]string{
				shapeFile: {"ElementBytes = 2 ", `Precision   problem.Precision = "` + string(tc.b.Problem.Precision) + `"`},
				docFile:   {"one dense array of " + string(tc.b.Problem.Precision) + " (ElementBytes = 2 bytes each;", tc.convert},
			} {
				src := strings.Join(strings.Fields(string(fs[name])), " ")
				for _, w := range want {
					if !strings.Contains(src, strings.Join(strings.Fields(w), " ")) {
						t.Errorf("%s lacks %q", name, w)
					}
				}
			}
		})
	}
}
