package kernels

import (
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/problem"
)

// kb87Spec is KernelBench's kb87-pointwise: its output has exactly 2^31
// elements, one more than 32-bit offsets reach.
const kb87Spec = "N=16,C=64,H=1024,W=1024,K=128,R=1,S=1,bias=false"

// foldedSpec has 2^40 outputs: generic's grid exceeds 2^31−1 blocks along x
// for every tile, so it is folded into y.
const foldedSpec = "N=16384,C=1,H=8192,W=8192,K=1,R=1,S=1"

func wideProblem(t *testing.T, spec string, prec problem.Precision, lay problem.Layout) problem.Problem {
	t.Helper()
	s, err := problem.ParseShape(spec)
	if err != nil {
		t.Fatalf("ParseShape(%q): %v", spec, err)
	}
	if !s.Needs64BitIndex() {
		t.Fatalf("%s does not need 64-bit offsets", spec)
	}
	return problem.Problem{Shape: s, Precision: prec, Layout: lay}
}

// wide64 are the families that serve kb87 with 64-bit offsets: generic
// everywhere, wgmmaigemm where it serves the precision and layout (its
// image offsets 64-bit: TestWGMMAIGEMMWide).
func wide64(f Family, p problem.Problem) bool {
	return f.Name() == "generic" || f.Name() == "wgmmaigemm" && (WGMMAIGEMM{}).Serves(p) == nil
}

// TestIndex64Declined: every family but generic and wgmmaigemm declines a
// problem with a tensor of 2^31 elements, in every precision and layout,
// naming 32-bit indexing; Enumerate keeps only their candidates.
func TestIndex64Declined(t *testing.T) {
	for _, prec := range problem.Precisions {
		for _, lay := range problem.Layouts {
			p := wideProblem(t, kb87Spec, prec, lay)
			for _, f := range Families() {
				if gradFamily(f) {
					continue // declines the forward op (TestGradServes)
				}
				err := f.Serves(p)
				if f.Name() == "wgmmaigemm" && wide64(f, p) {
					continue
				}
				if f.Name() == "generic" {
					if err != nil {
						t.Errorf("%s: generic does not serve it: %v", p, err)
					}
					continue
				}
				if f.Name() == "wgmmaigemm" && lay == problem.NCHW && prec.ElementBytes() == 2 {
					// The 16-bit NCHW forward's relayout keeps 32-bit offsets.
					if err == nil || !strings.Contains(err.Error(), "32-bit") || !strings.Contains(err.Error(), "generic serves") {
						t.Errorf("%s: wgmmaigemm.Serves = %v, want a refusal of the relayout naming 32-bit offsets", p, err)
					}
					continue
				}
				if f.Name() == "wgmmaigemm" {
					if err == nil || strings.Contains(err.Error(), "32-bit") {
						t.Errorf("%s: wgmmaigemm.Serves = %v, want a refusal for its precision or layout only", p, err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), "32-bit") || !strings.Contains(err.Error(), "generic serves") {
					t.Errorf("%s: %s.Serves = %v, want a refusal naming 32-bit indexing and generic", p, f.Name(), err)
				}
			}
			cands, err := Enumerate(p, DefaultLimits(90))
			if err != nil {
				t.Fatalf("%s: Enumerate: %v", p, err)
			}
			kept := 0
			for _, c := range cands {
				if c.Family != "generic" && c.Family != "wgmmaigemm" {
					t.Errorf("%s: %s candidate %s", p, c.Family, c.ID())
				}
				if c.Rejected == "" {
					kept++
				}
			}
			if kept == 0 {
				t.Errorf("%s: no kept candidate", p)
			}
		}
	}
}

// renderWide renders generic's first kept candidate for p.
func renderWide(t *testing.T, p problem.Problem) (Candidate, Kernel) {
	t.Helper()
	keep := genericKept(p, DefaultLimits(90))
	if len(keep) == 0 {
		t.Fatalf("%s: no kept generic candidate", p)
	}
	k, err := RenderCandidate(p, keep[0])
	if err != nil {
		t.Fatalf("%s %s: %v", p, keep[0].ID(), err)
	}
	return keep[0], k
}

// TestGenericIndex64Path: generic renders 64-bit offsets for a problem that
// needs them and the 32-bit path (no idx_t) for one that does not.
func TestGenericIndex64Path(t *testing.T) {
	for _, lay := range problem.Layouts {
		p := wideProblem(t, kb87Spec, problem.FP32, lay)
		c, k := renderWide(t, p)
		for _, want := range []string{"#define IDX64 1", "typedef long long idx_t;", "const idx_t m = m0 + ml;",
			"const idx_t n = m / PQ, pq = m - n * PQ;", "#define PQ ((idx_t)P * Q)", "f_rows[(idx_t)nl * KRED + k0 + rl]",
			"if (block >= GRID) return;"} {
			if !strings.Contains(k.Source, want) {
				t.Errorf("%s %s: the 64-bit source lacks %q", p, c.ID(), want)
			}
		}
		if k.Grid[1] != 1 {
			t.Errorf("%s %s: grid %v, want y = 1 below 2^31 blocks", p, c.ID(), k.Grid)
		}
		checkGenericLaunch(t, p, c, k, DefaultLimits(90))

		small := problem.Problem{Shape: flagshipShape(t), Precision: problem.FP32, Layout: lay}
		_, ks := renderWide(t, small)
		if strings.Contains(ks.Source, "idx_t") || strings.Contains(ks.Source, "IDX64") || !strings.Contains(ks.Source, "const int m = m0 + ml;") {
			t.Errorf("%s: the 32-bit path mentions idx_t or lacks int offsets", small)
		}
	}
}

// TestGenericFoldedGrid: a problem of 2^40 outputs has more than 2^31−1
// blocks for every tile; generic folds them into y within CUDA's limits.
func TestGenericFoldedGrid(t *testing.T) {
	p := wideProblem(t, foldedSpec, problem.FP16, problem.NCHW)
	keep := genericKept(p, DefaultLimits(90))
	if len(keep) == 0 {
		t.Fatalf("%s: no kept generic candidate", p)
	}
	for _, c := range keep {
		k, err := RenderCandidate(p, c)
		if err != nil {
			t.Fatalf("%s %s: %v", p, c.ID(), err)
		}
		m := p.Shape.N * p.Shape.P() * p.Shape.Q()
		blocks := (m + c.Config["TileM"] - 1) / c.Config["TileM"]
		if k.Grid[0] > 1<<31-1 || k.Grid[1] < 2 || k.Grid[1] > 65535 || k.Grid[2] != 1 || k.Grid[0]*k.Grid[1] < blocks {
			t.Errorf("%s %s: grid %v for %d blocks, want x ≤ 2^31−1, 2 ≤ y ≤ 65535, x·y ≥ blocks", p, c.ID(), k.Grid, blocks)
		}
		if (k.Grid[0]-1)*k.Grid[1] >= blocks {
			t.Errorf("%s %s: grid %v is wider than %d blocks need", p, c.ID(), k.Grid, blocks)
		}
		if !strings.Contains(k.Source, "#define GRID ") {
			t.Errorf("%s %s: folded grid without GRID", p, c.ID())
		}
	}
}

// TestGenericIndex64Compile NVRTC-compiles generic's 64-bit path for sm_80
// and sm_90: kb87 in fp32 NCHW and bf16 NHWC, and the folded grid in fp16
// NCHW and tf32 NHWC.
func TestGenericIndex64Compile(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	var jobs []compileJob
	for _, x := range []struct {
		spec string
		prec problem.Precision
		lay  problem.Layout
	}{{kb87Spec, problem.FP32, problem.NCHW}, {kb87Spec, problem.BF16, problem.NHWC},
		{foldedSpec, problem.FP16, problem.NCHW}, {foldedSpec, problem.TF32, problem.NHWC}} {
		p := wideProblem(t, x.spec, x.prec, x.lay)
		c, k := renderWide(t, p)
		jobs = append(jobs, compileJob{p.String() + " " + c.ID(), k})
	}
	compileForArchs(t, lib, jobs)
}
