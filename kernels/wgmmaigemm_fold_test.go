package kernels

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/dgradphase"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// wgmmaFoldShapes are data gradients wgmmaigemm computes folded in tf32:
// the flagship's (C=3, 11x11, stride 4), one whose row phases 2 and 3 meet
// no tap (dilation 4), asymmetric strides with odd C and K, a 7x7 stride-2
// stem and, in NCHW only, a stride-1 3x3 (NCHW dgrad is always folded).
var wgmmaFoldShapes = []string{
	"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2",
	"N=2,C=6,H=15,W=16,K=20,R=2,S=3,stride=4,pad=1,dilation_h=4,bias=false",
	"N=3,C=5,H=19,W=23,K=17,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_w=2",
	"N=2,C=3,H=40,W=40,K=64,R=7,S=7,stride=2,pad=3",
	"N=4,C=24,H=14,W=14,K=40,R=3,S=3,pad=1",
}

// TestWGMMAIGEMMDgradFold checks the folded tf32 data gradient's rules:
// which problems fold (every tf32 dgrad at a stride above 1, and NCHW at
// any stride; 16-bit ones at a stride above 1 only in NHWC with C a
// multiple of 8, TestWGMMAIGEMMDgradFoldHalf; never NHWC at stride 1), that a foldable problem's candidates are all Fold=1 (and the
// folded columns rounded up to 8 are among the tiles), the flagship's
// geometry, the grid over the folded columns and phase pixels, and Fold
// refused where it does not apply.
func TestWGMMAIGEMMDgradFold(t *testing.T) {
	lim := DefaultLimits(90)
	lim.SM90a = true
	f := WGMMAIGEMM{}
	dgrad := func(spec string, prec problem.Precision, lay problem.Layout) problem.Problem {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		s.Bias = false
		return problem.Problem{Shape: s, Precision: prec, Layout: lay, Op: problem.OpDgrad}
	}
	for i, spec := range wgmmaFoldShapes {
		for _, lay := range []problem.Layout{problem.NHWC, problem.NCHW} {
			p := dgrad(spec, problem.TF32, lay)
			s := p.Shape
			strided := s.StrideH*s.StrideW > 1
			if !strided && lay == problem.NHWC {
				continue
			}
			if strided && lay == problem.NHWC && s.K%4 != 0 {
				if err := f.Serves(p); err == nil || !strings.Contains(err.Error(), "K divisible by 4") {
					t.Errorf("%s: %v, want a refusal naming K divisible by 4", p, err)
				}
				continue
			}
			keep := servedKept(t, f, p, lim)
			if len(keep) == 0 {
				t.Errorf("%s: no kept candidate", p)
				continue
			}
			cf := activePhases(s) * s.C // the phases that meet a tap
			hp, wp := family.CeilDiv(s.H, s.StrideH), family.CeilDiv(s.W, s.StrideW)
			// Aligned (Fold=2) where every phase meets a tap and the
			// aligned GEMM (offsets × the longer phase grid) is smaller.
			rows, cols := dgradphase.Rows(s), dgradphase.Cols(s)
			shH, _, ar := rows.Aligned()
			shW, _, ac := cols.Aligned()
			_, nr := rows.OffsetSpan()
			_, nc := cols.OffsetSpan()
			fold := 1
			if cf == s.StrideH*s.StrideW*s.C && ar*ac < nr*nc && (hp+slices.Max(shH))*(wp+slices.Max(shW))*ar*ac < hp*wp*nr*nc {
				fold = 2
				hp, wp = hp+slices.Max(shH), wp+slices.Max(shW)
			}
			bns := map[int]bool{}
			for _, c := range f.Space(p, lim) {
				if c.Config["Fold"] != fold && (c.Config["PhaseTiles"] != 1 || c.Config["Fold"] != 1) { // PhaseTiles: Fold=1
					t.Errorf("%s %s: a foldable problem's candidate without Fold=%d", p, c.ID(), fold)
				}
				bns[c.Config["BN"]] = true
			}
			if r8 := family.CeilDiv(cf, 8) * 8; r8 < 64 && !bns[r8] {
				t.Errorf("%s: no tile of the %d folded columns rounded up to 8 (BN %v)", p, cf, bns)
			}
			for _, c := range keep {
				k, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("%s %s: %v", p, c.ID(), err)
				}
				want := [3]int{family.CeilDiv(cf, c.Config["BN"]), family.CeilDiv(s.N*hp*wp, c.Config["BM"]), 1}
				if want[1] > 65535 {
					want[0], want[1] = want[1], want[0]
				}
				if k.Grid != want || !strings.Contains(k.Source, "folded") || !strings.Contains(k.Name, "_dgrad_tf32_") {
					t.Errorf("%s %s: kernel %s grid %v, want a folded dgrad kernel on grid %v", p, c.ID(), k.Name, k.Grid, want)
				}
			}
			if i == 0 {
				src := keep[0]
				k, _ := RenderCandidate(p, src)
				// Aligned: the row and column phases 2 and 3 shifted by one,
				// 3 × 3 offsets instead of the union's 4 × 4.
				for _, d := range []string{"#define CF 48", "#define DP_MIN -2", "#define NDP 3", "#define DQ_MIN -2", "#define NDQ 3",
					"#define HP 57", "#define WP 57", fmt.Sprintf("#define KRED %d", 3*3*96), "SHIFT_H[STRIDE_H] = {0, 0, 1, 1}"} {
					if !strings.Contains(k.Source, d) {
						t.Errorf("flagship %s: source lacks %q", lay, d)
					}
				}
			}
		}
	}
	for _, tc := range []struct {
		p    problem.Problem
		want string
	}{
		{dgrad(wgmmaFoldShapes[0], problem.FP16, problem.NHWC), "C divisible by 8"},
		{dgrad(wgmmaFoldShapes[0], problem.BF16, problem.NCHW), "C divisible by 8"}, // relayed out: dX's channels its columns
	} {
		if err := f.Serves(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a refusal saying %q", tc.p, err, tc.want)
		}
	}
	cfg := Config{"BM": 128, "BN": 64, "BK": 32, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1}
	folded := Config{"BM": 128, "BN": 48, "BK": 32, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "Fold": 1}
	for _, tc := range []struct {
		p   problem.Problem
		cfg Config
	}{
		{dgrad(wgmmaFoldShapes[0], problem.TF32, problem.NCHW), cfg},                                                                                 // foldable without Fold
		{dgrad(wgmmaFoldShapes[4], problem.TF32, problem.NHWC), folded},                                                                              // NHWC stride 1: not folded
		{problem.Problem{Shape: dgrad(wgmmaFoldShapes[4], problem.TF32, problem.NHWC).Shape, Precision: problem.TF32, Layout: problem.NHWC}, folded}, // the forward
		{dgrad(wgmmaFoldShapes[0], problem.TF32, problem.NCHW), Config{"BM": 128, "BN": 48, "BK": 32, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "Fold": 1, "SplitK": 2}},
		// 8 x 32 filter elements over 512 copying threads.
		{dgrad(wgmmaFoldShapes[0], problem.TF32, problem.NCHW), Config{"BM": 256, "BN": 8, "BK": 32, "Warpgroups": 4, "Stages": 3, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "Fold": 1}},
	} {
		if _, err := f.Render(tc.p, tc.cfg); err == nil {
			t.Errorf("%s op=%s %s: rendered, want a refusal", tc.p, tc.p.Op, tc.cfg)
		}
	}
}

// TestWGMMAIGEMMDgradFoldFrontEnd runs folded dgrad kernels through
// NVRTC's front end for sm_90a: on every fold shape in both layouts (NHWC
// where K allows), one kept configuration, and on the flagship the tile of
// its 48 columns with A through registers and with the producer
// warpgroup (every kept one with the full sweep). Each PTX must hold the
// wgmma of its BN, the 4-byte copies of B, the rounding to TF32 and, for
// the producer, its mbarrier wait.
func TestWGMMAIGEMMDgradFoldFrontEnd(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	lim := DefaultLimits(90)
	lim.SM90a = true
	var jobs []compileJob
	for i, spec := range wgmmaFoldShapes {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		s.Bias = false
		for j, lay := range []problem.Layout{problem.NHWC, problem.NCHW} {
			p := problem.Problem{Shape: s, Precision: problem.TF32, Layout: lay, Op: problem.OpDgrad}
			if (WGMMAIGEMM{}).Serves(p) != nil {
				continue
			}
			cands := kept(WGMMAIGEMM{}.Space(p, lim))
			if len(cands) == 0 {
				t.Fatalf("%s: no kept candidate", p)
			}
			if !fullSweep() {
				cands = []Candidate{cands[(3*i+j)%len(cands)]}
			}
			if i == 0 {
				for _, extra := range []Config{
					{"BM": 128, "BN": 48, "BK": 32, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "Fold": 1, "ARegs": 1},
					{"BM": 128, "BN": 48, "BK": 32, "Warpgroups": 1, "Stages": 4, "BlocksPerSM": 1, "Producer": 1, "Swizzle": 1, "Fold": 1},
				} {
					cands = append(cands, Candidate{Family: "wgmmaigemm", Config: extra})
				}
			}
			for _, c := range cands {
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
		if !strings.Contains(res.PTX, fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32", j.kernel.Config["BN"])) {
			return "PTX lacks the tile's tf32 wgmma"
		}
		if !fourByteCopy.MatchString(res.PTX) || !tf32Rounding.MatchString(res.PTX) {
			return "PTX lacks B's 4-byte copies or the rounding to TF32"
		}
		if j.kernel.Config["Producer"] == 1 && !strings.Contains(res.PTX, "mbarrier.try_wait.parity.shared::cta.b64") {
			return "producer PTX lacks the mbarrier wait"
		}
		return ""
	})
}

// wgmmaFoldHalfShapes are strided data gradients wgmmaigemm computes
// folded in fp16 and bf16 (NHWC, C a multiple of 8): ResNet-50's 3x3
// stride 2 and 1x1 stride 2 (three of four phases meet no tap) layers,
// asymmetric strides with dilation and an odd map, and stride 4 with a 5x5
// filter whose phases meet 1 or 2 taps per axis.
var wgmmaFoldHalfShapes = []string{
	"N=32,C=256,H=28,W=28,K=256,R=3,S=3,stride=2,pad=1",
	"N=32,C=1024,H=14,W=14,K=2048,R=1,S=1,stride=2",
	"N=3,C=16,H=19,W=23,K=24,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_w=2",
	"N=2,C=8,H=21,W=18,K=32,R=5,S=5,stride=4,pad=2",
}

// TestWGMMAIGEMMDgradFoldHalf: the 16-bit folded dgrad (B copied 16 bytes
// of one phase's channels at a time, MN-major): wgmmaFoldHalfShapes serve
// in fp16 and bf16 NHWC with every candidate Fold=1 and BN a multiple of
// 64 (no rounded-up tile of the folded columns), and a sample of the kept
// ones (all under the full sweep) compiles for sm_90a with the transposed-B
// wgmma of its BN, 16-byte copies and no TF32 rounding; the pairs of
// channels are stored together (the source's pack2); phases that meet no
// tap leave the columns (CF = active phases × C) and get zero stores
// (StoreRows twins of PhaseTiles candidates store 16-byte runs instead).
// Stride 1 does not fold, and BN=48 is refused.
func TestWGMMAIGEMMDgradFoldHalf(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	lim := DefaultLimits(90)
	lim.SM90a = true
	f := WGMMAIGEMM{}
	var jobs []compileJob
	turn := 0
	for _, spec := range wgmmaFoldHalfShapes {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		s.Bias = false
		for _, prec := range []problem.Precision{problem.FP16, problem.BF16} {
			p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NHWC, Op: problem.OpDgrad}
			keep := servedKept(t, f, p, lim)
			if len(keep) == 0 {
				t.Errorf("%s: no kept candidate", p)
				continue
			}
			for _, c := range f.Space(p, lim) {
				if c.Config["Fold"] != 1 || c.Config["BN"]%64 != 0 {
					t.Errorf("%s %s: want Fold=1 and BN a multiple of 64", p, c.ID())
				}
			}
			if !fullSweep() {
				keep = []Candidate{keep[turn%len(keep)]}
				turn++
			}
			for _, c := range keep {
				k, err := RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("%s %s: %v", p, c.ID(), err)
				}
				pairs := strings.Contains(k.Source, "pack2(acc[mt][4 * i + 2 * hh], acc[mt][4 * i + 2 * hh + 1])")
				if !strings.Contains(k.Source, "folded") || pairs != (c.Config["StoreRows"] == 0) { // StoreRows (PhaseTiles): 16-byte runs
					t.Errorf("%s %s: not a folded kernel storing channel pairs", p, c.ID())
				}
				// Phases that meet no tap (the 1x1 at stride 2: three of
				// four) leave the columns; their dX is written as zeros.
				na := activePhases(s)
				idle := s.StrideH*s.StrideW - na
				wantCF := fmt.Sprintf("#define CF %d ", na*s.C)
				hasIdle := strings.Contains(k.Source, fmt.Sprintf("#define NI %d ", idle)) && strings.Contains(k.Source, "IDLE_A[z]")
				if !strings.Contains(k.Source, wantCF) || hasIdle != (idle > 0) || (idle > 0) != strings.Contains(k.Source, "PHASE_A[ab]") {
					t.Errorf("%s %s: want CF = %d active phases × C and the idle phases' zero stores exactly where %d phases meet no tap", p, c.ID(), na, idle)
				}
				jobs = append(jobs, compileJob{fmt.Sprintf("%s %s", p, c.ID()), k})
			}
		}
	}
	runCompileJobs(t, jobs, func(j compileJob) string {
		res, err := memoCompile(lib, true, j.kernel.Source, nvrtc.Options{Name: j.kernel.Name + ".cu", Arch: "sm_90a"})
		if err != nil {
			return "front end: " + err.Error()
		}
		typ := "f16"
		if strings.Contains(j.kernel.Name, "bf16") {
			typ = "bf16"
		}
		if !strings.Contains(res.PTX, fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s", j.kernel.Config["BN"], typ, typ)) {
			return "PTX lacks the tile's 16-bit wgmma"
		}
		if !strings.Contains(res.PTX, "cp.async.cg.shared.global") || tf32Rounding.MatchString(res.PTX) {
			return "PTX lacks 16-byte copies or rounds to TF32"
		}
		return ""
	})
	p := problem.Problem{Shape: parseShapes(t, wgmmaFoldHalfShapes[:1])[0], Precision: problem.FP16, Layout: problem.NHWC, Op: problem.OpDgrad}
	if _, err := f.Render(p, Config{"BM": 128, "BN": 48, "BK": 64, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "Fold": 1}); err == nil {
		t.Error("BN=48 rendered for a 16-bit folded dgrad, want a refusal (64-channel atoms)")
	}
	one := p
	one.Shape.StrideH, one.Shape.StrideW = 1, 1
	for _, c := range f.Space(one, lim) {
		if c.Config["Fold"] != 0 {
			t.Errorf("%s: stride 1 listed %s", one, c.ID())
		}
	}
}

// activePhases counts s's stride phases (a, b) that meet a filter tap,
// solved here by brute force: a + pad − r·dil divisible by the stride for
// some row tap r, likewise for a column tap.
func activePhases(s problem.Shape) int {
	meets := func(ph, stride, pad, dil, n int) bool {
		for t := range n {
			if (ph+pad-t*dil)%stride == 0 {
				return true
			}
		}
		return false
	}
	n := 0
	for a := range s.StrideH {
		for b := range s.StrideW {
			if meets(a, s.StrideH, s.PadH, s.DilationH, s.R) && meets(b, s.StrideW, s.PadW, s.DilationW, s.S) {
				n++
			}
		}
	}
	return n
}

// TestWGMMAIGEMMAlignedWork: aligned phases (Fold=2) are searched where
// they make the GEMM smaller, not only its reduction: the flagship (3 × 3
// offsets instead of 4 × 4 over a 57² grid instead of 56²) is aligned; a
// 7×7 map with the flagship's filter (the grid 2×2 → 3×3 outweighs 4×4 →
// 3×3 offsets) stays Fold=1.
func TestWGMMAIGEMMAlignedWork(t *testing.T) {
	lim := DefaultLimits(90)
	lim.SM90a = true
	for _, c := range []struct {
		spec string
		fold int
	}{
		{"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2", 2},
		{"N=8,C=16,H=7,W=7,K=32,R=11,S=11,stride=4,pad=2", 1},
	} {
		s, err := problem.ParseShape(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		p := problem.Problem{Shape: s, Precision: problem.TF32, Layout: problem.NCHW, Op: problem.OpDgrad}
		n := 0
		for _, cand := range (WGMMAIGEMM{}).Space(p, lim) {
			if cand.Config["PhaseTiles"] == 1 {
				continue
			}
			if n++; cand.Config["Fold"] != c.fold {
				t.Errorf("%s %s: want Fold=%d", p, cand.ID(), c.fold)
				break
			}
		}
		if n == 0 {
			t.Errorf("%s: no candidate", p)
		}
	}
}
