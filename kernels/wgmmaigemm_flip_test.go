package kernels

import (
	"maps"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// TestWGMMAIGEMMFlipFilter: an NHWC data gradient at stride 1 whose
// padding the filter reaches is also searched as the forward on its
// flipped filter (FlipFilter=1): the kernel renders with the forward's
// sizes (C and K swapped, dY's map in, dX's out, padding dilation·(R−1) −
// pad), copies W'[c][R−1−r][S−1−s][k] in a prologue or with its blocks,
// (rounded to TF32 in tf32, so that the main loop rounds only A) and
// compiles for sm_90a to both entry points (split-K too, where the grid
// is small: the epoch then counts every block of the clusters); other
// problems keep no
// FlipFilter candidate and a pin on them is refused with the rule.
func TestWGMMAIGEMMFlipFilter(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	f := WGMMAIGEMM{}
	lim := h100Limits()
	for _, c := range []struct {
		spec       string
		prec       problem.Precision
		fwdPadH    int
		fwdC, fwdK int
	}{
		{"N=4,C=64,H=14,W=14,K=64,R=3,S=3,pad=1,bias=false", problem.TF32, 1, 64, 64},
		{"N=2,C=1024,H=14,W=14,K=256,R=1,S=1,bias=false", problem.TF32, 0, 256, 1024},
		{"N=3,C=13,H=9,W=11,K=12,R=3,S=5,pad_h=1,pad_w=2,dilation_h=2,bias=false", problem.TF32, 3, 12, 13},
		{"N=2,C=64,H=14,W=14,K=128,R=3,S=3,pad=1,bias=false", problem.FP16, 1, 128, 64},
		{"N=2,C=24,H=10,W=10,K=40,R=3,S=3,bias=false", problem.BF16, 2, 40, 24},
		{"N=8,C=512,H=7,W=7,K=512,R=3,S=3,pad=1,bias=false", problem.TF32, 1, 512, 512}, // split-K
		{"N=2,C=13,H=9,W=11,K=16,R=3,S=3,pad=1,bias=false", problem.FP16, 1, 16, 13},    // C not a multiple of 8
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: c.prec, Layout: problem.NHWC, Op: problem.OpDgrad}
		var flip []Candidate
		for _, cand := range kept(f.Space(p, lim)) {
			if cand.Config["FlipFilter"] == 1 {
				flip = append(flip, cand)
			}
		}
		if len(flip) == 0 {
			t.Fatalf("%s: no kept FlipFilter candidate", p)
		}
		k, err := f.Render(p, flip[len(flip)/2].Config)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		s := p.Shape
		for _, want := range []string{
			"filter = RELAYOUT_W;",
			"relayout(in, filter, stages, ticket /",
			"#define PAD_H " + strconv.Itoa(c.fwdPadH) + "\n",
			"#define C " + strconv.Itoa(c.fwdC) + "\n",
			"#define K " + strconv.Itoa(c.fwdK) + "\n",
			"#define H " + strconv.Itoa(s.P()) + "\n",
			"#define P " + strconv.Itoa(s.H) + "\n",
			"#define STRIDE_H 1\n",
			"R * S - 1 - rs", // the flipped tap
			"convgen_wgmmaigemm_dgrad_",
		} {
			if !strings.Contains(k.Source, want) {
				t.Errorf("%s: the source lacks %q", p, want)
			}
		}
		if tf32 := p.Precision == problem.TF32; strings.Contains(k.Source, "= tf32(buf[") != tf32 || strings.Contains(k.Source, "B is W', rounded by its copy") != tf32 {
			t.Errorf("%s: W' rounded by its copy and B's rounding pass skipped: want %v", p, tf32)
		}
		if strings.Contains(k.Source, "in = RELAYOUT_X") {
			t.Errorf("%s: dY copied (only the filter is)", p)
		}
		res, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90a"})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if split := splitOf(flip); split != nil {
			// Split-K: the tile from the grid, the epoch from a ticket over
			// every block of the clusters.
			ks, err := f.Render(p, split.Config)
			if err != nil {
				t.Fatalf("%s %s: %v", p, split.ID(), err)
			}
			if !strings.Contains(ks.Source, "ticket / (TILES_M * TILES_N * SPLITK) + 1") || !strings.Contains(ks.Source, "__cluster_dims__") {
				t.Errorf("%s %s: not a split-K kernel whose epoch counts every block", p, split.ID())
			}
			if _, err := memoCompile(lib, true, ks.Source, nvrtc.Options{Name: ks.Name + ".cu", Arch: "sm_90a"}); err != nil {
				t.Fatalf("%s %s: %v", p, split.ID(), err)
			}
		} else if p.Shape.H == 7 {
			t.Errorf("%s: no FlipFilter split-K candidate on a 7x7 map", p)
		}
		entries := regexp.MustCompile(`\.entry\s+(\w+)`).FindAllStringSubmatch(res.PTX, -1)
		if len(entries) != 2 || !strings.Contains(res.PTX, k.Name+"_prologue") || !strings.Contains(res.PTX, k.Name+"_count") {
			t.Errorf("%s: entry points %v, want %s and its prologue, with the tickets", p, entries, k.Name)
		}
	}

	// Refused: a FlipFilter pin on a strided, NCHW or over-padded data
	// gradient, or on a forward.
	pin := Config{"BM": 128, "BN": 128, "BK": 32, "Warpgroups": 1, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "FlipFilter": 1}
	for _, c := range []struct {
		spec   string
		layout problem.Layout
		op     problem.Op
		want   string
	}{
		{"N=2,C=64,H=14,W=14,K=64,R=3,S=3,stride=2,pad=1", problem.NHWC, problem.OpDgrad, "stride 1"},
		{"N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1", problem.NCHW, problem.OpDgrad, "NHWC data gradient"},
		{"N=2,C=64,H=14,W=14,K=64,R=1,S=1,pad=1", problem.NHWC, problem.OpDgrad, "reach"},
		{"N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1", problem.NHWC, problem.OpFprop, "NHWC data gradient"},
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: problem.TF32, Layout: c.layout, Op: c.op}
		for _, cand := range f.Space(p, lim) {
			if cand.Config["FlipFilter"] == 1 {
				t.Errorf("%s: FlipFilter candidate %s listed", p, cand.ID())
			}
		}
		if _, err := f.Render(p, pin); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Render(FlipFilter=1) = %v, want an error naming %q", p, err, c.want)
		}
	}
}

// splitOf is the first split-K candidate of cands, or nil.
func splitOf(cands []Candidate) *Candidate {
	for i, c := range cands {
		if c.Config["SplitK"] > 1 {
			return &cands[i]
		}
	}
	return nil
}

// TestWGMMAIGEMMPhaseTiles: a folded NHWC data gradient whose C is a
// multiple of BN and K of BK is also searched tiled by phase
// (PhaseTiles=1): each tile's columns are one stride phase's and it runs
// only the k-tiles of the offsets that phase meets (a 3×3 at stride 2:
// 1, 2, 2 and 4 of the union's 4), which the cost model counts; the twins
// render the per-phase tables and compile for sm_90a, in tf32 with
// PhaseFilter twins (B from the phases' filters, gathered by a prologue),
// and StoreRows twins (16-byte stores of a phase's channel runs, the idle
// phases' zeros too); where the phases meet unequal numbers of offsets,
// each with HeavyFirst (the heaviest phases' tiles first, in PT_ORDER);
// other problems and configurations are refused with the rule. By default
// one PhaseFilter twin compiles per problem (the middle one, whose PTX is
// checked) and one HeavyFirst twin (the first or the last, in turn over
// the problems); every one of them under the full sweep.
func TestWGMMAIGEMMPhaseTiles(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	f := WGMMAIGEMM{}
	lim := h100Limits()
	heavyTurn := 0 // the first or the last HeavyFirst twin, in turn
	for _, c := range []struct {
		spec         string
		prec         problem.Precision
		count, table string
		phaseFilter  []string // PhaseFilter's tables (tf32), as rendered
		order        string   // HeavyFirst's PT_ORDER ("": no HeavyFirst twins)
	}{
		{"N=4,C=128,H=28,W=28,K=128,R=3,S=3,stride=2,pad=1,bias=false", problem.FP16, "1, 2, 2, 4", "{0, 0, 0, 0}, {0, 1, 0, 0}, {0, 2, 0, 0}, {0, 1, 2, 3}", nil, "3, 1, 2, 0"},
		{"N=4,C=256,H=14,W=14,K=256,R=3,S=3,stride=2,pad=1,bias=false", problem.TF32, "1, 2, 2, 4", "{0, 0, 0, 0}, {0, 1, 0, 0}, {0, 2, 0, 0}, {0, 1, 2, 3}", nil, "3, 1, 2, 0"},
		{"N=2,C=64,H=15,W=17,K=64,R=3,S=5,stride_h=2,stride_w=3,pad=1,bias=false", problem.TF32, "2, 1, 2, 4, 2, 4", "{0, 1, 0, 0, 0, 0}, {1, 0, 0, 0, 0, 0}, {1, 2, 0, 0, 0, 0}, {0, 1, 3, 4, 0, 0}, {1, 4, 0, 0, 0, 0}, {1, 2, 4, 5, 0, 0}", []string{
			"PT_POS[PT_PHASES][NDP * NDQ] = {{0, 1, -1, -1, -1, -1}, {-1, 0, -1, -1, -1, -1}, {-1, 0, 1, -1, -1, -1}, {0, 1, -1, 2, 3, -1}, {-1, 0, -1, -1, 1, -1}, {-1, 0, 1, -1, 2, 3}}",
			"PT_BASE[PT_PHASES] = {0, 8192, 12288, 20480, 36864, 45056}",
			"PT_PJ[PT_ENTRIES][2] = {{0, 0}, {0, 1}, {1, 0}, {2, 0}, {2, 1}, {3, 0}, {3, 1}, {3, 2}, {3, 3}, {4, 0}, {4, 1}, {5, 0}, {5, 1}, {5, 2}, {5, 3}}",
		}, "3, 5, 0, 2, 4, 1"},
		{"N=2,C=48,H=14,W=14,K=64,R=1,S=1,stride=2,bias=false", problem.TF32, "1", "{0}", nil, ""},   // one active phase: BN = 48 columns
		{"N=4,C=256,H=28,W=28,K=512,R=1,S=1,stride=2,bias=false", problem.FP16, "1", "{0}", nil, ""}, // three idle phases
		{"N=2,C=64,H=15,W=17,K=64,R=3,S=5,stride_h=2,stride_w=3,pad=1,bias=false", problem.BF16, "2, 1, 2, 4, 2, 4", "{0, 1, 0, 0, 0, 0}, {1, 0, 0, 0, 0, 0}, {1, 2, 0, 0, 0, 0}, {0, 1, 3, 4, 0, 0}, {1, 4, 0, 0, 0, 0}, {1, 2, 4, 5, 0, 0}", nil, "3, 5, 0, 2, 4, 1"},
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: c.prec, Layout: problem.NHWC, Op: problem.OpDgrad}
		var twins, stored, gathered, heavy []Candidate
		for _, cand := range kept(f.Space(p, lim)) {
			if cand.Config["HeavyFirst"] == 1 {
				heavy = append(heavy, cand)
			}
			if cand.Config["PhaseTiles"] == 1 && cand.Config["StoreRows"] == 1 {
				stored = append(stored, cand)
			} else if cand.Config["PhaseFilter"] == 1 {
				gathered = append(gathered, cand)
			} else if cand.Config["PhaseTiles"] == 1 {
				twins = append(twins, cand)
				plain := Candidate{Family: cand.Family, Config: maps.Clone(cand.Config)}
				delete(plain.Config, "PhaseTiles")
				delete(plain.Config, "HeavyFirst") // PhaseTiles' alone
				tc, ok1 := PredictedCost(p, cand, lim)
				pc, ok2 := PredictedCost(p, plain, lim)
				if !ok1 || !ok2 || math.IsInf(tc, 0) || math.IsInf(pc, 0) {
					t.Fatalf("%s %s: predicted costs %g (%v), unsplit %g (%v)", p, cand.ID(), tc, ok1, pc, ok2)
				}
				if skips := c.count != "1"; tc > pc || skips && tc == pc {
					t.Errorf("%s %s: predicted %g against its unsplit twin's %g (want below where a phase skips an offset, else equal)", p, cand.ID(), tc, pc)
				}
			}
		}
		if len(twins) == 0 {
			t.Fatalf("%s: no kept PhaseTiles candidate", p)
		}
		if p.Shape.C == 48 {
			// BN = 48 columns: PhaseFilter's 16-byte B copies do not split
			// over two warpgroups, which the rule refuses.
			refused := 0
			for _, cand := range f.Space(p, lim) {
				if cand.Config["PhaseFilter"] == 1 && cand.Rejection.Rule == "phase filter" {
					refused++
				}
			}
			if refused == 0 {
				t.Errorf("%s: no PhaseFilter candidate refused for its B copies", p)
			}
		}
		k, err := f.Render(p, twins[len(twins)/2].Config)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, want := range []string{"PT_COUNT[PT_PHASES] = {" + c.count + "}", "PT_OFF[PT_PHASES][NDP * NDQ] = {" + c.table + "}", "pt_kt(ph, kt)", "kt < kt_count"} {
			if !strings.Contains(k.Source, want) {
				t.Errorf("%s: the source lacks %q", p, want)
			}
		}
		if _, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90a"}); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		// tf32: PhaseFilter twins, B in 16-byte copies of the phases'
		// gathered filters (W'_ph[c][j][k], rounded by the copy).
		if len(gathered) == 0 != (p.Precision != problem.TF32) {
			t.Fatalf("%s: %d PhaseFilter twins (want some in tf32 only)", p, len(gathered))
		}
		for i, g := range gathered {
			if !fullSweep() && i != len(gathered)/2 {
				continue // the middle one, checked below too (all under the full sweep)
			}
			// Every kept PhaseFilter candidate compiles (its B copies split
			// over the copying threads: the rule refuses the others).
			k, err := f.Render(p, g.Config)
			if err != nil {
				t.Fatalf("%s %s: %v", p, g.ID(), err)
			}
			if _, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90a"}); err != nil {
				t.Fatalf("%s %s: %v", p, g.ID(), err)
			}
			for _, want := range c.phaseFilter {
				if !strings.Contains(k.Source, want) {
					t.Errorf("%s %s: the source lacks %q", p, g.ID(), want)
				}
			}
		}
		if len(gathered) > 0 {
			k, err := f.Render(p, gathered[len(gathered)/2].Config)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			res, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90a"})
			if err != nil {
				t.Fatalf("%s PhaseFilter: %v", p, err)
			}
			if !strings.Contains(k.Source, "PT_BASE[ph] + (cc * PT_COUNT[ph] + pos) * K + k") || !strings.Contains(res.PTX, k.Name+"_prologue") ||
				strings.Contains(res.PTX, "cp.async.ca.shared.global") {
				t.Errorf("%s PhaseFilter: want B's 16-byte copies of the gathered filter (no element copies) and a prologue", p)
			}
		}
		// HeavyFirst: every PhaseTiles candidate where the phases' offsets
		// differ, none elsewhere.
		if want := map[bool]int{true: 0, false: len(twins) + len(stored) + len(gathered)}[c.order == ""]; len(heavy) != want {
			t.Errorf("%s: %d HeavyFirst candidates, want %d", p, len(heavy), want)
		}
		if len(heavy) > 0 {
			heavyTurn++
		}
		for i, h := range heavy {
			if !fullSweep() && i != []int{0, len(heavy) - 1}[heavyTurn%2] {
				continue // the first or the last, in turn over the problems (all under the full sweep)
			}
			k, err := f.Render(p, h.Config)
			if err != nil {
				t.Fatalf("%s %s: %v", p, h.ID(), err)
			}
			if !strings.Contains(k.Source, "PT_ORDER[PT_PHASES] = {"+c.order+"}") || !strings.Contains(k.Source, "heavy_first(") {
				t.Errorf("%s %s: the source lacks PT_ORDER = {%s} or its use", p, h.ID(), c.order)
			}
			if _, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90a"}); err != nil {
				t.Fatalf("%s %s: %v", p, h.ID(), err)
			}
		}
		// StoreRows twins: 16-byte stores of the phase's channel runs.
		if len(stored) == 0 {
			t.Fatalf("%s: no PhaseTiles StoreRows twin", p)
		}
		if len(stored) > 0 {
			k, err := f.Render(p, stored[0].Config)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			res, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90a"})
			if err != nil {
				t.Fatalf("%s StoreRows: %v", p, err)
			}
			if !strings.Contains(k.Source, "cc = c - ph * C") || !strings.Contains(res.PTX, "st.global.v4") {
				t.Errorf("%s StoreRows: no 16-byte stores of the phase's channels", p)
			}
		}
	}
	pin := Config{"BM": 128, "BN": 128, "BK": 64, "Warpgroups": 1, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "Fold": 1, "PhaseTiles": 1}
	for _, c := range []struct {
		spec string
		want string
	}{
		{"N=2,C=96,H=14,W=14,K=64,R=3,S=3,stride=2,pad=1", "C = 96 of BN = 128"},
		{"N=2,C=128,H=14,W=14,K=96,R=3,S=3,stride=2,pad=1", "K = 96 a multiple of BK = 64"},
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: problem.FP16, Layout: problem.NHWC, Op: problem.OpDgrad}
		if _, err := f.Render(p, pin); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Render(PhaseTiles=1) = %v, want an error naming %q", p, err, c.want)
		}
	}
	noFold := maps.Clone(pin)
	delete(noFold, "Fold")
	p := problem.Problem{Shape: parseShapes(t, []string{"N=2,C=128,H=14,W=14,K=128,R=3,S=3,pad=1"})[0], Precision: problem.FP16, Layout: problem.NHWC, Op: problem.OpDgrad}
	if _, err := f.Render(p, noFold); err == nil || !strings.Contains(err.Error(), "Fold=1") {
		t.Errorf("%s: Render(PhaseTiles=1 unfolded) = %v, want a refusal naming Fold=1", p, err)
	}
	unphased := maps.Clone(pin)
	delete(unphased, "PhaseTiles")
	unphased["HeavyFirst"] = 1
	p.Shape.StrideH, p.Shape.StrideW = 2, 2
	if _, err := f.Render(p, unphased); err == nil || !strings.Contains(err.Error(), "PhaseTiles=1") {
		t.Errorf("%s: Render(HeavyFirst=1 without PhaseTiles) = %v, want a refusal naming PhaseTiles=1", p, err)
	}
}
