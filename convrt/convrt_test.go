package convrt

import (
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

func testSpec(t *testing.T, shape string) *Spec {
	t.Helper()
	sh, err := problem.ParseShape(shape)
	if err != nil {
		t.Fatal(err)
	}
	return &Spec{
		Package:   "conv",
		Problem:   problem.Problem{Shape: sh, Precision: problem.FP32, Layout: problem.NCHW},
		TunedArch: "sm_90",
		CUBIN:     Image{CC: 90, Launch: Launch{Kernel: "k", Grid: [3]int{4, 1, 1}, Block: [3]int{128, 1, 1}, SharedBytes: 1024}},
		PTX:       Image{CC: 80, Launch: Launch{Kernel: "kp", Grid: [3]int{8, 1, 1}, Block: [3]int{256, 1, 1}}},
	}
}

func TestCheckPtrs(t *testing.T) {
	p := testSpec(t, "N=1,C=3,H=8,W=8,K=4,R=3,S=3").Problem
	const base DevicePtr = 1 << 20
	ok := [4]DevicePtr{base, base + Alignment, base + 2*Alignment, base + 3*Alignment}
	if err := CheckPtrs(p, ok[0], ok[1], ok[2], ok[3]); err != nil {
		t.Errorf("aligned addresses refused: %v", err)
	}
	for i, name := range []string{"out", "in", "filter", "bias"} {
		a := ok
		a[i] += Alignment / 2
		if err := CheckPtrs(p, a[0], a[1], a[2], a[3]); err == nil || !strings.Contains(err.Error(), name+" ") || !strings.Contains(err.Error(), "aligned") {
			t.Errorf("%s misaligned: got %v, want an error naming it", name, err)
		}
		a[i] = 0
		if err := CheckPtrs(p, a[0], a[1], a[2], a[3]); err == nil || !strings.Contains(err.Error(), name+" ") || !strings.Contains(err.Error(), "null") {
			t.Errorf("%s null: got %v, want an error naming it", name, err)
		}
	}
	p.Shape.Bias = false
	if err := CheckPtrs(p, base, base, base, 0); err != nil {
		t.Errorf("bias 0 refused for a problem without bias: %v", err)
	}
}

func TestSpecValidate(t *testing.T) {
	if err := (*Spec)(nil).Validate(); err == nil {
		t.Error("nil spec accepted")
	}
	if err := testSpec(t, "N=1,C=3,H=8,W=8,K=4,R=3,S=3").Validate(); err != nil {
		t.Fatalf("valid spec refused: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Spec)
		want   string
	}{
		{"package", func(s *Spec) { s.Package = "" }, "without a package name"},
		{"shape", func(s *Spec) { s.Problem.Shape.StrideH = 0 }, "stride_h"},
		{"layout", func(s *Spec) { s.Problem.Layout = "chwn" }, `layout "chwn"`},
		{"cubin kernel", func(s *Spec) { s.CUBIN.Kernel = "" }, "CUBIN: no kernel name"},
		{"cubin grid", func(s *Spec) { s.CUBIN.Grid[2] = 0 }, "every dimension must be positive"},
		{"cubin cc", func(s *Spec) { s.CUBIN.CC = 0 }, "CUBIN: compute capability 0"},
		{"ptx block", func(s *Spec) { s.PTX.Block = [3]int{64, 32, 1} }, "PTX: kernel kp: block"},
		{"ptx shared", func(s *Spec) { s.PTX.SharedBytes = -1 }, "PTX: kernel kp: -1 bytes"},
		// 2^32 x 2^32 x 1 threads: their product wraps to 0 in an int.
		{"cubin block overflow", func(s *Spec) { s.CUBIN.Block = [3]int{1 << 32, 1 << 32, 1} }, "CUBIN: kernel k: grid"},
		{"cubin block z", func(s *Spec) { s.CUBIN.Block = [3]int{1, 1, 128} }, "at most grid"},
		{"ptx grid y", func(s *Spec) { s.PTX.Grid = [3]int{1, 65536, 1} }, "PTX: kernel kp: grid"},
		{"cubin shared", func(s *Spec) { s.CUBIN.SharedBytes = 1 << 31 }, "CUBIN: kernel k: 2147483648 bytes"},
	} {
		s := testSpec(t, "N=1,C=3,H=8,W=8,K=4,R=3,S=3")
		tc.change(s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}
