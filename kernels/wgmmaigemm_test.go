package kernels

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// wgmmaIGEMMShapes are channel-heavy NHWC shapes of the kind wgmmaigemm is
// for (ResNet-50's, at N=32), and odd ones its predication must handle.
var wgmmaIGEMMShapes = []string{
	"N=32,C=64,H=56,W=56,K=64,R=3,S=3,pad=1",
	"N=32,C=256,H=56,W=56,K=512,R=1,S=1,stride=2,bias=false",
	"N=32,C=512,H=7,W=7,K=2048,R=1,S=1",
	"N=3,C=24,H=19,W=23,K=40,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=2,dilation_h=2",
	"N=1,C=8,H=9,W=9,K=13,R=3,S=3,pad=1",
}

// TestWGMMAIGEMMServes checks which problems the family serves and that
// every shape above keeps candidates on sm_90a in fp16, bf16 and tf32 NHWC
// and in tf32 NCHW.
func TestWGMMAIGEMMServes(t *testing.T) {
	lim := DefaultLimits(90)
	lim.SM90a = true
	f := WGMMAIGEMM{}
	for _, spec := range wgmmaIGEMMShapes {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
			p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NHWC}
			if err := f.Serves(p); err != nil {
				t.Errorf("%s %s: %v", spec, prec, err)
				continue
			}
			if len(kept(f.Space(p, lim))) == 0 {
				t.Errorf("%s %s: no candidate kept", spec, prec)
			}
		}
		p := problem.Problem{Shape: s, Precision: problem.TF32, Layout: problem.NCHW}
		if err := f.Serves(p); err != nil {
			t.Errorf("%s tf32 NCHW: %v", spec, err)
		} else if len(kept(f.Space(p, lim))) == 0 {
			t.Errorf("%s tf32 NCHW: no candidate kept", spec)
		}
	}
	// tf32 NCHW with C·R·S = 27: the element copies decline it (their B
	// copies 16 bytes of a filter row), the relayout serves it.
	odd, _ := problem.ParseShape("N=2,C=3,H=9,W=9,K=16,R=3,S=3")
	oddP := problem.Problem{Shape: odd, Precision: problem.TF32, Layout: problem.NCHW}
	if err := f.Serves(oddP); err != nil {
		t.Errorf("tf32 NCHW with C·R·S = 27: %v, want it served relayed out", err)
	}
	oddLim := DefaultLimits(90)
	oddLim.SM90a = true
	var relaidOut int
	for _, c := range f.Space(oddP, oddLim) {
		switch {
		case c.Config["Relayout"] == 0 && (c.Rejected == "" || !strings.Contains(c.Rejected, "C·R·S divisible by 4")):
			t.Errorf("tf32 NCHW with C·R·S = 27: %s %q, want rejected naming C·R·S", c.ID(), c.Rejected)
		case c.Config["Relayout"] == 1 && c.Rejected == "":
			relaidOut++
		}
	}
	if relaidOut == 0 {
		t.Error("tf32 NCHW with C·R·S = 27: no relayed-out candidate kept")
	}
	s, _ := problem.ParseShape("N=2,C=12,H=9,W=9,K=16,R=3,S=3")
	for _, p := range []problem.Problem{
		{Shape: s, Precision: problem.FP16, Layout: problem.NCHW, Op: problem.OpDgrad}, // C=12: dX's channels are the relayout's columns
		{Shape: s, Precision: problem.FP16, Layout: problem.NHWC},                      // C=12 is no multiple of 8
	} {
		if f.Serves(p) == nil {
			t.Errorf("%s: served, want declined", p)
		}
	}
	for _, pr := range []problem.Precision{problem.TF32, problem.TF32x3} {
		if p := (problem.Problem{Shape: s, Precision: pr, Layout: problem.NHWC}); f.Serves(p) != nil {
			t.Errorf("%s: declined: %v", p, f.Serves(p))
		}
	}
	p := problem.Problem{Shape: s, Precision: problem.TF32, Layout: problem.NHWC}
	for _, c := range f.Space(p, DefaultLimits(90)) {
		if !strings.HasPrefix(c.Rejected, "arch:") {
			t.Errorf("%s without SM90a: %q, want an arch rejection", c.ID(), c.Rejected)
		}
	}
}

// TestWGMMAIGEMMFrontEnd runs a few kept configurations of the shapes and
// precisions above (by default one of every shape in two of fp16, bf16 and
// tf32 NHWC, in turn, so that each precision meets most shapes; every kept
// one of every shape and precision under the full sweep), and the
// unsearched paths a pin renders (the producer warpgroup, no swizzle,
// 256-byte rows), through NVRTC's front end for sm_90a and checks the
// wgmma of the configuration's N in the PTX (ptxas, which checks the inline
// PTX, runs on the GPU machine's NVRTC).
func TestWGMMAIGEMMFrontEnd(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	lim := DefaultLimits(90)
	lim.SM90a = true
	var jobs []compileJob
	for i, spec := range wgmmaIGEMMShapes {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for j, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
			if !fullSweep() && (i+j)%3 == 2 {
				continue // two of the three precisions per shape, in turn (all with the full sweep)
			}
			p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NHWC}
			k := kept(WGMMAIGEMM{}.Space(p, lim))
			// One configuration per (shape, precision), rotating through the
			// kept ones; all of them with the full sweep.
			if !fullSweep() && len(k) > 0 {
				k = k[(3*i+j)%len(k) : (3*i+j)%len(k)+1]
			}
			for _, c := range k {
				kern, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("%s %s: %v", p, c.ID(), err)
				}
				jobs = append(jobs, compileJob{fmt.Sprintf("%s %s", p, c.ID()), kern})
			}
		}
	}
	// The paths the space no longer searches but a pin renders: the
	// warp-specialised producer, no swizzle, 256-byte rows (no swizzle).
	s, err := problem.ParseShape(wgmmaIGEMMShapes[3])
	if err != nil {
		t.Fatal(err)
	}
	for i, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
		p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NHWC}
		row := 128 / prec.ElementBytes()
		for _, cfg := range []Config{
			{"BM": 128, "BN": 128, "BK": row, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 1, "Swizzle": 1},
			{"BM": 128, "BN": 64, "BK": row, "Warpgroups": 1, "Stages": 4, "BlocksPerSM": 1, "Producer": i % 2, "Swizzle": 0},
			{"BM": 64, "BN": 64, "BK": 2 * row, "Warpgroups": 1, "Stages": 3, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 0},
		} {
			c := Candidate{Family: "wgmmaigemm", Config: cfg}
			kern, err := RenderCandidate(p, c)
			if err != nil {
				t.Fatalf("%s %s: %v", p, c.ID(), err)
			}
			jobs = append(jobs, compileJob{fmt.Sprintf("%s %s (pin)", p, c.ID()), kern})
		}
	}
	// tf32 NCHW (A copied element by element): one kept configuration per
	// shape (all with the full sweep), and on the fourth the producer
	// warpgroup and no swizzle.
	for i, spec := range wgmmaIGEMMShapes {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		p := problem.Problem{Shape: s, Precision: problem.TF32, Layout: problem.NCHW}
		k := kept(WGMMAIGEMM{}.Space(p, lim))
		if !fullSweep() && len(k) > 0 {
			k = k[i%len(k) : i%len(k)+1]
		}
		if i == 3 {
			k = append(k, Candidate{Family: "wgmmaigemm", Config: Config{"BM": 128, "BN": 128, "BK": 32, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 1, "Swizzle": 1}},
				Candidate{Family: "wgmmaigemm", Config: Config{"BM": 128, "BN": 256, "BK": 32, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 1, "Swizzle": 1, "ARegs": 1}},
				Candidate{Family: "wgmmaigemm", Config: Config{"BM": 64, "BN": 64, "BK": 32, "Warpgroups": 1, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 0}},
				Candidate{Family: "wgmmaigemm", Config: Config{"BM": 128, "BN": 128, "BK": 32, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "Relayout": 1, "StoreRows": 1, "TruncB": 1}})
		}
		for _, c := range k {
			kern, err := RenderCandidate(p, c)
			if err != nil {
				t.Fatalf("%s %s: %v", p, c.ID(), err)
			}
			jobs = append(jobs, compileJob{fmt.Sprintf("%s %s", p, c.ID()), kern})
		}
	}
	// 3xtf32 (operands split in shared memory, three wgmmas a k step): one
	// kept configuration of every other shape in NHWC and in NCHW (element
	// copies and relayed out, in turn; all with the full sweep).
	for i, spec := range wgmmaIGEMMShapes {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for j, layout := range []problem.Layout{problem.NHWC, problem.NCHW} {
			p := problem.Problem{Shape: s, Precision: problem.TF32x3, Layout: layout}
			k := kept(WGMMAIGEMM{}.Space(p, lim))
			if len(k) == 0 {
				t.Errorf("%s: no kept configuration", p)
			}
			if !fullSweep() && (i+j)%2 == 1 {
				continue
			}
			if !fullSweep() && len(k) > 0 {
				k = k[i%len(k) : i%len(k)+1]
			}
			for _, c := range k {
				kern, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("%s %s: %v", p, c.ID(), err)
				}
				jobs = append(jobs, compileJob{fmt.Sprintf("%s %s", p, c.ID()), kern})
			}
		}
	}
	// 3xtf32's data gradient: one kept configuration (all with the full
	// sweep) of each way it is read: B element copies at stride 1 (NHWC)
	// and the flipped filter's copy, folded with phase tiles (NHWC, stride
	// 2), folded NCHW with A's runs (NDQ a multiple of 4) and with A
	// element copies (the flagship's folded columns); every shape in both
	// layouts with the full sweep.
	for i, spec := range []string{
		"N=2,C=16,H=9,W=9,K=24,R=3,S=3,pad=1",
		"N=2,C=16,H=9,W=9,K=24,R=3,S=3,stride=2,pad=1",
		"N=2,C=8,H=12,W=12,K=16,R=1,S=7,stride=1,pad_w=3",
		"N=2,C=3,H=35,W=35,K=16,R=11,S=11,stride=4,pad=2",
	} {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for j, layout := range []problem.Layout{problem.NHWC, problem.NCHW} {
			p := problem.Problem{Shape: s, Precision: problem.TF32x3, Layout: layout, Op: problem.OpDgrad}
			if WGMMAIGEMM.Serves(WGMMAIGEMM{}, p) != nil || !fullSweep() && (i < 2) != (j == 0) {
				continue // NHWC for the first two shapes, NCHW for the others (both with the full sweep)
			}
			k := kept(WGMMAIGEMM{}.Space(p, lim))
			if len(k) == 0 {
				t.Errorf("%s: no kept configuration", p)
			}
			if !fullSweep() {
				var pick []Candidate
				seen := map[string]bool{}
				for j, c := range k {
					// one of each way B is read (FlipFilter, PhaseTiles), in turn
					way := fmt.Sprint(c.Config["FlipFilter"], c.Config["PhaseTiles"])
					if !seen[way] && (j+i)%2 == 0 {
						seen[way] = true
						pick = append(pick, c)
					}
				}
				k = pick
			}
			for _, c := range k {
				kern, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("%s %s: %v", p, c.ID(), err)
				}
				jobs = append(jobs, compileJob{fmt.Sprintf("%s %s", p, c.ID()), kern})
			}
		}
	}
	runCompileJobs(t, jobs, func(j compileJob) string {
		res, err := memoCompile(lib, true, j.kernel.Source, nvrtc.Options{Name: j.kernel.Name + ".cu", Arch: "sm_90a"})
		if err != nil {
			return "front end: " + err.Error()
		}
		k := "k16"
		if strings.Contains(j.id, "tf32") {
			k = "k8"
		}
		want := fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%d%s", j.kernel.Config["BN"], k)
		if !strings.Contains(res.PTX, want) {
			return fmt.Sprintf("PTX lacks %q", want)
		}
		if j.kernel.Config["ARegs"] == 1 && !strings.Contains(res.PTX, "ldmatrix.sync.aligned.m8n8.x4.shared.b16") {
			// tf32's A through registers: read with ldmatrix, rounded there.
			return "ARegs PTX lacks ldmatrix"
		}
		if !strings.Contains(res.PTX, "cp.async.cg.shared.global") && !(strings.Contains(j.id, "op=dgrad") && strings.Contains(j.id, "layout=nchw")) {
			return "PTX lacks the 16-byte cp.async" // (a folded NCHW data gradient copies 4-byte elements)
		}
		if strings.Contains(j.id, "3xtf32") && strings.Count(res.PTX, want) < 3 {
			return "3xtf32 PTX lacks the three wgmmas of a k step"
		}
		if strings.Contains(j.id, "layout=nchw") && j.kernel.Config["Relayout"] == 1 && (!strings.Contains(res.PTX, j.kernel.Name+"_count") || !strings.Contains(res.PTX, ".entry "+j.kernel.Name+"_prologue")) {
			return "a relayed-out NCHW kernel without its tickets or its prologue"
		}
		if strings.Contains(j.id, "layout=nchw") && !strings.Contains(j.id, "op=dgrad") && j.kernel.Config["Relayout"] == 0 &&
			(!fourByteCopy.MatchString(res.PTX) || !strings.Contains(j.id, "3xtf32") && !tf32Rounding.MatchString(res.PTX)) {
			return "NCHW PTX lacks A's 4-byte cp.async or (tf32) the rounding to TF32" // (3xtf32 splits instead of rounding)
		}
		return ""
	})
}

// TestWGMMAIGEMMSpaceProperty: for 300 random valid groups=1 NHWC problems
// whose C the copies allow, wgmmaigemm serves fp16, bf16 and tf32 (and
// the tf32 ones in NCHW too) on
// sm_90a, keeps at least one candidate (after the soft rules, as
// Enumerate admits them), and every kept candidate renders with a launch
// that covers the output (channel tiles along x, pixel tiles along y, the
// SplitK blocks of a cluster along z) within the device's limits.
func TestWGMMAIGEMMSpaceProperty(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	rng := rand.New(rand.NewPCG(23, 1))
	lim := DefaultLimits(90)
	lim.SM90a = true
	f := WGMMAIGEMM{}
	for i := 0; i < 300; i++ {
		s := randomShape(rng)
		s.Groups, s.C = 1, 8*(1+s.C/8)
		if s.Validate() != nil {
			continue
		}
		prec := []problem.Precision{problem.FP16, problem.BF16, problem.TF32}[i%3]
		layouts := []problem.Layout{problem.NHWC}
		if prec == problem.TF32 {
			layouts = append(layouts, problem.NCHW)
		}
		for _, lay := range layouts {
			p := problem.Problem{Shape: s, Precision: prec, Layout: lay}
			keep := servedKept(t, f, p, lim)
			if len(keep) == 0 {
				continue
			}
			m := s.N * s.P() * s.Q()
			for _, c := range keep {
				k, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("%s %s: %v", p, c.ID(), err)
				}
				bm, bn := c.Config["BM"], c.Config["BN"]
				threads := k.Block[0] * k.Block[1] * k.Block[2]
				grid := k.Grid
				if family.CeilDiv(m, bm) > 65535 { // the pixel tiles along x
					grid[0], grid[1] = grid[1], grid[0]
				}
				if grid[0] != family.CeilDiv(s.K, bn) || grid[1] != family.CeilDiv(m, bm) || grid[2] != max(1, c.Config["SplitK"]) {
					t.Errorf("%s %s: grid %v does not cover %d x %d outputs in %d x %d tiles", p, c.ID(), k.Grid, m, s.K, bm, bn)
				}
				if threads != 128*(c.Config["Warpgroups"]+c.Config["Producer"]) || threads > lim.MaxThreadsPerBlock ||
					k.SharedBytes > lim.MaxSharedPerBlock || k.Grid[1] > 65535 {
					t.Errorf("%s %s: %d threads, %d B shared, grid %v", p, c.ID(), threads, k.SharedBytes, k.Grid)
				}
			}
		}
	}
}

// TestWGMMAIGEMMRenderGridLimit: a configuration whose pixel tiles exceed
// gridDim.y's 65535 runs them along x (the channel tiles along y); one
// within it keeps the pixel tiles along y (the kernels cached before).
func TestWGMMAIGEMMRenderGridLimit(t *testing.T) {
	s, err := problem.ParseShape("N=64,C=8,H=256,W=256,K=8,R=3,S=3,pad=1") // M = 64·256·256 = 65536·64
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: s, Precision: problem.FP16, Layout: problem.NHWC}
	small := Config{"BM": 64, "BN": 64, "BK": 64, "Warpgroups": 1, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1}
	if k, err := (WGMMAIGEMM{}).Render(p, small); err != nil || k.Grid != [3]int{65536, 1, 1} || !strings.Contains(k.Source, "m0 = blockIdx.x * BM") {
		t.Errorf("BM=64 over M=%d: %v, grid %v; want the 65536 pixel tiles along x", 64*256*256, err, k.Grid)
	}
	big := Config{"BM": 128, "BN": 64, "BK": 64, "Warpgroups": 1, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1}
	if k, err := (WGMMAIGEMM{}).Render(p, big); err != nil || k.Grid[1] != 32768 || !strings.Contains(k.Source, "m0 = blockIdx.y * BM") {
		t.Errorf("BM=128: %v, grid %v; want 32768 pixel tiles along y", err, k.Grid)
	}
}

// TestWGMMAIGEMMWide: a problem with a tensor of 2^31 elements or more
// (KernelBench's pointwise 1×1 on 1024² at N=16: a 2.1·10⁹-element output)
// is served with 64-bit image offsets in fp16 NHWC and tf32 NCHW, its
// kept candidates render with them and compile for sm_90a; one whose
// single image passes 2^31 elements is refused naming generic; a small
// problem renders 32-bit offsets.
func TestWGMMAIGEMMWide(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	lim := DefaultLimits(90)
	lim.SM90a = true
	big, err := problem.ParseShape("N=16,C=64,H=1024,W=1024,K=128,R=1,S=1,bias=false")
	if err != nil {
		t.Fatal(err)
	}
	var jobs []compileJob
	for _, p := range []problem.Problem{{Shape: big, Precision: problem.FP16, Layout: problem.NHWC}, {Shape: big, Precision: problem.TF32, Layout: problem.NCHW}} {
		if err := (WGMMAIGEMM{}).Serves(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		k := kept(WGMMAIGEMM{}.Space(p, lim))
		if len(k) == 0 {
			t.Fatalf("%s: no kept candidate", p)
		}
		kern, err := RenderCandidate(p, k[0])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(kern.Source, "long long image;") {
			t.Errorf("%s: the kernel keeps 32-bit image offsets", p)
		}
		jobs = append(jobs, compileJob{fmt.Sprintf("%s %s", p, k[0].ID()), kern})
	}
	runCompileJobs(t, jobs, func(j compileJob) string {
		if _, err := memoCompile(lib, true, j.kernel.Source, nvrtc.Options{Name: j.kernel.Name + ".cu", Arch: "sm_90a"}); err != nil {
			return "front end: " + err.Error()
		}
		return ""
	})
	huge, err := problem.ParseShape("N=2,C=64,H=8192,W=8192,K=8,R=1,S=1") // one image: 2^32 elements
	if err != nil {
		t.Fatal(err)
	}
	if err := (WGMMAIGEMM{}).Serves(problem.Problem{Shape: huge, Precision: problem.FP16, Layout: problem.NHWC}); err == nil || !strings.Contains(err.Error(), "generic") {
		t.Errorf("an image of 2^32 elements: %v, want a refusal naming generic", err)
	}
	small, _ := problem.ParseShape("N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1")
	ps := problem.Problem{Shape: small, Precision: problem.FP16, Layout: problem.NHWC}
	if kern, err := RenderCandidate(ps, kept(WGMMAIGEMM{}.Space(ps, lim))[0]); err != nil || strings.Contains(kern.Source, "long long image") {
		t.Errorf("a small problem: %v; want 32-bit image offsets", err)
	}
}

// s4x3 is ResNet-50's s4-3x3 layer at N=32: 13 x 4 tiles of 128 x 128 for
// 132 SMs, 72 k-tiles of 64 fp16 taps (144 of 32 in tf32).
const s4x3 = "N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1"

// splitConfig is a configuration of 128-byte tile rows in prec.
func splitConfig(prec problem.Precision, bm, wgs, bn, blocksPerSM, stages, split int) Config {
	return Config{"BM": bm, "BN": bn, "BK": 128 / prec.ElementBytes(), "Warpgroups": wgs, "Stages": stages,
		"BlocksPerSM": blocksPerSM, "Producer": 0, "Swizzle": 1, "SplitK": split}
}

// TestWGMMAIGEMMSplitKSpace: split-K candidates are listed, and some kept,
// for s4-3x3 (52 tiles of 128 x 128) and s3-3x3 (98) in every precision,
// each a grid of TilesN x TilesM x SplitK with the partial tile in its
// shared memory; none for a shape whose plain grid fills the SMs (s1-3x3:
// 3136 tiles of 128 x 64). The unsplit configurations keep their IDs
// (no SplitK knob), and SplitK=1 renders the unsplit kernel.
func TestWGMMAIGEMMSplitKSpace(t *testing.T) {
	lim := DefaultLimits(90)
	lim.SM90a = true
	f := WGMMAIGEMM{}
	for _, spec := range []string{s4x3, "N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1", "N=32,C=64,H=56,W=56,K=64,R=3,S=3,pad=1"} {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		big := s.C == 64
		for _, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
			p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NHWC}
			listed, keptSplit := 0, map[int]int{}
			for _, c := range f.Space(p, lim) {
				sk, ok := c.Config["SplitK"]
				if !ok {
					continue
				}
				listed++
				if c.Rejected != "" {
					continue
				}
				keptSplit[sk]++
				k, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("%s %s: %v", p, c.ID(), err)
				}
				bm, bn := c.Config["BM"], c.Config["BN"]
				tiles := family.CeilDiv(s.K, bn) * family.CeilDiv(s.N*s.P()*s.Q(), bm)
				slots := lim.SMs * c.Config["BlocksPerSM"]
				full := float64(tiles) / float64(family.CeilDiv(tiles, slots)*slots)
				if k.Grid != [3]int{family.CeilDiv(s.K, bn), family.CeilDiv(s.N*s.P()*s.Q(), bm), sk} || (tiles >= lim.SMs && full >= 0.9) {
					t.Errorf("%s %s: grid %v (%d tiles, waves %.0f%% full), want z = SplitK, and fewer tiles than %d SMs or waves less than 90%% full",
						p, c.ID(), k.Grid, tiles, 100*full, lim.SMs)
				}
				if k.SharedBytes < bm*(bn+8)*4 || !strings.Contains(k.Source, fmt.Sprintf("__cluster_dims__(1, 1, SPLITK)")) ||
					!strings.Contains(k.Source, fmt.Sprintf("#define SPLITK %d ", sk)) {
					t.Errorf("%s %s: %d B shared for a %d x %d partial tile, or no cluster of %d in the source", p, c.ID(), k.SharedBytes, bm, bn, sk)
				}
			}
			switch {
			case big && listed > 0:
				t.Errorf("%s: %d split-K candidates for a grid that fills the SMs", p, listed)
			case !big && (keptSplit[2] == 0 || keptSplit[4] == 0):
				t.Errorf("%s: kept split-K candidates %v, want SplitK 2 and 4", p, keptSplit)
			}
		}
	}
	s, err := problem.ParseShape(s4x3)
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: s, Precision: problem.FP16, Layout: problem.NHWC}
	one, err := f.Render(p, splitConfig(problem.FP16, 128, 2, 128, 1, 4, 1))
	if err != nil {
		t.Fatal(err)
	}
	plain := splitConfig(problem.FP16, 128, 2, 128, 1, 4, 0)
	delete(plain, "SplitK")
	none, err := f.Render(p, plain)
	if err != nil {
		t.Fatal(err)
	}
	if one.Source != none.Source || one.Launch != none.Launch || one.Config.String() != plain.String() || strings.Contains(none.Source, "SPLITK") {
		t.Errorf("SplitK=1 renders %s (%v), the unsplit kernel %s (%v); want the same unsplit kernel", one.Config, one.Launch, none.Config, none.Launch)
	}
	for _, bad := range []struct {
		cfg  Config
		want string
	}{
		{splitConfig(problem.FP16, 128, 2, 128, 1, 4, 3), "SplitK must be"},
		{splitConfig(problem.FP16, 128, 2, 128, 1, 4, 16), "SplitK must be"},
		{func() Config { c := splitConfig(problem.FP16, 128, 2, 128, 1, 4, 2); c["Producer"] = 1; return c }(), "Producer=0"},
	} {
		if _, err := f.Render(p, bad.cfg); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err %v, want %q", bad.cfg, err, bad.want)
		}
	}
	// Fewer than two k-tiles a block: 216 taps are 4 k-tiles of 64 fp16.
	s, err = problem.ParseShape("N=3,C=24,H=9,W=11,K=40,R=3,S=3,pad=1")
	if err != nil {
		t.Fatal(err)
	}
	p = problem.Problem{Shape: s, Precision: problem.FP16, Layout: problem.NHWC}
	if _, err := f.Render(p, splitConfig(problem.FP16, 64, 1, 64, 1, 4, 4)); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Errorf("SplitK=4 over 4 k-tiles: err %v, want a refusal", err)
	}
	if _, err := f.Render(p, splitConfig(problem.FP16, 64, 1, 64, 1, 4, 2)); err != nil {
		t.Errorf("SplitK=2 over 4 k-tiles: %v", err)
	}
}

// TestWGMMAIGEMMSplitKFrontEnd runs split-K kernels through NVRTC's front end
// for sm_90a: s4-3x3 in fp16, bf16 and tf32 with SplitK 2 and 4, without
// a chain, with scale_shift,relu and residual,relu, and storing another
// output type; SplitK=8 on 64 x 64 tiles; an odd K (41: single-channel
// stores) and a partial pixel tile. Each PTX must declare the cluster
// (.reqnctapercluster) and read the other blocks' partial tiles
// (ld.shared::cluster) between cluster barriers.
func TestWGMMAIGEMMSplitKFrontEnd(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	s4, err := problem.ParseShape(s4x3)
	if err != nil {
		t.Fatal(err)
	}
	odd, err := problem.ParseShape("N=3,C=24,H=9,W=11,K=41,R=3,S=3,pad=1")
	if err != nil {
		t.Fatal(err)
	}
	chain := func(spec string) epilogue.Chain {
		c, err := epilogue.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	outOther := map[problem.Precision]problem.Storage{problem.FP16: problem.StorageFP32, problem.BF16: problem.StorageFP16, problem.TF32: problem.StorageBF16}
	type job struct {
		p   problem.Problem
		cfg Config
	}
	var todo []job
	for i, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
		variants := []problem.Problem{
			{Shape: s4, Precision: prec, Layout: problem.NHWC},
			{Shape: s4, Precision: prec, Layout: problem.NHWC, Epilogue: chain("scale_shift,relu")},
			{Shape: s4, Precision: prec, Layout: problem.NHWC, Epilogue: chain("residual,relu")},
			{Shape: s4, Precision: prec, Layout: problem.NHWC, OutPrecision: outOther[prec]},
		}
		for j, p := range variants {
			cfg := splitConfig(prec, 128, 2, 128, 1, 4, 4)
			if (i+j)%2 == 1 {
				cfg = splitConfig(prec, 64, 1, 128, 2, 4, 2)
			}
			todo = append(todo, job{p, cfg})
		}
	}
	todo = append(todo,
		job{problem.Problem{Shape: s4, Precision: problem.FP16, Layout: problem.NHWC, Epilogue: chain("residual,relu")}, splitConfig(problem.FP16, 64, 1, 64, 1, 4, 8)},
		job{problem.Problem{Shape: odd, Precision: problem.TF32, Layout: problem.NHWC, Epilogue: chain("scale_shift,relu")}, splitConfig(problem.TF32, 128, 1, 64, 1, 3, 2)},
		job{problem.Problem{Shape: odd, Precision: problem.BF16, Layout: problem.NHWC, OutPrecision: problem.StorageFP32}, splitConfig(problem.BF16, 64, 1, 64, 2, 3, 2)},
	)
	var jobs []compileJob
	for _, j := range todo {
		k, err := RenderCandidate(j.p, Candidate{Family: "wgmmaigemm", Config: j.cfg})
		if err != nil {
			t.Fatalf("%s %s: %v", j.p, j.cfg, err)
		}
		if k.Grid[2] != j.cfg["SplitK"] {
			t.Errorf("%s %s: grid %v, want z = SplitK", j.p, j.cfg, k.Grid)
		}
		jobs = append(jobs, compileJob{fmt.Sprintf("%s %s", j.p, j.cfg), k})
	}
	runCompileJobs(t, jobs, func(j compileJob) string {
		res, err := memoCompile(lib, true, j.kernel.Source, nvrtc.Options{Name: j.kernel.Name + ".cu", Arch: "sm_90a"})
		if err != nil {
			return "front end: " + err.Error()
		}
		want := []string{fmt.Sprintf(".reqnctapercluster 1, 1, %d", j.kernel.Config["SplitK"]), "ld.shared::cluster.v4.f32",
			"barrier.cluster.arrive.release.aligned", "barrier.cluster.wait.acquire.aligned", "mapa.shared::cluster.u32", "wgmma.mma_async"}
		for _, w := range want {
			if !strings.Contains(res.PTX, w) {
				return fmt.Sprintf("PTX lacks %q", w)
			}
		}
		return ""
	})
}

// wgmmaDgradShapes are the stride-1 data gradients wgmmaigemm's dgrad is
// for: ResNet-50's s1-3x3 and s3-3x3 and a 1x1 (C=64 → K=256) at N=32,
// and an odd dilated shape (partial pixel and channel tiles, a padding
// wider than the taps reach).
var wgmmaDgradShapes = []string{
	"N=32,C=64,H=56,W=56,K=64,R=3,S=3,pad=1",
	"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1",
	"N=32,C=64,H=56,W=56,K=256,R=1,S=1",
	"N=3,C=24,H=9,W=11,K=40,R=3,S=3,pad=2,dilation=2",
}

// dgradSplitConfigs are split-K pins for a dgrad shape: SplitK 2 and 4 on
// 64 x 64 tiles and SplitK 2 on 128 x 128 with two warpgroups, those that
// leave every block at least two k-tiles (the odd shape's 360 entries are
// 6 k-tiles: no SplitK=4).
func dgradSplitConfigs(t *testing.T, p problem.Problem) []Config {
	t.Helper()
	var out []Config
	for _, cfg := range []Config{
		splitConfig(p.Precision, 64, 1, 64, 1, 4, 2),
		splitConfig(p.Precision, 64, 1, 64, 2, 3, 4),
		splitConfig(p.Precision, 128, 2, 128, 1, 4, 2),
	} {
		ktiles := family.CeilDiv(p.Shape.K*p.Shape.R*p.Shape.S, cfg["BK"])
		if ktiles/cfg["SplitK"] >= 2 {
			out = append(out, cfg)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no split-K pin leaves two k-tiles a block", p)
	}
	return out
}

// TestWGMMAIGEMMDgradServes: op=dgrad is served at stride 1 in fp16 and
// bf16 NHWC with K and C multiples of 8 (C any as the forward on the
// flipped filter, FlipFilter=1), and every shape above keeps
// candidates on sm_90a whose launch covers dX (C channels along x, N·H·W
// pixels along y, the SplitK blocks along z); TF32, strides, NCHW, K or C
// not multiples of 8, a chain, another output type, Swizzle=0 and op=wgrad
// are refused with their reasons, and the forward keeps its kernels' names.
func TestWGMMAIGEMMDgradServes(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lim := DefaultLimits(90)
	lim.SM90a = true
	f := WGMMAIGEMM{}
	for _, spec := range wgmmaDgradShapes {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, prec := range []problem.Precision{problem.FP16, problem.BF16} {
			p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NHWC, Op: problem.OpDgrad}
			keep := servedKept(t, f, p, lim)
			if len(keep) == 0 {
				continue
			}
			m := s.N * s.H * s.W
			for _, c := range keep {
				k, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("%s %s: %v", p, c.ID(), err)
				}
				bm, bn := c.Config["BM"], c.Config["BN"]
				if k.Grid != [3]int{family.CeilDiv(s.C, bn), family.CeilDiv(m, bm), max(1, c.Config["SplitK"])} {
					t.Errorf("%s %s: grid %v does not cover %d pixels x %d channels in %d x %d tiles", p, c.ID(), k.Grid, m, s.C, bm, bn)
				}
				flip := c.Config["FlipFilter"] == 1 // the forward on the flipped filter: B K-major (TestWGMMAIGEMMFlipFilter)
				if !strings.HasPrefix(k.Name, "convgen_wgmmaigemm_dgrad_"+string(prec)+"_") || !flip && !strings.Contains(k.Source, "p, 1, 1, 0, 1;") {
					t.Errorf("%s %s: kernel %s without the dgrad name or a transposed B (imm-trans-b 1)", p, c.ID(), k.Name)
				}
			}
		}
	}

	odd, err := problem.ParseShape(wgmmaDgradShapes[3])
	if err != nil {
		t.Fatal(err)
	}
	shape := func(spec string) problem.Shape {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	chain, err := epilogue.Parse("relu")
	if err != nil {
		t.Fatal(err)
	}
	dgrad := func(s problem.Shape, prec problem.Precision, lay problem.Layout) problem.Problem {
		return problem.Problem{Shape: s, Precision: prec, Layout: lay, Op: problem.OpDgrad}
	}
	withChain := dgrad(odd, problem.FP16, problem.NHWC)
	withChain.Epilogue = chain
	withOut := dgrad(odd, problem.BF16, problem.NHWC)
	withOut.OutPrecision = problem.StorageFP32
	for _, tc := range []struct {
		p    problem.Problem
		want string
	}{
		{dgrad(shape("N=2,C=16,H=9,W=9,K=18,R=3,S=3,pad=1"), problem.TF32, problem.NHWC), "K divisible by 4"},
		{dgrad(shape("N=2,C=12,H=9,W=9,K=16,R=3,S=3,stride=2,pad=1"), problem.FP16, problem.NHWC), "folded in NHWC with C divisible by 8"},
		{dgrad(shape("N=2,C=20,H=9,W=9,K=16,R=3,S=3,stride_w=2,pad=1"), problem.BF16, problem.NHWC), "folded in NHWC with C divisible by 8"},
		{dgrad(shape("N=2,C=12,H=9,W=9,K=16,R=3,S=3,pad=1"), problem.FP16, problem.NCHW), "C divisible by 8"}, // relayed out
		{dgrad(shape("N=2,C=16,H=9,W=9,K=20,R=3,S=3,pad=1"), problem.FP16, problem.NHWC), "K divisible by 8"},
		{withChain, problem.ErrEpilogueOp.Error()},
		{withOut, problem.ErrOutPrecisionOp.Error()},
		{problem.Problem{Shape: odd, Precision: problem.FP16, Layout: problem.NHWC, Op: problem.OpWgrad}, "not op=wgrad"},
	} {
		err := f.Serves(tc.p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s (epilogue %q, out %q): err %v, want one saying %q", tc.p, tc.p.Epilogue, tc.p.OutPrecision, err, tc.want)
		}
	}
	// C not a multiple of 8 at stride 1 in NHWC: only the forward on the
	// flipped filter (FlipFilter=1) copies it; the others are refused.
	oddC := dgrad(shape("N=2,C=12,H=9,W=9,K=16,R=3,S=3,pad=1"), problem.BF16, problem.NHWC)
	if err := f.Serves(oddC); err != nil {
		t.Errorf("%s: %v, want it served (FlipFilter=1)", oddC, err)
	}
	for _, c := range f.Space(oddC, lim) {
		if c.Config["FlipFilter"] == 0 && (c.Rejection.Soft || !strings.Contains(c.Rejected, "C divisible by 8")) {
			t.Errorf("%s %s: rejection %+v, want one saying C divisible by 8", oddC, c.ID(), c.Rejection)
		}
	}
	if err := f.SupportsOutPrecision(dgrad(odd, problem.FP16, problem.NHWC)); err == nil {
		t.Error("SupportsOutPrecision(dgrad): nil, want a refusal (dX is stored in the input's type only)")
	}
	p := dgrad(odd, problem.FP16, problem.NHWC)
	noSwizzle := Config{"BM": 64, "BN": 64, "BK": 64, "Warpgroups": 1, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 0}
	if _, err := f.Render(p, noSwizzle); err == nil || !strings.Contains(err.Error(), "Swizzle=1") {
		t.Errorf("dgrad with Swizzle=0: err %v, want a refusal naming Swizzle=1", err)
	}
	for _, c := range f.Space(p, lim) {
		if c.Config["Swizzle"] != 1 {
			t.Errorf("%s: dgrad space lists Swizzle=%d", c.ID(), c.Config["Swizzle"])
		}
	}
	fwd := problem.Problem{Shape: odd, Precision: problem.FP16, Layout: problem.NHWC}
	noSwizzle["Swizzle"] = 1
	if k, err := f.Render(fwd, noSwizzle); err != nil || strings.Contains(k.Name, "dgrad") || strings.Contains(k.Source, "B_SBO") {
		t.Errorf("forward: %v, kernel %s; want the forward kernel, without dgrad's B layout", err, k.Name)
	}
}

// TestWGMMAIGEMMDgradFrontEnd runs dgrad kernels through NVRTC's front
// end for sm_90a (ptxas, which checks the inline PTX, runs on the GPU
// machine's NVRTC): on every shape above in fp16 and bf16, two kept
// unsplit configurations (all with the full sweep), the split-K pins
// (SplitK 2 and 4 where the k-tiles allow) and, on the odd shape, the
// producer warpgroup; in tf32 one kept unsplit configuration and the
// first split-K pin (all with the full sweep). Of those, by default, the
// ones that have every precision with every shape, with every pin and with
// an unsplit kernel, and every knob value and code path of them all
// (coverJobs); all under the full sweep. Each PTX must hold the
// configuration's wgmma on the precision's type (16-bit types: m64nBNk16
// with B transposed; tf32: m64nBNk8, B's 4-byte element copies and the
// rounding to TF32), the 16-byte cp.async copies and, split, the cluster
// and its distributed shared-memory reads.
func TestWGMMAIGEMMDgradFrontEnd(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	lim := DefaultLimits(90)
	lim.SM90a = true
	var jobs []compileJob
	items := map[string][]string{} // by job: what coverJobs keeps
	for i, spec := range wgmmaDgradShapes {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for j, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
			p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NHWC, Op: problem.OpDgrad}
			var unsplit []Candidate
			for _, c := range kept(WGMMAIGEMM{}.Space(p, lim)) {
				if c.Config["SplitK"] == 0 && c.Config["FlipFilter"] == 0 { // FlipFilter: TestWGMMAIGEMMFlipFilter
					unsplit = append(unsplit, c)
				}
			}
			if len(unsplit) == 0 {
				t.Fatalf("%s: no kept unsplit candidate", p)
			}
			splits := dgradSplitConfigs(t, p)
			switch {
			case fullSweep():
			case prec == problem.TF32:
				unsplit = []Candidate{unsplit[i%len(unsplit)]}
				splits = splits[:min(1, len(splits))]
			default:
				a, b := (2*i+j)%len(unsplit), (2*i+j+len(unsplit)/2)%len(unsplit)
				unsplit = []Candidate{unsplit[a], unsplit[b]}
			}
			cands := unsplit
			for _, cfg := range splits {
				cands = append(cands, Candidate{Family: "wgmmaigemm", Config: cfg})
			}
			if i == 3 {
				cands = append(cands, Candidate{Family: "wgmmaigemm", Config: Config{"BM": 128, "BN": 64, "BK": 128 / prec.ElementBytes(), "Warpgroups": 1,
					"Stages": 4, "BlocksPerSM": 1, "Producer": 1, "Swizzle": 1}})
			}
			for _, c := range cands {
				kern, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("%s %s: %v", p, c.ID(), err)
				}
				id := fmt.Sprintf("%s %s", p, c.ID())
				jobs = append(jobs, compileJob{id, kern})
				kind := "unsplit"
				if c.Config["SplitK"] > 1 || c.Config["Producer"] == 1 {
					kind = c.ID() // each split-K pin and the producer pin
				}
				items[id] = []string{fmt.Sprintf("%s shape %d", prec, i), fmt.Sprintf("%s %s", prec, kind)}
			}
		}
	}
	// By default, of these, the kernels that have every precision with
	// every shape, every pin and an unsplit kernel, and every knob value and
	// code path of them all (coverJobs).
	jobs = coverJobs(jobs, func(j compileJob) []string { return items[j.id] })
	runCompileJobs(t, jobs, func(j compileJob) string {
		res, err := memoCompile(lib, true, j.kernel.Source, nvrtc.Options{Name: j.kernel.Name + ".cu", Arch: "sm_90a"})
		if err != nil {
			return "front end: " + err.Error()
		}
		typ := "f16"
		if strings.Contains(j.id, "bf16") {
			typ = "bf16"
		}
		want := []string{fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s", j.kernel.Config["BN"], typ, typ),
			"p, 1, 1, 0, 1;", "cp.async.cg.shared.global"}
		if strings.Contains(j.id, "tf32") {
			want = []string{fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32", j.kernel.Config["BN"]),
				"cp.async.cg.shared.global", "cp.async.ca.shared.global"}
			if !tf32Rounding.MatchString(res.PTX) {
				return "tf32 PTX lacks the rounding to TF32"
			}
			if strings.Contains(res.PTX, "p, 1, 1, 0, 1;") {
				return "tf32 PTX transposes B (imm-trans-b = 1)"
			}
			if !fourByteCopy.MatchString(res.PTX) {
				return "PTX lacks B's 4-byte cp.async"
			}
		}
		if sk := j.kernel.Config["SplitK"]; sk > 1 {
			want = append(want, fmt.Sprintf(".reqnctapercluster 1, 1, %d", sk), "ld.shared::cluster.v4.f32", "mapa.shared::cluster.u32")
		}
		if j.kernel.Config["Producer"] == 1 {
			want = append(want, "mbarrier.try_wait.parity.shared::cta.b64")
		}
		for _, w := range want {
			if !strings.Contains(res.PTX, w) {
				return fmt.Sprintf("PTX lacks %q", w)
			}
		}
		return ""
	})
}

// servedKept returns wgmmaigemm's kept candidates for p, as Enumerate
// admits them, failing t (and returning none) where the family declines p
// or keeps nothing.
func servedKept(t *testing.T, f WGMMAIGEMM, p problem.Problem, lim Limits) []Candidate {
	t.Helper()
	if err := f.Serves(p); err != nil {
		t.Errorf("%s: declined: %v", p, err)
		return nil
	}
	keep := kept(family.AdmitSoft(f.Space(p, lim)))
	if len(keep) == 0 {
		t.Errorf("%s: no candidate kept", p)
	}
	return keep
}

// h100Limits are the static limits of an H100 (132 SMs) with NVRTC 12 or
// newer, which the cost model's sweeps were measured on.
func h100Limits() Limits {
	lim := DefaultLimits(90)
	lim.SM90a, lim.SMs = true, 132
	return lim
}

// TestWGMMAIGEMMCost: the cost model ranks every kept candidate (the
// family's test shapes, odd and folded ones included, every precision,
// layout and op it serves) with a finite positive cost, refuses a
// malformed configuration (+Inf), and puts the tiles that won the H100
// sweeps first: on ResNet-50's s3-3x3 at N=256 (tf32 NHWC) the cheapest
// are the 32768-element tiles of two warpgroups (256 × 128 and 128 ×
// 256), and a 64 × 64 tile of the same stages costs more than a 128 × 128
// one; on the 7² map at N=32 a split-K tile comes before the unsplit one
// of the same size (49 tiles for 132 SMs).
func TestWGMMAIGEMMCost(t *testing.T) {
	lim := h100Limits()
	cost := func(p problem.Problem, cfg Config) float64 {
		c, ok := PredictedCost(p, Candidate{Family: "wgmmaigemm", Config: cfg}, lim)
		if !ok {
			t.Fatal("wgmmaigemm has no cost model")
		}
		return c
	}
	// Every kept candidate of the family's test shapes (odd ones among
	// them: asymmetric strides, pads and dilations, prime channel counts,
	// the folded dgrad's), every precision, layout and op it serves.
	problems := map[problem.Op]int{}
	for _, spec := range append(slices.Clone(wgmmaIGEMMShapes), wgmmaFoldShapes...) {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		s.Bias = false // dgrad has no bias
		for _, prec := range []problem.Precision{problem.TF32, problem.FP16, problem.BF16} {
			for _, lay := range []problem.Layout{problem.NHWC, problem.NCHW} {
				for _, op := range []problem.Op{problem.OpFprop, problem.OpDgrad} {
					p := problem.Problem{Shape: s, Precision: prec, Layout: lay, Op: op}
					if (WGMMAIGEMM{}).Serves(p) != nil {
						continue
					}
					problems[op]++
					for _, c := range kept(WGMMAIGEMM{}.Space(p, lim)) {
						if v := cost(p, c.Config); !(v > 0) || math.IsInf(v, 0) || math.IsNaN(v) {
							t.Errorf("%s %s: cost %v", p, c.ID(), v)
						}
					}
				}
			}
		}
	}
	if problems[problem.OpFprop] < 10 || problems[problem.OpDgrad] < 5 {
		t.Errorf("costed %v problems per op: want at least 10 forward and 5 dgrad", problems)
	}
	s, _ := problem.ParseShape("N=256,C=256,H=14,W=14,K=256,R=3,S=3,pad=1")
	p := problem.Problem{Shape: s, Precision: problem.TF32, Layout: problem.NHWC}
	if v := cost(p, Config{"BM": 100}); !math.IsInf(v, 1) {
		t.Errorf("malformed configuration: cost %v, want +Inf", v)
	}
	cands := kept(WGMMAIGEMM{}.Space(p, lim))
	slices.SortStableFunc(cands, func(a, b Candidate) int { return cmp.Compare(cost(p, a.Config), cost(p, b.Config)) })
	if c := cands[0].Config; c["BM"]*c["BN"] != 32768 || c["Warpgroups"] != 2 {
		t.Errorf("cheapest %s, want a 256 × 128 or 128 × 256 tile of two warpgroups", cands[0].ID())
	}
	small := Config{"BM": 64, "BN": 64, "BK": 32, "Warpgroups": 1, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1}
	big := Config{"BM": 128, "BN": 128, "BK": 32, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1}
	if cost(p, small) <= cost(p, big) {
		t.Errorf("64 × 64 costs %v, not more than 128 × 128's %v", cost(p, small), cost(p, big))
	}
	s7, _ := problem.ParseShape("N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1")
	p7 := problem.Problem{Shape: s7, Precision: problem.FP16, Layout: problem.NHWC}
	split := Config{"BM": 128, "BN": 256, "BK": 64, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "SplitK": 4}
	unsplit := Config{"BM": 128, "BN": 256, "BK": 64, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1}
	if cost(p7, split) >= cost(p7, unsplit) {
		t.Errorf("7² map: SplitK=4 costs %v, not less than unsplit %v", cost(p7, split), cost(p7, unsplit))
	}
}

// TestWGMMAIGEMMCostSweeps holds the cost model to measured data:
// testdata/wgmmaigemm-sweeps-h100.csv has every kept candidate of 27
// problems timed on an H100 (ResNet-50 layers at N=32 and 256, tf32 NHWC
// and NCHW, fp16 NHWC; session 15, docs/performance.md). In each, the 13
// cheapest kept candidates (ties in enumeration order, as the search
// takes them; those the sweep did not time count as misses) must hold one
// within 1% of the sweep's fastest, and over all the 8 cheapest within 1%
// in geometric mean.
func TestWGMMAIGEMMCostSweeps(t *testing.T) {
	sweeps := readSweeps(t, "testdata/wgmmaigemm-sweeps-h100.csv", 27)
	lim := h100Limits()
	logSum := 0.0
	for _, sw := range sweeps {
		s, err := problem.ParseShape(sw.shape)
		if err != nil {
			t.Fatal(err)
		}
		p := problem.Problem{Shape: s, Precision: sw.precision, Layout: sw.layout}
		// The space's kept candidates in enumeration order, then cheapest
		// first. The space has changed since the sweeps (split-K where a
		// grid's waves are poor, no split the model calls no faster): a
		// candidate not timed takes its place in the order but cannot be
		// the one found, and a timed one the space dropped still counts in
		// the sweep's fastest, so that dropping a winner, or ranking new
		// candidates ahead of it, fails here.
		// tf32's candidates, TruncB=1 since (as fast or faster than the
		// rounding the sweeps timed, on every tile pinned), stand for their
		// rounding twins here, ranked without TruncB's bonus.
		cands := kept(WGMMAIGEMM{}.Space(p, lim))
		for i, c := range cands {
			if _, ok := c.Config["TruncB"]; ok {
				cands[i].Config = maps.Clone(c.Config)
				delete(cands[i].Config, "TruncB")
			}
		}
		top := sw.topRatio(p, cands, lim)
		if r := top(13); r > 1.01 {
			t.Errorf("%s: the 13 cheapest of %d are %.1f%% slower than the fastest", p, len(cands), 100*(r-1))
		}
		logSum += math.Log(top(8))
	}
	if g := math.Exp(logSum / float64(len(sweeps))); g > 1.01 {
		t.Errorf("the 8 cheapest: %.1f%% slower than the fastest in geometric mean", 100*(g-1))
	}
}

// TestWGMMAIGEMMStoreRowsRender: StoreRows=1 (the epilogue through shared
// memory, 16-byte stores along a pixel's channels; searched for fp16 and
// bf16, a twin of every unsplit, unfolded tile, pinned for tf32)
// renders for the fp16 and tf32 NHWC forward (bias; fp16 also with a
// chain whose residual it reads 16 bytes at a time) and the bf16 data
// gradient, compiles for sm_90a with 16-byte global stores, and leaves the
// kernel without it unchanged; it is refused for NCHW, another output type, channel counts that are no whole number of 16-byte
// runs, split-K, the fold and the producer warpgroup, and where the tile's
// FP32 rows do not fit over the stages.
func TestWGMMAIGEMMStoreRowsRender(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	f := WGMMAIGEMM{}
	cfg := func(bk int, extra Config) Config {
		c := Config{"BM": 128, "BN": 64, "BK": bk, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 2, "Producer": 0, "Swizzle": 1, "StoreRows": 1}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	prob := func(spec string, prec problem.Precision, lay problem.Layout, op problem.Op) problem.Problem {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		if op == problem.OpDgrad {
			s.Bias = false
		}
		return problem.Problem{Shape: s, Precision: prec, Layout: lay, Op: op}
	}
	const layer = "N=4,C=64,H=14,W=14,K=64,R=1,S=1"
	residual, err := epilogue.Parse("scale_shift,residual(0.5),relu")
	if err != nil {
		t.Fatal(err)
	}
	withResidual := prob(layer, problem.FP16, problem.NHWC, problem.OpFprop)
	withResidual.Epilogue = residual
	for _, c := range []struct {
		p   problem.Problem
		cfg Config
	}{
		{prob(layer, problem.FP16, problem.NHWC, problem.OpFprop), cfg(64, nil)},
		{withResidual, cfg(64, nil)},
		{prob(layer, problem.TF32, problem.NHWC, problem.OpFprop), cfg(32, nil)},
		{prob("N=4,C=64,H=14,W=14,K=32,R=3,S=3,pad=1", problem.BF16, problem.NHWC, problem.OpDgrad), cfg(64, nil)},
	} {
		k, err := f.Render(c.p, c.cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.p, err)
		}
		res, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90a"})
		if err != nil {
			t.Fatalf("%s: %v", c.p, err)
		}
		if !strings.Contains(res.PTX, "st.global.v4") || !strings.Contains(k.Source, "StoreRows") {
			t.Errorf("%s: no 16-byte stores of the staged rows", c.p)
		}
		if len(c.p.Epilogue) > 0 && (!strings.Contains(res.PTX, "ld.global.nc.v4") || !strings.Contains(k.Source, "ep_residual + ((long long)m * K + k)")) {
			t.Errorf("%s: the residual's run is not read in one 16-byte load", c.p)
		}
		plain := maps.Clone(c.cfg)
		delete(plain, "StoreRows")
		k0, err := f.Render(c.p, plain)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(k0.Source, "StoreRows") || k0.Name == k.Name {
			t.Errorf("%s: the kernel without StoreRows changed (%s)", c.p, k0.Name)
		}
	}
	relu, err := epilogue.Parse("relu")
	if err != nil {
		t.Fatal(err)
	}
	chained := prob(layer, problem.FP16, problem.NHWC, problem.OpFprop)
	chained.Epilogue = relu
	lim := h100Limits()
	for _, c := range []struct {
		p    problem.Problem
		want bool // kept StoreRows twins
	}{
		{prob(layer, problem.FP16, problem.NHWC, problem.OpFprop), true},
		{prob(layer, problem.BF16, problem.NHWC, problem.OpDgrad), true},
		{prob(layer, problem.TF32, problem.NHWC, problem.OpFprop), false},
		{chained, true},
	} {
		plain, twins := 0, 0
		for _, cand := range kept(f.Space(c.p, lim)) {
			if cand.Config["StoreRows"] == 1 {
				twins++
				if cand.Config["SplitK"] > 1 || cand.Config["Producer"] != 0 {
					t.Errorf("%s: StoreRows twin %s", c.p, cand.ID())
				}
			} else if cand.Config["SplitK"] <= 1 {
				plain++
			}
		}
		if (twins > 0) != c.want || (c.want && twins > plain) {
			t.Errorf("%s: %d kept StoreRows twins of %d unsplit tiles, want them: %v", c.p, twins, plain, c.want)
		}
	}
	wider := prob(layer, problem.TF32, problem.NHWC, problem.OpFprop)
	wider.OutPrecision = problem.StorageBF16
	for _, c := range []struct {
		p    problem.Problem
		cfg  Config
		want string // the rule's own words
	}{
		{prob(layer, problem.TF32, problem.NCHW, problem.OpFprop), cfg(32, nil), "stores NHWC rows"},
		{wider, cfg(32, nil), "stores the input's type"},
		{prob("N=4,C=64,H=14,W=14,K=60,R=1,S=1", problem.FP16, problem.NHWC, problem.OpFprop), cfg(64, nil), "whole number of 16-byte runs"},
		{prob(layer, problem.FP16, problem.NHWC, problem.OpFprop), cfg(64, Config{"SplitK": 2, "BlocksPerSM": 1}), "unsplit, unfolded tile"},
		{prob(layer, problem.FP16, problem.NHWC, problem.OpFprop), cfg(64, Config{"Producer": 1, "Warpgroups": 1}), "unsplit, unfolded tile"},
		{prob(layer, problem.FP16, problem.NHWC, problem.OpFprop), cfg(64, Config{"BM": 256, "BN": 256, "Warpgroups": 4, "Stages": 3, "BlocksPerSM": 1}), "does not fit over the stages"},
	} {
		if _, err := f.Render(c.p, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want a refusal saying %q", c.p, c.cfg, err, c.want)
		}
	}
}

// TestWGMMAIGEMMThreeWarpgroups: NHWC forward and stride-1 data gradient
// tiles of three computing warpgroups (BM = 192, 384 threads, over which
// B's 16-byte copies split unevenly) are searched (16-bit: storing through
// shared memory; tf32: A rounded in registers, a data gradient on its
// flipped filter), render B's copy count (and tf32's rounding of them)
// rounded up with the last iteration guarded, and pass NVRTC's front end;
// they split K where the grid is small (ranks of 96 or 48 rows); other
// tf32 tiles and folded problems refuse them with the rule,
// and renders of two warpgroups keep the even split.
func TestWGMMAIGEMMThreeWarpgroups(t *testing.T) {
	t.Parallel()
	lib := nvrtctest.Open(t)
	f := WGMMAIGEMM{}
	lim := h100Limits()
	for _, c := range []struct {
		spec   string
		prec   problem.Precision
		op     problem.Op
		guards []string // the guarded copies (and rounding) of B's last iteration
	}{
		{"N=32,C=512,H=14,W=14,K=1024,R=1,S=1", problem.FP16, problem.OpFprop, []string{"if (idx >= B_COPIES) break;"}},
		{"N=32,C=1024,H=14,W=14,K=512,R=1,S=1", problem.FP16, problem.OpDgrad, []string{"if (e >= BK) break;"}},
		{"N=8,C=24,H=57,W=61,K=40,R=3,S=5,pad=1", problem.BF16, problem.OpDgrad, []string{"if (e >= BK) break;"}},       // partial tiles, channels past C and K
		{"N=32,C=512,H=14,W=14,K=1024,R=1,S=1", problem.TF32, problem.OpFprop, []string{"if (idx >= B_COPIES) break;"}}, // TruncB: B's copies not rounded
		{"N=32,C=1024,H=14,W=14,K=512,R=1,S=1", problem.TF32, problem.OpDgrad, []string{"if (idx >= B_COPIES) break;"}}, // FlipFilter: W' rounded by its copy
		{"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1", problem.FP16, problem.OpDgrad, []string{"if (e >= BK) break;"}},    // 66 tiles: split-K too
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: c.prec, Layout: problem.NHWC, Op: c.op}
		var three []Candidate
		for _, cand := range kept(f.Space(p, lim)) {
			if cand.Config["Warpgroups"] == 3 {
				three = append(three, cand)
			}
		}
		if len(three) == 0 {
			t.Fatalf("%s: no kept candidate of three warpgroups", p)
		}
		tf32 := c.prec == problem.TF32
		split := slices.IndexFunc(three, func(c Candidate) bool { return c.Config["SplitK"] > 1 })
		if p.Shape.C == 256 && split < 0 {
			t.Errorf("%s: no split-K candidate of three warpgroups (66 tiles for 132 SMs)", p)
		}
		for _, cand := range three {
			if cand.Config["SplitK"] > 1 {
				continue // split-K's epilogue: the partial tiles through distributed shared memory
			}
			if cand.Config["BM"] != 192 || tf32 != (cand.Config["StoreRows"] == 0) || tf32 && cand.Config["ARegs"] != 1 ||
				tf32 && c.op == problem.OpDgrad && cand.Config["FlipFilter"] != 1 {
				t.Errorf("%s %s: want BM=192, StoreRows=1 (16-bit), ARegs=1 (tf32), FlipFilter=1 (tf32 dgrad)", p, cand.ID())
			}
		}
		pins := []Candidate{three[0], three[len(three)-1]}
		if split >= 0 {
			pins = append(pins, three[split])
		}
		for _, cand := range pins {
			k, err := f.Render(p, cand.Config)
			if err != nil {
				t.Fatalf("%s %s: %v", p, cand.ID(), err)
			}
			if k.Launch.Block[0] != 384 || !strings.Contains(k.Source, "#define B_ITERS ((B_COPIES + LOADERS - 1) / LOADERS)") {
				t.Errorf("%s %s: block %v; want 384 threads and B_ITERS rounded up", p, cand.ID(), k.Launch.Block)
			}
			guards := c.guards
			if cand.Config["FlipFilter"] == 1 {
				guards = []string{"if (idx >= B_COPIES) break;"} // the forward's copies, of W'
			}
			for _, g := range guards {
				if !strings.Contains(k.Source, g) {
					t.Errorf("%s %s: the source lacks %q", p, cand.ID(), g)
				}
			}
			if _, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90a"}); err != nil {
				t.Fatalf("%s %s: %v", p, cand.ID(), err)
			}
		}
		two := maps.Clone(three[0].Config)
		two["BM"], two["Warpgroups"] = 128, 2
		k, err := f.Render(p, two)
		if err != nil {
			t.Fatalf("%s BM=128: %v", p, err)
		}
		if strings.Contains(k.Source, "B_ITERS ((B_COPIES") || strings.Contains(k.Source, "break;  // the last iteration") {
			t.Errorf("%s BM=128, two warpgroups: B's copies rendered uneven", p)
		}
	}
	for _, c := range []struct {
		spec   string
		prec   problem.Precision
		op     problem.Op
		refuse func(Config) bool // which candidates of three warpgroups the rule refuses
	}{
		{"N=32,C=512,H=14,W=14,K=1024,R=1,S=1", problem.TF32, problem.OpFprop, func(c Config) bool { return c["ARegs"] != 1 || c["BN"] > 128 }},
		{"N=32,C=1024,H=14,W=14,K=512,R=1,S=1", problem.TF32, problem.OpDgrad, func(c Config) bool { return c["ARegs"] != 1 || c["BN"] > 128 || c["FlipFilter"] != 1 }},
		{"N=32,C=256,H=28,W=28,K=256,R=3,S=3,stride=2,pad=1", problem.FP16, problem.OpDgrad, func(Config) bool { return true }}, // folded
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: c.prec, Layout: problem.NHWC, Op: c.op}
		refused := 0
		for _, cand := range f.Space(p, lim) {
			if cand.Config["Warpgroups"] != 3 {
				continue
			}
			want := c.refuse(cand.Config)
			if got := strings.HasPrefix(cand.Rejected, "warpgroups:"); got != want {
				t.Errorf("%s %s: %q, want the warpgroups rule %v", p, cand.ID(), cand.Rejected, want)
			}
			if want {
				refused++
			}
		}
		if refused == 0 {
			t.Errorf("%s: no candidate of three warpgroups refused", p)
		}
	}
}

// TestWGMMAIGEMMTruncB checks TruncB's renders: with it, no tf32 kernel
// rounds B in the main loop (the 16-byte copies past A's, or the BT
// element copies), A is still rounded (in shared memory or, ARegs, in
// registers), the kernels compile; it is refused in 16-bit precisions and
// beside FlipFilter.
func TestWGMMAIGEMMTruncB(t *testing.T) {
	t.Parallel()
	lib := nvrtctest.Open(t)
	f := WGMMAIGEMM{}
	base := "BK=32,BM=128,BN=128,BlocksPerSM=1,Producer=0,Stages=4,Swizzle=1,Warpgroups=2"
	for _, c := range []struct {
		spec    string
		layout  problem.Layout
		op      problem.Op
		cfg     string
		roundsA string // what rounds A: its 16-byte copies' loop or its elements (none: ARegs, in registers)
	}{
		{"N=8,C=64,H=14,W=14,K=128,R=3,S=3,pad=1", problem.NHWC, problem.OpFprop, base, "i < A_COPIES / LOADERS"},
		{"N=8,C=64,H=14,W=14,K=128,R=3,S=3,pad=1", problem.NHWC, problem.OpFprop, "ARegs=1," + base, ""},
		{"N=8,C=64,H=14,W=14,K=128,R=3,S=3,pad=1", problem.NCHW, problem.OpFprop, base, "a_offset(a_row(lt, 0)"},
		{"N=8,C=64,H=14,W=14,K=128,R=3,S=3,pad=1", problem.NHWC, problem.OpDgrad, base, "i < A_COPIES / LOADERS"},
		{"N=8,C=64,H=14,W=14,K=128,R=3,S=3,pad=1", problem.NHWC, problem.OpFprop, "ARegs=1,BK=32,BM=128,BN=128,BlocksPerSM=1,Producer=1,Stages=4,Swizzle=1,Warpgroups=2", ""},
		// Three warpgroups: rounding, B's last, uneven iteration is guarded.
		{"N=32,C=512,H=14,W=14,K=1024,R=1,S=1", problem.NHWC, problem.OpFprop, "ARegs=1,BK=32,BM=192,BN=128,BlocksPerSM=1,Producer=0,Stages=4,Swizzle=1,Warpgroups=3", ""},
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: problem.TF32, Layout: c.layout, Op: c.op}
		round, trunc := renderTwins(t, p, c.cfg, "TruncB")
		body := func(src string) string { // round_tile's body
			i := strings.Index(src, "void round_tile(")
			j := strings.Index(src[i:], "\n}\n")
			return src[i : i+j]
		}
		rb, tb := body(round.Source), body(trunc.Source)
		if !strings.Contains(trunc.Source, "#define TRUNCB 1") || strings.Contains(round.Source, "TRUNCB") {
			t.Errorf("%s %s: TRUNCB defined with TruncB only", p, c.cfg)
		}
		if strings.Contains(tb, "B_COPIES") || strings.Contains(tb, "b_elem(") {
			t.Errorf("%s %s,TruncB=1: round_tile still rounds B:\n%s", p, c.cfg, tb)
		}
		if !strings.Contains(rb, "B_COPIES") && !strings.Contains(rb, "b_elem(") {
			t.Errorf("%s %s: round_tile does not round B without TruncB:\n%s", p, c.cfg, rb)
		}
		if c.roundsA == "" {
			// A's loop over its 16-byte copies runs from A_ITERS = A_COPIES /
			// LOADERS: empty.
			if _, rest, _ := strings.Cut(tb, "for (int i = A_ITERS; i < A_COPIES / LOADERS; ++i) {"); strings.Contains(tb, "tf32(") && strings.Count(tb, "tf32(") != strings.Count(rest, "tf32(") || !strings.Contains(tb, "A_ITERS; i < A_COPIES / LOADERS") {
				t.Errorf("%s %s,TruncB=1: round_tile rounds something (A is rounded in registers):\n%s", p, c.cfg, tb)
			}
		} else if !strings.Contains(tb, c.roundsA) {
			t.Errorf("%s %s,TruncB=1: round_tile lacks A's rounding %q:\n%s", p, c.cfg, c.roundsA, tb)
		}
		if _, err := memoCompile(lib, true, trunc.Source, nvrtc.Options{Name: trunc.Name + ".cu", Arch: "sm_90a"}); err != nil {
			t.Fatalf("%s %s,TruncB=1: %v", p, c.cfg, err)
		}
		if strings.Contains(c.cfg, "Warpgroups=3") {
			if !strings.Contains(rb, "if (lt + i * LOADERS >= A_COPIES + B_COPIES) break;") {
				t.Errorf("%s %s: round_tile's last, uneven iteration over B unguarded:\n%s", p, c.cfg, rb)
			}
			if _, err := memoCompile(lib, true, round.Source, nvrtc.Options{Name: round.Name + ".cu", Arch: "sm_90a"}); err != nil {
				t.Fatalf("%s %s: %v", p, c.cfg, err)
			}
		}
	}
	p := problem.Problem{Shape: parseShapes(t, []string{"N=8,C=64,H=14,W=14,K=128,R=3,S=3,pad=1"})[0], Precision: problem.FP16, Layout: problem.NHWC, Op: problem.OpFprop}
	if _, err := f.Render(p, configOf(t, "BK=64,BM=128,BN=128,BlocksPerSM=1,Producer=0,Stages=4,Swizzle=1,TruncB=1,Warpgroups=2")); err == nil {
		t.Errorf("%s: TruncB=1 rendered in fp16", p)
	}
	p.Precision, p.Op = problem.TF32, problem.OpDgrad
	if _, err := f.Render(p, configOf(t, "BK=32,BM=128,BN=128,BlocksPerSM=1,FlipFilter=1,Producer=0,Stages=4,Swizzle=1,TruncB=1,Warpgroups=2")); err == nil {
		t.Errorf("%s: TruncB=1 rendered beside FlipFilter", p)
	}
}

// configOf parses a configuration written as Config.String writes it
// ("BK=32,BM=128").
func configOf(t *testing.T, s string) family.Config {
	t.Helper()
	c := family.Config{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			t.Fatalf("config %q: %q is not knob=integer", s, kv)
		}
		c[k] = n
	}
	return c
}

// TestWGMMAIGEMMVecCopy checks VecCopy's renders: the flipped (or the
// phases') filter's copy in 16-byte vectors both ways (units of 32 rows), searched in place
// of the element copies wherever C and K are whole vectors, the kernel
// itself unchanged past the copy's definitions; it compiles; it is
// refused where the rows are not whole vectors.
func TestWGMMAIGEMMVecCopy(t *testing.T) {
	t.Parallel()
	lib := nvrtctest.Open(t)
	f := WGMMAIGEMM{}
	lim := h100Limits()
	for _, c := range filterCopyCases {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: c.prec, Layout: problem.NHWC, Op: problem.OpDgrad}
		elems, vec := renderTwins(t, p, c.cfg, "VecCopy")
		if !strings.Contains(vec.Source, "#define FF_PITCH") || !strings.Contains(vec.Source, "*reinterpret_cast<uint4*>(RELAYOUT_W") || strings.Contains(elems.Source, "FF_PITCH") {
			t.Errorf("%s %s: want the vector copy with VecCopy only", p, c.cfg)
		}
		body := func(k Kernel) string {
			i := strings.Index(k.Source, "extern \"C\" __global__ void __launch_bounds__(THREADS")
			return strings.ReplaceAll(k.Source[i:], k.Name, "KERNEL")
		}
		if body(elems) != body(vec) {
			t.Errorf("%s %s: VecCopy changed the kernel past the copy's definitions", p, c.cfg)
		}
		if _, err := memoCompile(lib, true, vec.Source, nvrtc.Options{Name: vec.Name + ".cu", Arch: "sm_90a"}); err != nil {
			t.Fatalf("%s %s,VecCopy=1: %v", p, c.cfg, err)
		}
		for _, cand := range kept(f.Space(p, lim)) {
			if (cand.Config["FlipFilter"] == 1 || cand.Config["PhaseFilter"] == 1) && cand.Config["VecCopy"] != 1 {
				t.Errorf("%s: kept %s copies its filter element by element", p, cand.ID())
			}
		}
	}
	p := problem.Problem{Shape: parseShapes(t, []string{"N=3,C=13,H=9,W=11,K=12,R=3,S=5,pad_h=1,pad_w=2"})[0], Precision: problem.TF32, Layout: problem.NHWC, Op: problem.OpDgrad}
	if _, err := f.Render(p, configOf(t, "BK=32,BM=128,BN=64,BlocksPerSM=1,FlipFilter=1,Producer=0,Stages=4,Swizzle=1,VecCopy=1,Warpgroups=2")); err == nil {
		t.Errorf("%s: VecCopy=1 rendered with C=13", p)
	}
	for _, cand := range kept(f.Space(p, lim)) {
		if cand.Config["VecCopy"] == 1 {
			t.Errorf("%s: kept %s with C=13", p, cand.ID())
		}
	}
}

// renderTwins renders wgmmaigemm's configuration cfg (configOf's form) of p
// without and with knob set to 1.
func renderTwins(t *testing.T, p problem.Problem, cfg, knob string) (without, with Kernel) {
	t.Helper()
	without, err := WGMMAIGEMM{}.Render(p, configOf(t, cfg))
	if err != nil {
		t.Fatalf("%s %s: %v", p, cfg, err)
	}
	with, err = WGMMAIGEMM{}.Render(p, configOf(t, cfg+","+knob+"=1"))
	if err != nil {
		t.Fatalf("%s %s,%s=1: %v", p, cfg, knob, err)
	}
	return without, with
}

// filterCopyCases are data gradients (NHWC) whose filter is copied by a
// prologue: on the flipped filter (fp16 with C and K past a unit's edge,
// split-K, bf16 with three warpgroups, tf32 1×1 and 3×3) and per phase
// (tf32: a 3×3 at stride 2, four phases of 4, 2, 2 and 1 taps; 2×3 strides
// with a 3×5 filter), each with a configuration that copies it
// (VecCopy's tests and the CPU run of the copies).
var filterCopyCases = []struct {
	spec string
	prec problem.Precision
	cfg  string
}{
	{"N=8,C=96,H=14,W=14,K=64,R=3,S=3,pad=1", problem.TF32, "ARegs=1,BK=32,BM=128,BN=128,BlocksPerSM=1,FlipFilter=1,Producer=0,Stages=4,Swizzle=1,Warpgroups=2"},
	{"N=8,C=96,H=14,W=14,K=64,R=3,S=3,pad=1", problem.FP16, "BK=64,BM=128,BN=128,BlocksPerSM=1,FlipFilter=1,Producer=0,SplitK=2,Stages=4,Swizzle=1,Warpgroups=2"},
	{"N=4,C=40,H=9,W=11,K=24,R=3,S=5,pad_h=1,pad_w=2", problem.BF16, "BK=64,BM=192,BN=64,BlocksPerSM=1,FlipFilter=1,Producer=0,Stages=4,StoreRows=1,Swizzle=1,Warpgroups=3"},
	{"N=4,C=40,H=9,W=11,K=24,R=3,S=5,pad_h=1,pad_w=2", problem.FP16, "BK=64,BM=128,BN=64,BlocksPerSM=1,FlipFilter=1,Producer=0,Stages=4,Swizzle=1,Warpgroups=2"},
	{"N=4,C=96,H=7,W=7,K=44,R=1,S=1", problem.TF32, "ARegs=1,BK=32,BM=128,BN=128,BlocksPerSM=1,FlipFilter=1,Producer=0,Stages=4,Swizzle=1,Warpgroups=2"},
	{"N=4,C=36,H=7,W=7,K=68,R=3,S=3,pad=1", problem.TF32, "BK=32,BM=128,BN=64,BlocksPerSM=1,FlipFilter=1,Producer=0,Stages=4,Swizzle=1,Warpgroups=2"},
	{"N=8,C=64,H=14,W=14,K=64,R=3,S=3,stride=2,pad=1", problem.TF32, "BK=32,BM=128,BN=64,BlocksPerSM=1,Fold=1,HeavyFirst=1,PhaseFilter=1,PhaseTiles=1,Producer=0,Stages=4,Swizzle=1,Warpgroups=2"},
	{"N=3,C=64,H=15,W=17,K=64,R=3,S=5,stride_h=2,stride_w=3,pad=1", problem.TF32, "ARegs=1,BK=32,BM=128,BN=64,BlocksPerSM=1,Fold=1,HeavyFirst=1,PhaseFilter=1,PhaseTiles=1,Producer=0,Stages=4,StoreRows=1,Swizzle=1,Warpgroups=2"},
}
