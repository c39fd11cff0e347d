package wgradmma

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// window is a Stage=5 configuration's geometry (window.cu.tmpl): bands of
// Band output rows, the input rows they read staged whole (the window),
// the taps' im2col operand gathered from there into wgmma's A registers.
// window_emulate_test.go runs the template's data movement on the CPU
// against float64 gradients: a change to the template's indexing goes
// there too.
type window struct {
	// Band is the output rows a band; BandsPerImage ⌈P/Band⌉; Bands the
	// reduction's bands, N·BandsPerImage, split over a tile's blocks.
	Band, BandsPerImage, Bands int
	// KT is the pixels of a k-tile (a channel's 128-byte row of dY), Tiles
	// the k-tiles of a whole band (⌈Band·Q/KT⌉).
	KT, Tiles int
	// WR is the window's rows, (Band−1)·stride_h + (R−1)·dilation_h + 1;
	// Units the rows copied (NHWC: WR; NCHW: C·WR, a plane per channel).
	WR, Units int
	// PWA is the window columns left of w = 0 (at least PadW, aligned to a
	// copy), WB a window row's length in elements; VX the X elements a copy
	// (the widest of 16, 8 and 4 bytes the rows allow, else one 2-byte
	// element), VXBytes the same in bytes.
	PWA, WB, VX, VXBytes int
	// DQ is the pixel step between a fragment's lane columns (bestDQ).
	DQ int
	// Fetch is a thread's dY elements of a tile, ⌈BM·KT/threads⌉.
	Fetch int
	// Split3 (3xtf32): each stage holds the tile's TF32 high parts, then
	// (StageBytes/2 further) its rounded residuals, and each thread a
	// second pair of register sets (A's residuals); StageBytes is a
	// stage's bytes, BM·128 or twice that.
	Split3     bool
	StageBytes int
	// TableOff is the pixel tables' byte offset in shared memory (after
	// the stages and two windows), Bytes the stages, windows and tables.
	TableOff, Bytes int
	// The wgmma's inline-assembly operands: ACC accumulators d[i] (%0 ..),
	// then A's four registers, B's descriptor and the scale-d flag.
	AccOperands, AccConstrs, AOperands string
	DescOp, ScaleOp                    int
}

// windowRegsSpare is the registers a thread needs beside windowRegs, in
// tf32 and in 16 bits (half: the gathers' halves and their packing): below
// it ptxas spilled (H100 builds: tf32's 384-tap tiles fit 168 registers
// with 132 counted, fp16's 256-tap tiles of 16 warps spilled at 128 with
// 82).
func windowRegsSpare(half bool) int {
	if half {
		return 50
	}
	return 36
}

// windowCost's constants, set by hand against testdata/wgradmma-window-h100.csv
// (TestWGradMMAWindowCostSweeps): a copied element's and a band's
// overhead in multiply-adds, the exponent of the slowdown of blocks of few
// warps (16/WM), and the slowdown where the registers' cap leaves fewer
// than windowRegsSpare beside windowRegs.
const (
	windowLoadCost  = 64.0
	windowBandCost  = 64.0
	windowWarpsExp  = 1.1
	windowTightRegs = 1.3
)

// windowStages is Stage=5's dY stages: one read by a step's wgmmas, one by
// the last tile's still in flight, one being written.
const windowStages = 3

// newWindow is the Stage=5 geometry of knobs k for p (threads in a block).
func newWindow(p problem.Problem, k knobs, threads int) window {
	s := p.Shape
	eb := p.Precision.ElementBytes()
	var w window
	w.Band = k.Band
	w.KT = 128 / eb
	if k.Band > 0 {
		w.BandsPerImage = family.CeilDiv(s.P(), k.Band)
		w.Bands = s.N * w.BandsPerImage
		w.Tiles = family.CeilDiv(k.Band*s.Q(), w.KT)
		w.WR = (k.Band-1)*s.StrideH + (s.R-1)*s.DilationH + 1
	}
	ce := 1
	w.Units = s.C * w.WR
	if p.Layout == problem.NHWC {
		ce, w.Units = s.C, w.WR
	}
	w.VX, w.VXBytes = vec(s.W*ce, eb)
	if w.VX == 0 {
		w.VX, w.VXBytes = 1, eb
	}
	w.PWA = s.PadW
	for (w.PWA*ce)%w.VX != 0 {
		w.PWA++
	}
	need := (w.PWA - s.PadW + (s.S-1)*s.DilationW + (s.Q()-1)*s.StrideW + 1) * ce
	row := max(w.VX, 16/eb) // whole copies, 16-byte aligned rows
	w.WB = family.CeilDiv(need, row) * row
	w.DQ = bestDQ(p, w)
	if threads > 0 {
		w.Fetch = family.CeilDiv(k.BM*w.KT, threads)
	}
	w.Split3 = p.Precision == problem.TF32x3
	w.StageBytes = k.BM * 128
	if w.Split3 {
		w.StageBytes *= 2
	}
	winOff := windowStages * w.StageBytes
	w.TableOff = winOff + 2*family.RoundUp(w.Units*w.WB*eb, 16)
	w.Bytes = w.TableOff + 2*4*w.Tiles*w.KT
	acc := k.BM / 2
	regs := make([]string, acc)
	cons := make([]string, acc)
	for i := range acc {
		regs[i] = fmt.Sprintf("%%%d", i)
		cons[i] = fmt.Sprintf(`"+f"(d[%d])`, i)
	}
	w.AccOperands = "{" + strings.Join(regs, ", ") + "}"
	w.AccConstrs = strings.Join(cons, ", ")
	w.AOperands = fmt.Sprintf("{%%%d, %%%d, %%%d, %%%d}", acc, acc+1, acc+2, acc+3)
	w.DescOp, w.ScaleOp = acc+4, acc+5
	return w
}

// bestDQ is the pixel step between a fragment's lane columns t = 0..3
// (window.cu.tmpl's perm) whose window reads conflict least in shared
// memory: a warp reads taps j = 0..7 (its rows g) at the pixels of lanes
// t, and a bank serves one 4-byte word at a time. Of equal steps, the
// smallest.
func bestDQ(p problem.Problem, w window) int {
	s := p.Shape
	eb := p.Precision.ElementBytes()
	ce := 1
	if p.Layout == problem.NHWC {
		ce = s.C
	}
	tap := func(j int) int { // coff of window.cu.tmpl, without the plane and row parts' common base
		if p.Layout == problem.NHWC {
			r, rem := j/(s.S*s.C), j%(s.S*s.C)
			return r*s.DilationH*w.WB + (rem/s.C)*s.DilationW*s.C + rem%s.C
		}
		c, rs := j/(s.R*s.S), j%(s.R*s.S)
		return (c*w.WR+rs/s.S*s.DilationH)*w.WB + rs%s.S*s.DilationW
	}
	best, bestWays := 1, math.MaxInt
	for _, dq := range []int{1, 2, 4, 8} {
		if w.KT/4%dq != 0 {
			continue
		}
		words := map[int]map[int]bool{} // bank → words read
		for g := range 8 {
			for t := range 4 {
				l := t * dq
				pix := l/max(s.Q(), 1)*s.StrideH*w.WB + l%max(s.Q(), 1)*s.StrideW*ce
				word := (tap(g) + pix) * eb / 4
				if words[word%32] == nil {
					words[word%32] = map[int]bool{}
				}
				words[word%32][word] = true
			}
		}
		ways := 0
		for _, ws := range words {
			ways = max(ways, len(ws))
		}
		if ways < bestWays {
			best, bestWays = dq, ways
		}
	}
	return best
}

// windowRule says why Stage=5 cannot serve p, or "": tf32, 3xtf32 (A's
// residuals gathered beside its high parts, dY's stored beside its), fp16
// or bf16, both layouts.
func windowRule(p problem.Problem) string {
	switch p.Precision {
	case problem.TF32, problem.TF32x3, problem.FP16, problem.BF16:
		return ""
	}
	return "Stage=5 is tf32, 3xtf32, fp16 and bf16"
}

// windowCheck says what is wrong with a Stage=5 configuration's knobs, or "".
func windowCheck(k knobs) string {
	switch {
	case k.Relayout != 0 || k.Planes != 0 || k.BiasSum != 0 || k.PrefetchL2 != 0:
		return "Stage=5: no Relayout, Planes, BiasSum or PrefetchL2"
	case k.WM < 4 || k.WM > 16 || k.WM%4 != 0 || k.WN != 1:
		return "Stage=5: WM 4, 8, 12 or 16 (whole warpgroups), WN = 1"
	case k.BN%(16*k.WM) != 0 || k.BN/(16*k.WM) < 1 || k.BN/(16*k.WM) > 2:
		return "Stage=5: BN = 64 × warpgroups × 1 or 2 sub-tiles"
	case k.BM < 8 || k.BM > 256 || k.BM%8 != 0:
		return "Stage=5: BM a multiple of 8 up to 256 (wgmma's N)"
	case k.Unroll != 1 || k.BP != 0:
		return "Stage=5: Unroll=1, no BP"
	case k.Split < 1 || k.Split > 8:
		return "Split 1 to 8 (a portable cluster)"
	case k.Band < 1 || k.Band > 64:
		return "Stage=5: Band 1 to 64 output rows"
	case k.Stages != windowStages:
		return fmt.Sprintf("Stage=5: Stages = %d", windowStages)
	}
	return ""
}

// windowRegs is the registers a Stage=5 thread holds through its main
// loop: the accumulators (and in 3xtf32 the bands' totals), two register
// sets of A fragments (and in 3xtf32 two of their residuals), two of the
// tiles in flight and the rows' offsets.
func windowRegs(k knobs, w window) int {
	sub := k.BN / (16 * k.WM)
	sets, acc := 8*sub, sub*k.BM/2
	if w.Split3 {
		sets, acc = 2*sets, 2*acc // the residuals' sets; the bands' totals
	}
	return acc + sets + 2*w.Fetch + 2*sub
}

// The knob values Stage=5's space takes: (warpgroups, sub-tiles), bands,
// and (Split, Clusters): about one wave of blocks a tile, in clusters of 8
// or 4, and fewer where the bands are few (spaceWindowFewSplits, below
// 256). On the H100 the driver runs 15 clusters of 8 (30 of 4) of these
// one-block-an-SM kernels at once: 16 clusters of 8 took 1.6–1.9× as long
// as 15 on the flagship and the stem, 32 or 31 of 4 as long as 16 of 8
// (docs/performance.md). 16 and 32 stay for GPUs whose SMs all take
// clusters; the cost model counts the waves by Limits.ClusterSMs.
var (
	spaceWindowTiles     = [][2]int{{2, 1}, {3, 1}, {4, 1}, {2, 2}, {3, 2}}
	spaceWindowBands     = []int{2, 4, 8}
	spaceWindowSplits    = [][2]int{{8, 16}, {8, 15}, {8, 14}, {8, 7}, {4, 32}, {4, 30}, {4, 29}, {4, 15}}
	spaceWindowFewSplits = [][2]int{{8, 1}, {8, 2}, {8, 4}, {8, 8}}
)

// windowSpace is Stage=5's configurations for p: the channel tile wgmma's
// N (K rounded up to 8 where that is at most 128, else up to 256 and the
// even split into tiles of at most 128, whose accumulators leave room for
// the rest), each tile of taps, band (at most P rows) and split.
func windowSpace(p problem.Problem) []knobs {
	k8 := family.RoundUp(p.Shape.K, 8)
	var bms []int
	if k8 <= 256 {
		bms = append(bms, k8)
	}
	if k8 > 128 {
		if even := family.RoundUp(family.CeilDiv(p.Shape.K, family.CeilDiv(p.Shape.K, 128)), 8); !slices.Contains(bms, even) {
			bms = append(bms, even)
		}
	}
	var bands []int
	for _, b := range spaceWindowBands {
		if b <= p.Shape.P() || len(bands) == 0 {
			bands = append(bands, min(b, p.Shape.P()))
		}
	}
	var ks []knobs
	for _, bm := range bms {
		for _, tile := range spaceWindowTiles {
			for _, band := range bands {
				splits := spaceWindowSplits
				if p.Shape.N*family.CeilDiv(p.Shape.P(), band) < 256 {
					splits = append(slices.Clone(spaceWindowFewSplits), splits...)
				}
				for _, sp := range splits {
					k := knobs{BM: bm, BN: tile[0] * tile[1] * 64, WM: 4 * tile[0], WN: 1, Split: sp[0], Clusters: sp[1],
						Unroll: 1, Stage: 5, Stages: windowStages, Band: band}
					if k.Clusters == 1 {
						k.Clusters = 0
					}
					ks = append(ks, k)
				}
			}
		}
	}
	return ks
}

// windowCost is Cost's model for Stage=5: the waves of blocks (those an SM
// holds: shared memory, threads, registers) times a block's bands times a
// band's work — its padded tensor-core work (k-tiles × KT × BN × BM), its
// copies (the window's elements and the dY tiles') and a fixed cost —
// slowed for blocks of few warps and where registers are tight, with
// clusters costing 20% a doubling and the partial tiles' sums over the
// SMs (windowCost's constants).
func windowCost(k knobs, g geometry, lim family.Limits) float64 {
	const sharedPerSM = 233472
	w := g.Win
	regs := min(255, windowRegs(k, w)+windowRegsSpare(g.KStep == 16))
	resident := max(1, min(2, sharedPerSM/(g.SharedBytes+1024), 2048/g.Threads, 65536/(regs*g.Threads)))
	blocks := g.TilesM * g.TilesN * g.Parts
	waves := family.CeilDiv(blocks, lim.BlockSlots(k.Split, resident)) // whole clusters of Split blocks
	bands := family.CeilDiv(w.Bands, g.Parts)
	band := float64(w.Tiles*w.KT)*float64(k.BN*k.BM) + windowLoadCost*float64(w.Units*w.WB+k.BM*w.Tiles*w.KT) + windowBandCost*float64(k.BN*k.BM)
	t := float64(waves*resident*bands) * band
	t *= math.Pow(16/float64(k.WM), windowWarpsExp) // fewer warps hide less of the gathers' latency
	if windowRegs(k, w)+windowRegsSpare(g.KStep == 16) > 65536/g.Threads {
		t *= windowTightRegs // the registers' cap leaves ptxas too few beside the accumulators: spills
	}
	if g.NClusters > 1 {
		t *= 1 + 0.2*math.Log2(float64(g.NClusters))
	}
	return t + 64*float64(k.BM*k.BN)*float64(blocks)/float64(lim.SMs)
}
