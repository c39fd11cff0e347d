// Package wgradmma is a filter-gradient (wgrad) kernel family on TF32
// tensor cores for Hopper: the gradient as a GEMM of the K output channels
// by the C·R·S taps over the N·P·Q pixels, with the pixels split over the
// blocks of a thread-block cluster that add their partial tiles up through
// distributed shared memory, rendered through package kernels/family from
// wgradmma.cu.tmpl.
package wgradmma

import (
	"embed"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/gradmma"
	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed wgradmma.cu.tmpl pipeline.cu.tmpl rows.cu.tmpl wgmma.cu.tmpl wgmmatf32.cu.tmpl window.cu.tmpl reduce.tmpl hopper.tmpl
var templateFS embed.FS

// Family is the tensor-core wgrad family (wgradmma.cu.tmpl). It serves
// op=wgrad in tf32 (operands rounded to TF32, m16n8k8), 3xtf32 (each
// operand split into TF32 high and low parts, three products per k step,
// summed from zero in the tensor core and added to the accumulators in
// FP32: the tensor core's truncating accumulation drifts past 1e-5 over
// the pixels), fp16 and bf16 (m16n8k16, FP32 accumulation, dW rounded to
// the element type once), both layouts, groups=1, tensors below 2³¹
// elements, on sm_90 (clusters).
// dBias is FP32, from a column of ones in the same GEMM (or, BiasSum=1,
// summed from the staged dY tiles). Every sum is
// taken in an order the configuration fixes: deterministic (the atomic
// count of Clusters > 1 only elects which block adds the partial tiles up,
// not their order).
//
// Knobs:
//   - BM: output channels per block (rows), BN: taps per block (columns);
//   - WM, WN: warps along the rows and the columns (warp tiles of whole
//     m16n8 fragments);
//   - Split: blocks per cluster, each summing 1/Split of the pixels, whose
//     partial tiles are added up through distributed shared memory (1: one
//     block sums every pixel);
//   - Unroll: k steps of 8 pixels whose fragments are loaded before their
//     mma are issued (Stage=0);
//   - Stage: 0, each warp loads its fragments straight from global memory;
//     1, the block stages chunks of 2 k steps of dY and of the gathered X in
//     shared memory (double-buffered, each value loaded once per block) and
//     the warps read their fragments from there; 2, NHWC only, the block
//     copies tiles of BP pixels of dY and of the im2col X with cp.async
//     (16, 8 or 4 bytes along the channels) through a Stages-deep
//     pipeline into pixel-major shared memory, and the warps read their
//     fragments with ldmatrix.trans (fp16, bf16) or transposed scalar
//     loads (tf32) (pipeline.cu.tmpl);
//     3, for few input channels (C ≤ 8, a first layer), the block stages
//     per output row its dY and the input rows its columns read, each
//     copied once, whole, and the warps read a column's value at a pixel
//     from its staged row (no im2col copy: rows.cu.tmpl);
//     4, NHWC fp16 and bf16 on sm_90a with C and K multiples of 8, Stage
//     2's 16-byte copies into wgmma's MN-major 128-byte swizzle, and
//     wgmma m64nBNk16 reading both operands transposed from there: BM/64
//     warpgroups (WM = BM/16 warps of 16 rows, WN = 1), BM and BN
//     multiples of 64 (wgmma.cu.tmpl); in tf32 (C and K multiples of 4,
//     BP a multiple of 32, Stages = 3), whose wgmma reads only K-major
//     operands, the tiles are loaded into registers, 16 bytes a thread,
//     and stored transposed into the K-major 128-byte swizzle, rounded to
//     TF32, one tile ahead of the wgmmas m64nBNk8 (wgmmatf32.cu.tmpl);
//     5, for first layers (searched where C ≤ 8; tf32, fp16, bf16, both
//     layouts, sm_90a), the GEMM turned around: the BN taps are wgmma's
//     rows, the BM output channels its N (a multiple of 8); the block
//     stages per band of Band output rows the input rows they read, whole
//     (the window), and each thread reads its A fragments from there into
//     wgmma's registers; dY is B, K-major (window.cu.tmpl, window.go);
//   - Band: Stage=5's output rows a band;
//   - BP, Stages: Stage=2's and 4's pixels per tile and tiles in flight
//     (Stage=5: Stages = 3, its dY stages, and no BP)
//     (absent, 0, for Stage 0 and 1, so that their IDs are as before);
//   - BiasSum: 1, Stage=4 with a bias only: dBias is summed from the
//     staged dY tiles, each column tile's blocks summing their share of
//     the BM rows, and added up beside the partial tiles, instead of
//     coming out of a column of ones, which costs a whole column tile
//     where C·R·S is a multiple of BN (s4-1x1b's 512 taps in 4 tiles of
//     128 instead of 5); searched there beside the ones column (equal
//     tiles, it costs 2–3%: fewer tiles win where they save a wave or a
//     cluster); absent, 0: the ones column;
//   - PrefetchL2: tf32's Stage=4 only: the first block of each chunk of
//     pixels (blockIdx.x = y = 0) asks L2 for the dY rows and input rows
//     of the tile PrefetchL2 tiles ahead of the one it loads into
//     registers, one bulk prefetch each (cp.async.bulk.prefetch.L2);
//     searched (2) on the 4-warpgroup tiles, which run one block an SM and
//     wait on their loads; absent, 0: none;
//   - Clusters: clusters (of Split blocks each) sharing one tile, each
//     summing 1/Clusters of the pixels (absent, 0, or 1: one cluster).
//     Each cluster leaves its partial tile in a workspace in the module's
//     global memory; the last cluster to finish a share of the tile's rows
//     (an atomic count) adds the clusters' partial tiles up in cluster
//     order and stores them: deterministic, where a cluster caps the split
//     at 8 blocks and a small dW (few tiles) would leave most SMs idle.
//     The workspace is static: launches of one loaded module must not run
//     concurrently (one stream at a time).
//
// Where Stage=2 keeps a candidate for a shape (NHWC, K and C rows of a
// multiple of 4 bytes), Space soft-rejects Stage 0 and 1 (they render as
// before, for cached records); where Stage=4 keeps one in fp16 or bf16,
// it soft-rejects Stage=2 too (tf32 searches both).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "wgradmma" }

// Template implements family.Family.
func (Family) Template() string { return "wgradmma.cu.tmpl" }

// Serves implements family.Family.
func (Family) Serves(p problem.Problem) error {
	if err := family.Gradient("wgradmma", problem.OpWgrad, p); err != nil {
		return err
	}
	return gradmma.Serves("wgradmma", p)
}

// knobs are a configuration's knobs (see Family).
type knobs struct {
	BM, BN, WM, WN, Split, Unroll, Stage int
	BP                                   int `knob:",optional"`
	Stages                               int `knob:",optional"`
	Clusters                             int `knob:",optional"`
	Relayout                             int `knob:",optional"`
	Planes                               int `knob:",optional"`
	BiasSum                              int `knob:",optional"`
	PrefetchL2                           int `knob:",optional"`
	Band                                 int `knob:",optional"`
}

// planesRule says why Planes=1 (both operands read straight from the NCHW
// channel planes) cannot serve p, or "": a 1×1 at stride 1 without
// padding, in NCHW, whose planes are whole 16-byte runs of pixels.
func planesRule(p problem.Problem) string {
	s := p.Shape
	vp := 16 / p.Precision.ElementBytes()
	switch {
	case p.Layout != problem.NCHW:
		return "Planes=1 reads NCHW channel planes"
	case s.R != 1 || s.S != 1 || s.StrideH != 1 || s.StrideW != 1 || s.PadH != 0 || s.PadW != 0:
		return "Planes=1 needs a 1x1 filter at stride 1 without padding (each tap's pixels a whole plane)"
	case (s.P()*s.Q())%vp != 0:
		return fmt.Sprintf("Planes=1 needs P·Q=%d a multiple of %d (16-byte runs of pixels)", s.P()*s.Q(), vp)
	}
	return ""
}

// view is the problem a configuration's kernel computes on: p itself, or,
// with Relayout=1 (NCHW), p in NHWC on the copies the kernel makes, their
// channels (C of X, K of dY) zero-padded to whole 16-byte copies.
func view(p problem.Problem, k knobs) problem.Problem {
	if k.Relayout != 1 {
		return p
	}
	v := 16 / p.Precision.ElementBytes()
	p.Layout = problem.NHWC
	p.Shape.C = family.CeilDiv(p.Shape.C, v) * v
	p.Shape.K = family.CeilDiv(p.Shape.K, v) * v
	return p
}

// inputRule is how configuration k reads p's operands, shared by reject
// and Render: the problem its kernel computes on (view), or why k cannot
// read p so (Relayout's and Planes' rules).
func inputRule(p problem.Problem, k knobs) (problem.Problem, string) {
	if k.Relayout == 1 {
		if msg := relayoutRule(p); msg != "" {
			return p, msg
		}
	}
	if k.Planes == 1 {
		if msg := planesRule(p); msg != "" {
			return p, msg
		}
	}
	return view(p, k), ""
}

// relayoutRule says why p cannot be relayed out, or "": NCHW, and copies
// that 32-bit offsets index.
func relayoutRule(p problem.Problem) string {
	v := view(p, knobs{Relayout: 1})
	s := v.Shape
	switch {
	case p.Layout != problem.NCHW:
		return "Relayout=1 copies NCHW tensors to NHWC: the layout is already NHWC"
	case int64(s.N)*int64(s.H)*int64(s.W)*int64(s.C) >= 1<<31-1 || int64(s.N)*int64(s.P())*int64(s.Q())*int64(s.K) >= 1<<31-1:
		return "Relayout=1's copies (channels padded to 16 bytes) reach 2^31 elements"
	}
	return ""
}

// maxWorkspace is the largest workspace (bytes) of Clusters > 1.
const maxWorkspace = 256 << 20

// clusters is k's clusters per tile (Clusters, 0 read as 1).
func (k knobs) clusters() int { return max(1, k.Clusters) }

// geometry holds a configuration's derived sizes; the template asserts
// each one it uses.
type geometry struct {
	Threads, CRS, NG, L, Chunk, SharedBytes int
	TilesM, TilesN                          int
	// NClusters is the clusters per tile (Clusters, at least 1), Parts the
	// blocks per tile (Split·NClusters) that the pixels are split over;
	// WorkspaceFloats the workspace of NClusters > 1: TilesM·TilesN·
	// NClusters partial tiles of BM·BN, and with BiasSum=1
	// WorkspaceBiasFloats TilesM·NClusters partial dBias sums of BM.
	NClusters, Parts, WorkspaceFloats int
	WorkspaceBiasFloats               int
	Acc                               int             // FP32 accumulators per thread
	KStep                             int             // pixels per mma: 8 (m16n8k8 tf32) or 16 (m16n8k16)
	Staging                           gradmma.Staging // Stage=1
	Pipe                              pipe            // Stage=2
	Rows                              rows            // Stage=3
	Win                               window          // Stage=5
}

// rows is a Stage=3 configuration's staging geometry (rows.cu.tmpl).
type rows struct {
	// Rows is the output rows N·P (the reduction, Q pixels each); QP the
	// pixels of a row rounded up to whole k steps, QPP the staged dY row's
	// pitch (conflict-free fragment reads).
	Rows, QP, QPP int
	// Unit is the columns one staged input row serves (S·C for NHWC's row
	// r, S for NCHW's row (c, r)); NRB the rows a column tile reads at most.
	Unit, NRB int
	// PWA is the staged columns left of w = 0 (at least PadW, aligned to
	// 16 bytes), WB a staged row's length in elements; VX the X elements
	// per copy (16 bytes where rows and edges allow, else one), VXBytes
	// the same in bytes.
	PWA, WB, VX, VXBytes int
	// Bytes is the dynamic shared memory of two stages and two constants.
	Bytes int
}

// newRows is the Stage=3 geometry of knobs k for p.
func newRows(p problem.Problem, k knobs) rows {
	s := p.Shape
	eb := p.Precision.ElementBytes()
	kstep := 8
	if eb == 2 {
		kstep = 16
	}
	var g rows
	g.Rows = s.N * s.P()
	g.QP = family.CeilDiv(s.Q(), kstep) * kstep
	g.QPP = g.QP + 4 // tf32: ≡ 4 mod 8 words
	if eb == 2 {
		g.QPP = g.QP + 8 // 2-byte: half a row ≡ 4 mod 8 words
	}
	ce := 1
	g.Unit = s.S
	if p.Layout == problem.NHWC {
		ce, g.Unit = s.C, s.S*s.C
	}
	crs := s.C * s.R * s.S
	if k.BN > 0 {
		for j0 := 0; j0 < crs; j0 += k.BN {
			last := min(j0+k.BN, crs) - 1
			g.NRB = max(g.NRB, last/g.Unit-j0/g.Unit+1)
		}
	}
	vec := 16 / eb // elements of a 16-byte copy
	g.PWA = s.PadW
	for (g.PWA*ce)%vec != 0 {
		g.PWA++
	}
	need := ((g.QP-1)*s.StrideW - s.PadW + (s.S-1)*s.DilationW + g.PWA + 1) * ce
	g.WB = family.CeilDiv(need, vec) * vec
	g.VX, g.VXBytes = 1, eb
	if (s.W*ce*eb)%16 == 0 {
		g.VX, g.VXBytes = vec, 16
	}
	g.Bytes = 2*(k.BM*g.QPP+g.NRB*g.WB)*eb + 16
	return g
}

// pipe is a Stage=2 configuration's copy geometry.
type pipe struct {
	// VA, VB: dY channels and X channels (of one tap) per copy (NHWC: the
	// widest of 16, 8 and 4 bytes that K and C rows are whole multiples
	// of, else one 2-byte element; NCHW: one element); VABytes, VBBytes
	// the same in bytes.
	VA, VB, VABytes, VBBytes int
	// VP is Planes=1's pixels per 16-byte copy (0 otherwise).
	VP int
	// Even says the threads split a tile's copies evenly: NHWC, whole
	// copies per row (BM/VA, BN/VB) dividing the threads, whose quotient
	// (rows per pass) divides BP; NCHW, the threads dividing BP·BM and
	// BP·BN.
	Even bool
	// Bytes is the stages' shared memory: Stages tiles of BP rows of BM+8
	// and BN+8 elements.
	Bytes int
}

// maxShared is the dynamic shared memory Render accepts for Stage=2
// (sm_90's opt-in limit); Space rejects by the device's.
const maxShared = 232448

// vec is the widest copy (elements, bytes) of 16, 8 and 4 bytes that rows
// of n elements of eb bytes are whole multiples of, or zeros.
func vec(n, eb int) (elems, bytes int) {
	for _, b := range []int{16, 8, 4} {
		if n*eb%b == 0 {
			return b / eb, b
		}
	}
	return 0, 0
}

// newPipe is the copy geometry of Stage=2 knobs k for p. NHWC copies runs
// of channels (VA of K, VB of one tap's C: the widest of 16, 8 and 4 bytes
// the rows are whole multiples of, else one 2-byte element); NCHW copies
// one element at a time, pixel fastest.
func newPipe(p problem.Problem, k knobs, threads int) pipe {
	eb := p.Precision.ElementBytes()
	var pp pipe
	pp.Bytes = k.Stages * k.BP * (k.BM + 8 + k.BN + 8) * eb
	if k.Planes == 1 {
		pp.VA, pp.VABytes, pp.VB, pp.VBBytes = 1, eb, 1, eb
		pp.VP = 16 / eb
		pp.Bytes = k.Stages * (k.BM + k.BN) * (k.BP + pp.VP) * eb
		pp.Even = threads > 0 && k.BP%pp.VP == 0 && k.BM*(k.BP/pp.VP)%threads == 0 && k.BN*(k.BP/pp.VP)%threads == 0
		return pp
	}
	if p.Layout == problem.NCHW {
		pp.VA, pp.VABytes, pp.VB, pp.VBBytes = 1, eb, 1, eb
		pp.Even = threads > 0 && k.BP*k.BM%threads == 0 && k.BP*k.BN%threads == 0
		return pp
	}
	pp.VA, pp.VABytes = vec(p.Shape.K, eb)
	if pp.VA == 0 {
		pp.VA, pp.VABytes = 1, eb
	}
	pp.VB, pp.VBBytes = vec(p.Shape.C, eb)
	if pp.VB == 0 {
		pp.VB, pp.VBBytes = 1, eb
	}
	if k.BM%pp.VA == 0 && k.BN%pp.VB == 0 {
		ca, cb := k.BM/pp.VA, k.BN/pp.VB
		pp.Even = threads%ca == 0 && threads%cb == 0 && k.BP%(threads/ca) == 0 && k.BP%(threads/cb) == 0
	}
	return pp
}

func geom(p problem.Problem, k knobs) geometry {
	s := p.Shape
	var g geometry
	g.Threads = 32 * k.WM * k.WN
	g.CRS = s.C * s.R * s.S
	g.NG = g.CRS
	if s.Bias && k.BiasSum == 0 {
		g.NG++
	}
	g.L = s.N * s.P() * s.Q()
	mm := gradmma.For(p, "dW")
	g.KStep = mm.KStep
	g.NClusters = k.clusters()
	g.Parts = k.Split * g.NClusters
	if (k.Stage == 2 || k.Stage == 4) && g.Parts > 0 && k.BP > 0 {
		g.Chunk = family.CeilDiv(family.CeilDiv(g.L, k.BP), g.Parts) * k.BP
	} else if g.Parts > 0 {
		g.Chunk = family.CeilDiv(family.CeilDiv(g.L, g.KStep), g.Parts) * g.KStep
	}
	g.SharedBytes = 4 * k.BM * (k.BN + 1)
	if k.Stage == 1 {
		g.Staging = gradmma.Stage(p, mm, k.BM, k.BN, g.Threads)
		g.SharedBytes = max(g.SharedBytes, g.Staging.Bytes)
	}
	if k.Stage == 2 {
		g.Pipe = newPipe(p, k, g.Threads)
		g.SharedBytes = max(g.SharedBytes, g.Pipe.Bytes)
	}
	if k.Stage == 4 {
		// Stage=2's copies, into unpadded swizzled tiles (tf32: its own
		// copies through registers, checked by wgmmaTF32Check).
		g.Pipe = newPipe(p, k, g.Threads)
		if p.Precision == problem.TF32 {
			g.Pipe.Even = wgmmaTF32Check(k) == ""
		}
		g.Pipe.Bytes = k.Stages * k.BP * (k.BM + k.BN) * p.Precision.ElementBytes()
		g.SharedBytes = max(g.SharedBytes, g.Pipe.Bytes)
		if k.BiasSum == 1 && p.Precision != problem.TF32 {
			// fp16's and bf16's dBias lanes add up through a scratch
			// area after the partial tile: 8 floats a thread.
			g.SharedBytes = max(g.SharedBytes, 4*k.BM*(k.BN+1)+32*g.Threads)
		}
	}
	if k.Stage == 3 {
		g.Rows = newRows(p, k)
		g.SharedBytes = max(g.SharedBytes, g.Rows.Bytes)
	}
	if k.Stage == 5 {
		g.Win = newWindow(p, k, g.Threads)
		g.SharedBytes = max(g.SharedBytes, g.Win.Bytes)
	}
	if k.BN > 0 && k.BM > 0 {
		g.TilesN, g.TilesM = family.CeilDiv(g.NG, k.BN), family.CeilDiv(s.K, k.BM)
		if g.NClusters > 1 {
			g.WorkspaceFloats = g.TilesM * g.TilesN * g.NClusters * k.BM * k.BN
			if k.BiasSum == 1 {
				g.WorkspaceBiasFloats = g.TilesM * g.NClusters * k.BM
			}
		}
	}
	if k.WM > 0 && k.WN > 0 {
		g.Acc = k.BM / k.WM * k.BN / k.WN / 32
	}
	return g
}

// The knob values the space takes.
var (
	spaceBM     = []int{32, 64, 96, 128}
	spaceBN     = []int{16, 32, 64}
	spaceWarps  = [][2]int{{1, 1}, {2, 1}, {1, 2}, {2, 2}, {4, 1}, {4, 2}}
	spaceSplit  = []int{1, 2, 4, 8}
	spaceUnroll = []int{1, 2}
	spaceStage  = []int{0, 1}
	// Stage=2's tiles (BM × BN on WM × WN warps) and (BP, Stages).
	spacePipeTiles  = [][4]int{{32, 32, 1, 1}, {64, 64, 2, 2}, {128, 64, 2, 2}, {64, 128, 2, 2}, {128, 128, 2, 4}}
	spacePipeStages = [][2]int{{32, 4}, {64, 3}}
	// Stage=3's tiles (BM × BN on WM × WN warps) and cluster splits.
	spaceRowTiles = [][4]int{{32, 64, 1, 2}, {48, 64, 1, 2}, {64, 64, 2, 2}, {96, 64, 2, 2}, {48, 128, 1, 4}, {96, 128, 2, 4}}
	spaceRowSplit = []int{1, 4, 8}
	// Clusters per tile, searched with full clusters (Split=8) of Stage 2
	// and 3 where the tiles leave SMs idle.
	spaceClusters = []int{2, 4, 8, 16}
	// Stage=4's tiles (BM × BN; WM = BM/16, WN = 1) and (BP, Stages).
	spaceWGMMATiles  = [][2]int{{64, 64}, {64, 128}, {128, 64}, {128, 128}, {128, 256}, {256, 64}, {256, 128}}
	spaceWGMMAStages = [][2]int{{32, 5}, {64, 4}}
	// tf32's: its tiles go through registers, one ahead of three stages.
	spaceWGMMAStagesTF32 = [][2]int{{32, 3}, {64, 3}}
	// tf32 Stage=4's splits: every cluster size, so that the blocks of a
	// few large tiles fill the SMs in one wave (ResNet-50's s3-3x3: 19
	// tiles of 256 × 128, Split 5 on 95 of 132 SMs, where 4 fill 76 and
	// 8 need two waves).
	spaceSplitTF32 = []int{1, 2, 3, 4, 5, 6, 7, 8}
	// tf32 Stage=4's 4-warpgroup tiles (one block an SM) prefetch into L2
	// the tiles this many ahead of the registers' (s3-1x1a 0.109 → 0.094
	// ms, s4-3x3 0.079 → 0.074 on the H100; the smaller tiles, two or more
	// blocks an SM, were 0–6% slower with it).
	spacePrefetchL2 = 2
)

// wgmmaSpace is Stage=4's configurations for p: each tile and pipeline
// depth, with Split 1–8 and then with full clusters (Split=8) and Clusters;
// with a bias, where the ones column would take a column tile of
// its own (C·R·S a multiple of BN), each with BiasSum=1 too.
func wgmmaSpace(p problem.Problem) []knobs {
	stages, splits := spaceWGMMAStages, spaceSplit
	if p.Precision == problem.TF32 {
		stages, splits = spaceWGMMAStagesTF32, spaceSplitTF32
	}
	crs := p.Shape.C * p.Shape.R * p.Shape.S
	var ks []knobs
	for _, tile := range spaceWGMMATiles {
		for _, ps := range stages {
			k := knobs{BM: tile[0], BN: tile[1], WM: tile[0] / 16, WN: 1, Unroll: 1, Stage: 4, BP: ps[0], Stages: ps[1]}
			if p.Precision == problem.TF32 && tile[0] == 256 {
				k.PrefetchL2 = spacePrefetchL2
			}
			ks = appendSplits(ks, k, splits)
			// (tf32's 256-column tiles have no registers left for the sums.)
			if p.Shape.Bias && crs%tile[1] == 0 && !(p.Precision == problem.TF32 && tile[1] == 256) {
				k.BiasSum = 1
				k.PrefetchL2 = 0
				if p.Precision == problem.TF32 && tile[0] == 256 {
					k.PrefetchL2 = spacePrefetchL2
				}
				ks = appendSplits(ks, k, splits)
			}
		}
	}
	return ks
}

// wgmmaRule says why Stage=4 cannot serve p, or "": NHWC, fp16, bf16 or
// tf32 (3xtf32's split operands are not staged), C and K whole 16-byte
// runs.
func wgmmaRule(p problem.Problem) string {
	vec := 16 / p.Precision.ElementBytes()
	switch {
	case p.Layout != problem.NHWC:
		return "Stage=4 reads NHWC rows"
	case p.Precision != problem.FP16 && p.Precision != problem.BF16 && p.Precision != problem.TF32:
		return "Stage=4 is fp16, bf16 and tf32 (3xtf32's low parts are not staged)"
	case p.Shape.C%vec != 0 || p.Shape.K%vec != 0:
		return fmt.Sprintf("Stage=4 copies 16-byte runs: C=%d and K=%d must be multiples of %d", p.Shape.C, p.Shape.K, vec)
	}
	return ""
}

// wgmmaTF32Check says what a tf32 Stage=4 configuration lacks, or "":
// tiles of whole 128-byte rows (32 pixels) in three stages, the tile's
// groups of 4 pixels × 32 channels split evenly over the warps, and the
// registers (the accumulators and the tile in flight, 4 a load) within
// 176, and within a thread's share of the SM's 65,536 less 32.
func wgmmaTF32Check(k knobs) string {
	warps := k.BM / 16
	aLoads, bLoads := k.BP/4*(k.BM/32), k.BP/4*(k.BN/32)
	switch {
	case k.BP%32 != 0 || k.Stages != 3:
		return "Stage=4 in tf32: BP a multiple of 32 (128-byte rows), Stages = 3"
	case aLoads%warps != 0 || bLoads%warps != 0:
		return "Stage=4 in tf32: the tile's groups of 4 pixels × 32 channels do not split evenly over the warps"
	case wgmmaTF32Regs(k) > min(176, 65536/(32*k.WM*k.WN)-32):
		return fmt.Sprintf("Stage=4 in tf32: %d accumulators and %d registers of the tile in flight per thread > %d", k.BN/2, wgmmaTF32Regs(k)-k.BN/2, min(176, 65536/(32*k.WM*k.WN)-32))
	}
	return ""
}

// biasSumRule says why BiasSum=1 or PrefetchL2 cannot serve p, or "":
// both are Stage=4's (check), BiasSum for a shape with a bias, PrefetchL2
// tf32's (wgmmatf32.cu.tmpl).
func biasSumRule(p problem.Problem, k knobs) string {
	switch {
	case k.BiasSum == 1 && !p.Shape.Bias:
		return "BiasSum=1 sums dBias, for a shape with a bias"
	case k.PrefetchL2 > 0 && p.Precision != problem.TF32:
		return "PrefetchL2 is tf32's Stage=4's (fp16's and bf16's cp.async stages run ahead already)"
	}
	return ""
}

// wgmmaTF32Regs is the registers a thread of a tf32 Stage=4 configuration
// holds through its main loop: the accumulators and the tile in flight.
func wgmmaTF32Regs(k knobs) int {
	regs := k.BN/2 + 4*k.BP*(k.BM+k.BN)/128/(k.BM/16)
	if k.BiasSum == 1 {
		regs += 8 // the sums and their rows (a 128 × 128 tile of 32 pixels spilled at 2 blocks an SM)
	}
	return regs
}

// wgmmaTF32MinBlocks is the blocks per SM that a tf32 Stage=4 kernel asks
// the compiler to fit (__launch_bounds__): 2 where two fit the shared
// memory and the threads' registers (at most 128 each for 256 threads)
// leave room beside the accumulators and the tile in flight (96), else 1.
func wgmmaTF32MinBlocks(k knobs, sharedBytes int) int {
	const sharedPerSM = 233472 // sm_90: 228 KiB, 1 KiB of it reserved per block
	if 32*k.WM*k.WN <= 256 && 2*(sharedBytes+1024) <= sharedPerSM && wgmmaTF32Regs(k) <= 96 {
		return 2
	}
	return 1
}

// pipeSpace is Stage=2's configurations with variant v's knobs (Relayout,
// Planes): each tile and pipeline depth, with Split 1–8 and then with full
// clusters (Split=8) and Clusters.
func pipeSpace(v knobs) []knobs {
	var ks []knobs
	for _, tile := range spacePipeTiles {
		for _, ps := range spacePipeStages {
			ks = appendSplits(ks, knobs{BM: tile[0], BN: tile[1], WM: tile[2], WN: tile[3], Unroll: 1, Stage: 2, BP: ps[0], Stages: ps[1], Relayout: v.Relayout, Planes: v.Planes}, spaceSplit)
		}
	}
	return ks
}

// appendSplits appends base with each Split of splits, then with full
// clusters (Split=8) and each Clusters of spaceClusters.
func appendSplits(ks []knobs, base knobs, splits []int) []knobs {
	for _, sp := range splits {
		k := base
		k.Split = sp
		ks = append(ks, k)
	}
	for _, cl := range spaceClusters {
		k := base
		k.Split, k.Clusters = 8, cl
		ks = append(ks, k)
	}
	return ks
}

// waveTwins is ks with, after each tile's clusters (Split=8, Clusters >
// 0), its twin of the clusters that fill one wave (waveClusters) where
// spaceClusters lacks that count: on the H100 only 15 clusters of 8
// one-block-an-SM blocks run at once (Limits.ClusterSMs), and 16 took
// 1.6–1.9× as long as 15 on Stage=5's first layers; Stage=4's twins won
// 15 of the 16 ResNet-50 tunes they were in (Stage=2's: not measured).
func waveTwins(p problem.Problem, ks []knobs, lim family.Limits) []knobs {
	var out []knobs
	for i, k := range ks {
		out = append(out, k)
		last := i+1 == len(ks) || ks[i+1].Clusters == 0 || !sameTile(k, ks[i+1])
		if k.Clusters == 0 || !last {
			continue
		}
		if cw := waveClusters(p, k, lim); cw > 0 && !slices.Contains(spaceClusters, cw) {
			tw := k
			tw.Clusters = cw
			out = append(out, tw)
		}
	}
	return out
}

// sameTile says whether a and b differ at most in Split and Clusters.
func sameTile(a, b knobs) bool {
	a.Split, a.Clusters, b.Split, b.Clusters = 0, 0, 0, 0
	return a == b
}

// rowStaged says whether Stage=3 (input rows staged whole) is searched:
// few input channels (C ≤ 8), where an im2col copy per tap costs more
// than the math.
func rowStaged(p problem.Problem) bool { return p.Shape.C <= 8 }

// Space implements family.Family. Without an sm_90 device (or limits for
// one) every configuration is listed as rejected.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	var out []family.Candidate
	// Stage=4 (wgmma), where it keeps a candidate in fp16 or bf16, takes
	// the place of Stage=2 (mma.sync; 13–20% slower on every ResNet-50
	// fp16 layer of the H100 sweeps): Stage=2 is soft-rejected then. In
	// tf32 both are searched (Stage=2 wins the 64-channel 1×1s on 56²).
	var wgmmaCands []family.Candidate
	if wgmmaRule(p) == "" {
		for _, k := range waveTwins(p, wgmmaSpace(p), lim) {
			wgmmaCands = append(wgmmaCands, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
		}
	}
	wgmmaKept := slices.ContainsFunc(wgmmaCands, func(c family.Candidate) bool { return c.Rejected == "" })
	piped := false // a Stage=2 candidate without clusters is kept
	for _, k := range waveTwins(p, pipeSpace(knobs{}), lim) {
		r := reject(p, k, lim)
		piped = piped || (k.Clusters == 0 && r.Rule == "" && vectorPipe(p, k))
		if r.Rule == "" && wgmmaKept && p.Precision != problem.TF32 {
			r = family.Soft("wgmma", "Stage=4 (wgmma) serves this shape")
		}
		out = append(out, family.NewCandidate(f.Name(), k, r))
	}
	// The planes (Stage=2 reading both operands from the NCHW planes) and
	// the relayout (Stage=2 on NHWC copies), searched beside the rest (each
	// its own group in the exploration: autotune's variantKnobs).
	var variants []knobs
	if planesRule(p) == "" {
		variants = append(variants, knobs{Planes: 1})
	}
	if p.Layout == problem.NCHW {
		variants = append(variants, knobs{Relayout: 1})
	}
	for _, v := range variants {
		for _, k := range waveTwins(p, pipeSpace(v), lim) {
			out = append(out, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
		}
	}
	out = append(out, wgmmaCands...)
	if rowStaged(p) && windowRule(p) == "" {
		for _, k := range windowSpace(p) {
			out = append(out, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
		}
	}
	if rowStaged(p) {
		for _, tile := range spaceRowTiles {
			for _, sp := range spaceRowSplit {
				k := knobs{BM: tile[0], BN: tile[1], WM: tile[2], WN: tile[3], Split: sp, Unroll: 1, Stage: 3}
				out = append(out, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
			}
			for _, cl := range spaceClusters {
				k := knobs{BM: tile[0], BN: tile[1], WM: tile[2], WN: tile[3], Split: 8, Unroll: 1, Stage: 3, Clusters: cl}
				out = append(out, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
			}
		}
	}
	for _, bm := range spaceBM {
		for _, bn := range spaceBN {
			for _, w := range spaceWarps {
				for _, sp := range spaceSplit {
					for _, st := range spaceStage {
						for _, u := range spaceUnroll {
							if st == 1 && u > 1 {
								continue // Unroll applies to Stage=0
							}
							k := knobs{BM: bm, BN: bn, WM: w[0], WN: w[1], Split: sp, Unroll: u, Stage: st}
							r := reject(p, k, lim)
							if r.Rule == "" && piped {
								r = family.Soft("pipeline", "Stage=2 serves this shape")
							}
							out = append(out, family.NewCandidate(f.Name(), k, r))
						}
					}
				}
			}
		}
	}
	return out
}

// vectorPipe says whether Stage=2 copies p's rows in runs of 4 bytes or
// more (NHWC with K and C rows that allow it): only then does it take the
// place of Stage 0 and 1. Element copies (NCHW, odd 2-byte rows) are
// searched beside them: on the flagship's C=3 wgrad they were slower
// (tf32 NCHW 9.0 ms against Stage 0's 7.4, fp16 NHWC 49 ms against 11.6).
func vectorPipe(p problem.Problem, k knobs) bool {
	pp := newPipe(p, k, 32*k.WM*k.WN)
	return p.Layout == problem.NHWC && pp.VABytes >= 4 && pp.VBBytes >= 4
}

// check says what is wrong with a configuration's knobs, or "".
func check(k knobs) string {
	if k.Stage < 0 || k.Stage > 5 {
		return "Stage 0 to 5"
	}
	if k.Band != 0 && k.Stage != 5 {
		return "Band is Stage=5's"
	}
	if k.Clusters < 0 || k.Clusters > 64 {
		return "Clusters 1 to 64"
	}
	if k.BiasSum < 0 || k.BiasSum > 1 || k.BiasSum == 1 && k.Stage != 4 {
		return "BiasSum 0 or 1, and 1 only with Stage=4"
	}
	if k.PrefetchL2 < 0 || k.PrefetchL2 > 8 || k.PrefetchL2 > 0 && k.Stage != 4 {
		return "PrefetchL2 0 to 8, above 0 only with Stage=4"
	}
	if k.Stage == 5 {
		return windowCheck(k)
	}
	if k.Stage == 4 {
		switch {
		case k.Relayout != 0 || k.Planes != 0:
			return "Stage=4: no Relayout or Planes"
		case k.BM < 64 || k.BM > 256 || k.BM%64 != 0 || k.WM != k.BM/16 || k.WN != 1:
			return "Stage=4: BM a multiple of 64 up to 256 (warpgroups), WM = BM/16, WN = 1"
		case k.BN < 64 || k.BN > 256 || k.BN%64 != 0:
			return "Stage=4: BN a multiple of 64 up to 256 (wgmma's N, whole swizzle atoms)"
		case k.Unroll != 1:
			return "Stage=4: Unroll=1"
		case k.Split < 1 || k.Split > 8:
			return "Split 1 to 8 (a portable cluster)"
		case k.BP < 16 || k.BP > 128 || k.BP%16 != 0:
			return "BP a multiple of 16 from 16 to 128 (whole k steps)"
		case k.Stages < 3 || k.Stages > 8:
			return "Stage=4: Stages 3 to 8 (a tile in flight beside the two the wgmmas may read)"
		}
		return ""
	}
	if k.Relayout < 0 || k.Relayout > 1 || k.Relayout == 1 && k.Stage != 2 {
		return "Relayout 0 or 1, and 1 only with Stage=2"
	}
	if k.Planes < 0 || k.Planes > 1 || k.Planes == 1 && (k.Stage != 2 || k.Relayout == 1) {
		return "Planes 0 or 1, and 1 only with Stage=2 and without Relayout"
	}
	if msg := gradmma.CheckTile(k.BM, k.BN, k.WM, k.WN, k.Unroll, min(k.Stage, 1)); msg != "" {
		return msg
	}
	if k.Stage == 3 {
		switch {
		case k.Split < 1 || k.Split > 8:
			return "Split 1 to 8 (a portable cluster)"
		case k.Unroll != 1 || k.BP != 0 || k.Stages != 0:
			return "Stage=3: Unroll=1, no BP or Stages"
		}
		return ""
	}
	if k.Split < 1 || k.Split > 8 {
		return "Split 1 to 8 (a portable cluster)"
	}
	if k.Stage != 2 {
		if k.BP != 0 || k.Stages != 0 {
			return "BP and Stages are Stage=2's"
		}
		return ""
	}
	switch {
	case k.BP < 16 || k.BP > 128 || k.BP%16 != 0:
		return "BP a multiple of 16 from 16 to 128 (whole k steps)"
	case k.Stages < 2 || k.Stages > 6:
		return "Stages 2 to 6"
	case k.BM%32 != 0 || k.BN%32 != 0:
		return "Stage=2: BM and BN multiples of 32 (padded shared rows read without bank conflicts)"
	case k.BN/k.WN%16 != 0:
		return "Stage=2: warp tiles of an even number of n8 fragments (BN a multiple of 16·WN)"
	}
	return ""
}

// checkPipe says what a Stage=2 configuration of geometry g lacks for p,
// or "".
func checkPipe(p problem.Problem, g geometry) string {
	if !g.Pipe.Even {
		return "the threads do not split a tile's copies evenly"
	}
	return ""
}

// reject returns why a configuration is not worth compiling, or the zero
// Rejection.
func reject(p problem.Problem, k knobs, lim family.Limits) family.Rejection {
	if msg := check(k); msg != "" {
		return family.Hard("shape", "%s", msg)
	}
	p, msg := inputRule(p, k)
	if msg != "" {
		return family.Hard("layout", "%s", msg)
	}
	g := geom(p, k)
	accRegs := g.Acc
	if p.Precision == problem.TF32x3 {
		accRegs += g.Acc / 2 // the low parts of the fragments
	}
	if k.Stage == 4 {
		if msg := wgmmaRule(p); msg != "" {
			return family.Hard("layout", "%s", msg)
		}
		if p.Precision == problem.TF32 {
			if msg := wgmmaTF32Check(k); msg != "" {
				return family.Hard("shape", "%s", msg)
			}
		}
		if msg := biasSumRule(p, k); msg != "" {
			return family.Hard("shape", "%s", msg)
		}
		if !lim.SM90a {
			return family.Hard("arch", "Stage=4 (wgmma) needs an sm_90 device and NVRTC 12 or newer (sm_90a)")
		}
	}
	if k.Stage == 2 || k.Stage == 4 {
		if msg := checkPipe(p, g); msg != "" {
			return family.Hard("shape", "%s", msg)
		}
		if g.SharedBytes > lim.MaxSharedPerBlock {
			return family.Hard("shared memory", "%d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
		}
	}
	if k.Stage == 5 {
		if msg := windowRule(p); msg != "" {
			return family.Hard("precision", "%s", msg)
		}
		if !lim.SM90a {
			return family.Hard("arch", "Stage=5 (wgmma) needs an sm_90 device and NVRTC 12 or newer (sm_90a)")
		}
		if regs, most := windowRegs(k, g.Win), min(200, 65536/g.Threads-32); regs > most {
			return family.Hard("registers", "%d registers of accumulators, A fragments and the tile in flight per thread > %d", regs, most)
		}
		if g.SharedBytes > lim.MaxSharedPerBlock {
			return family.Hard("shared memory", "%d B per block (window %d rows of %d elements) > %d", g.SharedBytes, g.Win.Units, g.Win.WB, lim.MaxSharedPerBlock)
		}
		if g.Parts > g.Win.Bands {
			return family.Soft("waste", "Split=%d·Clusters=%d leaves a block without bands (%d)", k.Split, g.NClusters, g.Win.Bands)
		}
		if p.Precision == problem.TF32x3 {
			// Out of the search (a pin lifts it) until autotune's
			// TestWGradMMAWindow has passed its 3xtf32 problems on a GPU.
			// Soft is enough here: Stage=3 keeps candidates for every first
			// layer, so Enumerate does not admit these.
			return family.Soft(family.Unverified, "Stage=5's 3xtf32 has not run on a GPU yet: pin it to measure it")
		}
	}
	maxAcc := 96
	if k.Stage == 4 || k.Stage == 5 {
		maxAcc = 128 // wgmma m64n256: 128 per thread, in a block of few warps
	}
	switch {
	case lim.Arch != 0 && lim.Arch < 90:
		return family.Hard("arch", "wgradmma needs thread-block clusters (sm_90), not sm_%d", lim.Arch)
	case g.Acc*k.Unroll > maxAcc || accRegs > maxAcc:
		return family.Hard("registers", "%d accumulators per thread with Unroll=%d (%d registers with 3xtf32's low parts)", g.Acc, k.Unroll, accRegs)
	case k.Stage == 1 && g.Staging.Reject(g.Acc, 1, 112).Rule != "":
		return g.Staging.Reject(g.Acc, 1, 112)
	case g.Threads > lim.MaxThreadsPerBlock:
		return family.Hard("threads", "%d per block > %d", g.Threads, lim.MaxThreadsPerBlock)
	case k.Stage < 2 && g.SharedBytes > 48*1024:
		return family.Hard("shared memory", "%d B per block > 48 KiB", g.SharedBytes)
	case k.Stage == 3 && g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
	case g.TilesM > 65535:
		return family.Hard("grid", "%d channel tiles > 65535 (gridDim.y)", g.TilesM)
	case 4*g.WorkspaceFloats > maxWorkspace:
		return family.Hard("workspace", "%d B of partial tiles > %d", 4*g.WorkspaceFloats, maxWorkspace)
	case k.Stage == 3 && g.Parts > g.Rows.Rows:
		return family.Soft("waste", "Split=%d·Clusters=%d leaves a block without output rows (N·P=%d)", k.Split, g.NClusters, g.Rows.Rows)
	case k.Stage != 5 && g.Parts > 1 && g.Chunk*(g.Parts-1) >= g.L: // (Stage=5 splits bands: its own rule above)
		return family.Soft("waste", "Split=%d·Clusters=%d leaves a block without pixels (L=%d)", k.Split, g.NClusters, g.L)
	case k.BM > 32 && 2*p.Shape.K <= k.BM:
		return family.Soft("waste", "BM=%d is more than twice K=%d", k.BM, p.Shape.K)
	case k.BN > 16 && 2*g.NG <= k.BN:
		return family.Soft("waste", "BN=%d is more than twice the %d columns", k.BN, g.NG)
	case lim.SMs > 0 && g.TilesM*g.TilesN*g.Parts < lim.SMs/2:
		return family.Soft("occupancy", "%d blocks for %d SMs", g.TilesM*g.TilesN*g.Parts, lim.SMs)
	case lim.SMs > 0 && k.Split > 1 && g.TilesM*g.TilesN*(k.Split/2) >= 2*lim.SMs:
		return family.Soft("split", "%d tiles fill the SMs without Split=%d", g.TilesM*g.TilesN, k.Split)
	case lim.SMs > 0 && g.NClusters > 1 && g.TilesM*g.TilesN*k.Split*(g.NClusters/2) >= 2*lim.SMs:
		return family.Soft("split", "%d blocks fill the SMs without Clusters=%d", g.TilesM*g.TilesN*k.Split*(g.NClusters/2), g.NClusters)
	}
	return family.Rejection{}
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	k, cfg, err := family.RenderKnobs(f.Name(), f.Serves, p, cfg, check)
	if err != nil {
		return family.Kernel{}, err
	}
	if k.Clusters == 1 {
		k.Clusters = 0 // one cluster is the kernel without a workspace, under its ID
		cfg = family.KnobsConfig(k)
	}
	orig := p
	p, msg := inputRule(p, k)
	if msg != "" {
		return family.Kernel{}, fmt.Errorf("wgradmma: config %s: %s", cfg, msg)
	}
	g := geom(p, k)
	if g.TilesM > 65535 {
		return family.Kernel{}, fmt.Errorf("wgradmma: config %s: %d channel tiles > 65535 (gridDim.y)", cfg, g.TilesM)
	}
	if 4*g.WorkspaceFloats > maxWorkspace {
		return family.Kernel{}, fmt.Errorf("wgradmma: config %s: %d B of partial tiles > %d", cfg, 4*g.WorkspaceFloats, maxWorkspace)
	}
	if g.Parts > 65535 {
		return family.Kernel{}, fmt.Errorf("wgradmma: config %s: %d blocks per tile > 65535 (gridDim.z)", cfg, g.Parts)
	}
	if k.Stage < 2 && g.SharedBytes > 48*1024 {
		return family.Kernel{}, fmt.Errorf("wgradmma: config %s: %d B of shared memory per block > 48 KiB (no opt-in)", cfg, g.SharedBytes)
	}
	if (k.Stage == 3 || k.Stage == 5) && g.SharedBytes > maxShared {
		return family.Kernel{}, fmt.Errorf("wgradmma: config %s: %d B of shared memory per block > %d", cfg, g.SharedBytes, maxShared)
	}
	if k.Stage == 5 {
		if msg := windowRule(p); msg != "" {
			return family.Kernel{}, fmt.Errorf("wgradmma: config %s: %s", cfg, msg)
		}
	}
	if k.Stage == 4 {
		if msg := wgmmaRule(p); msg != "" {
			return family.Kernel{}, fmt.Errorf("wgradmma: config %s: %s", cfg, msg)
		}
		if p.Precision == problem.TF32 {
			if msg := wgmmaTF32Check(k); msg != "" {
				return family.Kernel{}, fmt.Errorf("wgradmma: config %s: %s", cfg, msg)
			}
		}
		if msg := biasSumRule(p, k); msg != "" {
			return family.Kernel{}, fmt.Errorf("wgradmma: config %s: %s", cfg, msg)
		}
	}
	if k.Stage == 2 || k.Stage == 4 {
		if msg := checkPipe(p, g); msg != "" {
			return family.Kernel{}, fmt.Errorf("wgradmma: config %s: %s", cfg, msg)
		}
		if g.SharedBytes > maxShared {
			return family.Kernel{}, fmt.Errorf("wgradmma: config %s: %d B of shared memory per block > %d", cfg, g.SharedBytes, maxShared)
		}
	}
	if k.Stage == 1 && !g.Staging.Even {
		return family.Kernel{}, fmt.Errorf("wgradmma: config %s: %d threads do not split the staged chunk evenly", cfg, g.Threads)
	}
	mm := gradmma.For(p, "dW")
	mm.Doc += ", dBias FP32"
	minBlocks := 0 // wgmmatf32.cu.tmpl's alone (its tiles' rows: BM ≥ 64)
	if k.Stage == 4 && p.Precision == problem.TF32 {
		minBlocks = wgmmaTF32MinBlocks(k, g.SharedBytes)
	}
	name := fmt.Sprintf("convgen_wgradmma_%s_%s", family.PrecisionTag(p.Precision), family.KernelSuffix(cfg))
	data := struct {
		family.ShapeData
		geometry
		knobs
		Name, Config, PrecisionDoc, TypeName, MMAShape string
		Split3                                         bool
		// StepSums: each 3xTF32 k step summed from zero in the tensor
		// core and added to the accumulators in FP32 (mmaissue).
		StepSums bool
		// The relayout (Relayout=1): the problem's own channel counts
		// (the shape's are the copies'), its shape, the blocks of a launch
		// (a ticket's epoch) and the prologue's launch (kernels/launch).
		CIn, KIn, Blocks                int
		OrigShape                       string
		PrologueBlocks, PrologueThreads int
		// Stage=4's wgmma operands (wgmmaOperands).
		wgmmaOperands
		// MinBlocks: tf32 Stage=4's blocks per SM for __launch_bounds__.
		MinBlocks int
	}{family.NewShapeData(p), g, k, name, cfg.String(), mm.Doc, mm.TypeName, mm.Shape, mm.Split3, mm.Split3,
		orig.Shape.C, orig.Shape.K, g.TilesN * g.TilesM * g.Parts, orig.Shape.String(), launch.PrologueBlocks, launch.PrologueThreads,
		newWGMMAOperands(g.Acc), minBlocks}
	file := f.Template()
	switch k.Stage {
	case 2:
		file = "pipeline.cu.tmpl"
	case 3:
		file = "rows.cu.tmpl"
	case 4:
		file = "wgmma.cu.tmpl"
		if p.Precision == problem.TF32 {
			file = "wgmmatf32.cu.tmpl"
		}
	case 5:
		file = "window.cu.tmpl"
	}
	src, err := family.Render(templateFS, file, data, "reduce.tmpl", "hopper.tmpl")
	if err != nil {
		return family.Kernel{}, err
	}
	arch := ""
	if k.Stage >= 4 {
		arch = "a" // wgmma: sm_90a
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src, ArchSuffix: arch,
		Launch: family.Launch{Grid: [3]int{g.TilesN, g.TilesM, g.Parts}, Block: [3]int{g.Threads, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}

// wgmmaOperands are the inline-assembly operands of Stage=4's wgmma: the
// acc accumulators acc[0][i/4][i%4] (%0 ..), then descriptor A, descriptor
// B and the scale-d flag.
type wgmmaOperands struct {
	AccOperands, AccConstrs                  string
	DescAOperand, DescBOperand, ScaleOperand int
}

// newWGMMAOperands is wgmmaOperands for acc accumulators per thread.
func newWGMMAOperands(acc int) wgmmaOperands {
	regs := make([]string, acc)
	cons := make([]string, acc)
	for i := range acc {
		regs[i] = fmt.Sprintf("%%%d", i)
		cons[i] = fmt.Sprintf(`"+f"(acc[0][%d][%d])`, i/4, i%4)
	}
	return wgmmaOperands{AccOperands: "{" + strings.Join(regs, ", ") + "}", AccConstrs: strings.Join(cons, ", "),
		DescAOperand: acc, DescBOperand: acc + 1, ScaleOperand: acc + 2}
}

// Cost implements family.CostModel: a configuration's predicted time is
// the blocks an SM runs over the launch (the waves of SMs·resident
// blocks, times the resident blocks, at most 3: shared memory, threads)
// times a block's pixels (CHUNK) times its tile (BM·BN), over a tile
// efficiency that grows with the tile ((BM·BN/8192)^0.2: wgmma's wider N,
// fewer copies a multiply-add) and with tiles of 64 pixels (1.2: half the
// barriers a pixel); clusters cost 20% a doubling (the workspace's sums),
// and the partial tiles' sums BM·BN a block over the SMs. Fitted by hand
// to full sweeps of six ResNet-50 fp16 NHWC layers at N=32 on an H100
// (testdata/wgradmma-sweeps-h100.csv, TestWGradMMACostSweeps): the 8
// cheapest held the fastest in all six, the 3 cheapest one within 30%.
// tf32's Stage=4 has a model of its own (tf32Cost). The search compares
// costs only within a group of the exploration, whose models agree.
func (Family) Cost(p problem.Problem, cfg family.Config, lim family.Limits) float64 {
	k, err := family.ParseKnobs[knobs]("wgradmma", cfg)
	if err != nil || check(k) != "" {
		return math.Inf(1)
	}
	p, msg := inputRule(p, k)
	if msg != "" {
		return math.Inf(1)
	}
	g := geom(p, k)
	if lim.SMs <= 0 {
		lim = family.DefaultLimits(90) // an H100's or H200's
	}
	if k.Stage == 5 {
		return windowCost(k, g, lim)
	}
	c := modelOf(p, k, g).cost(k, g, lim)
	if k.BiasSum == 1 {
		c *= 1.01 // the sums from shared memory: 2–3% on equal tiles (H100), so that the ones column ranks first where it costs no wave
	}
	return c
}

// modelOf is Cost's model for k (Stage 0 to 4).
func modelOf(p problem.Problem, k knobs, g geometry) costModel {
	if k.Stage == 4 && p.Precision == problem.TF32 {
		return tf32Cost(k, g)
	}
	return costModel{effExp: 0.2, bp64: 1.2, sums: 1}
}

// costModel is what Cost's models differ in: the tile efficiency's
// exponent ((BM·BN/8192)^effExp) and factor for 64-pixel tiles (bp64),
// the cost of a block's partial tile (sums·BM·BN over the SMs), and the
// registers a thread holds (regs; 0: the blocks an SM holds are counted
// by shared memory and threads only).
type costModel struct {
	effExp, bp64, sums float64
	regs               int
}

// cost is the model's predicted time of configuration k (geometry g) on
// sms SMs (see Cost).
func (m costModel) cost(k knobs, g geometry, lim family.Limits) float64 {
	sms := lim.SMs
	resident := m.resident(g)
	blocks := g.TilesM * g.TilesN * g.Parts
	waves := family.CeilDiv(blocks, lim.BlockSlots(k.Split, resident)) // whole clusters of Split blocks
	tile := float64(k.BM * k.BN)
	eff := math.Pow(tile/8192, m.effExp)
	if k.BP == 64 {
		eff *= m.bp64
	}
	t := float64(waves*resident) * float64(g.Chunk) * tile / eff
	if g.NClusters > 1 {
		t *= 1 + 0.2*math.Log2(float64(g.NClusters))
	}
	return t + m.sums*tile*float64(blocks)/float64(sms)
}

// resident is the blocks of geometry g an SM holds by the model: shared
// memory, threads and (where the model counts them) registers, at most 3.
func (m costModel) resident(g geometry) int {
	const sharedPerSM = 233472 // sm_90: 228 KiB, 1 KiB of it reserved per block
	resident := max(1, min(3, sharedPerSM/(g.SharedBytes+1024), 2048/g.Threads))
	if m.regs > 0 {
		resident = max(1, min(resident, 65536/(m.regs*g.Threads)))
	}
	return resident
}

// waveClusters is the clusters per tile (Clusters) with which k's tiles,
// in clusters of 8 (Split=8), fill one wave of the GPU by the cost model's
// count of the blocks an SM holds (Limits.BlockSlots), or 0 where that is
// at most 1 or more than 64.
func waveClusters(p problem.Problem, k knobs, lim family.Limits) int {
	k.Split, k.Clusters = 8, 2 // any Clusters > 1: the geometry with the workspace's tile sizes
	g := geom(p, k)
	tiles := g.TilesM * g.TilesN
	cw := lim.BlockSlots(8, modelOf(p, k, g).resident(g)) / 8 / max(1, tiles)
	if cw <= 1 || cw > 64 {
		return 0
	}
	return cw
}

// tf32Cost is Cost's model for tf32's Stage=4, whose copies through registers
// make its tile efficiency grow faster with the tile ((BM·BN/8192)^0.8:
// the 4-warpgroup tiles win) and fall with 64-pixel tiles (0.6: twice the
// registers in flight), whose blocks are held to the SMs by registers as
// well as shared memory (the accumulators and the tile in flight, plus
// 40), and whose partial tiles cost more to add up (64·BM·BN a block over
// the SMs: a wave more is rarely worth a smaller chunk). Fitted by hand to
// full sweeps of four ResNet-50 tf32 NHWC layers at N=32 on an H100
// (testdata/wgradmma-tf32-sweeps-h100.csv, TestWGradMMATF32CostSweeps):
// the 3 cheapest held one within 1% of the fastest in all four.
func tf32Cost(k knobs, g geometry) costModel {
	regs := min(255, wgmmaTF32Regs(k)+40)
	if wgmmaTF32MinBlocks(k, g.SharedBytes) == 2 {
		regs = 128
	}
	return costModel{effExp: 0.8, bp64: 0.6, sums: 64, regs: regs}
}
