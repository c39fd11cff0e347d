package main

import (
	"os"
	"strings"
	"testing"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// TestList: -list prints exactly the kept candidate IDs of the shape for
// sm_90 (each one -pin accepts), -v adds the rejected ones with their
// reasons, and nothing is written.
func TestList(t *testing.T) {
	t.Chdir(t.TempDir())
	shape, err := problem.ParseShape(flagship)
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: shape, Precision: problem.FP16, Layout: problem.NHWC}
	lim := kernels.DefaultLimits(90)
	lim.SM90a = true
	cands, err := kernels.Enumerate(p, lim)
	if err != nil {
		t.Fatal(err)
	}
	var kept, rejected []string
	for _, c := range cands {
		if c.Rejected == "" {
			kept = append(kept, c.ID())
		} else {
			rejected = append(rejected, "rejected "+c.ID()+": ")
		}
	}
	if len(kept) == 0 || len(rejected) == 0 {
		t.Fatalf("the fixture wants kept and rejected candidates: %d kept, %d rejected", len(kept), len(rejected))
	}
	r := runConvgen(t, "-list", "-shape", flagship, "-precision", "fp16", "-layout", "nhwc")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit code %d, stderr %q", r.code, r.stderr)
	}
	if got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(kept, "\n") {
		t.Errorf("-list printed %d lines, want the %d kept IDs (first %q)", len(got), len(kept), kept[0])
	}
	if !strings.Contains(r.stdout, "wgmmahalf/") {
		t.Errorf("-list for sm_90 lacks the sm_90a family wgmmahalf")
	}
	v := runConvgen(t, "-list", "-v", "-shape", flagship, "-precision", "fp16", "-layout", "nhwc", "-arch", "sm_80")
	if v.code != 0 {
		t.Fatalf("-list -v: exit code %d, stderr %q", v.code, v.stderr)
	}
	if strings.Contains(v.stdout, "\nwgmmahalf/") || !strings.Contains(v.stdout, "rejected wgmmahalf/") {
		t.Errorf("-list -v -arch sm_80 keeps wgmmahalf or does not list it as rejected")
	}
	if !strings.Contains(v.stdout, "rejected statically") {
		t.Errorf("-list -v lacks the counts line")
	}
	// The families of the op that decline the problem, with their reason
	// (fp16: direct, winograd and mma), and none of another op.
	if !strings.Contains(v.stdout, "\ndeclined direct: direct serves only fp32") || !strings.Contains(v.stdout, "\ndeclined mma: ") {
		t.Errorf("-list -v lacks the declining families:\n%s", v.stdout)
	}
	if strings.Contains(v.stdout, "declined dgrad") || strings.Contains(v.stdout, "declined wgrad") || strings.Contains(v.stdout, "computes only op") {
		t.Errorf("-list -v lists families of another op as declining")
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("-list wrote %d entries in the working directory", len(entries))
	}
	if r := runConvgen(t, "-v", "-shape", flagship, "-o", "x"); r.code != 2 {
		t.Errorf("-v without -list: exit code %d, want 2", r.code)
	}
}
