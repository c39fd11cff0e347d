// Package igemm is the multistage mma.sync implicit-GEMM (FP16, BF16, TF32,
// 3xTF32) kernel family for the forward convolution and its data gradient:
// its knobs, search space, static rules and template (igemm.cu.tmpl),
// rendered through package kernels/family.
package igemm

import (
	"embed"
	"fmt"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/dgradphase"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed igemm.cu.tmpl
var templateFS embed.FS

// Family is the multistage implicit-GEMM tensor-core family
// (igemm.cu.tmpl) for channel-heavy layers on sm_80 and newer:
// mma.sync m16n8k16 with FP16 or BF16 operands, or m16n8k8 with TF32
// operands (3xtf32: each operand split into a TF32 big part and a TF32
// residual, three products each), FP32 accumulation, both layouts, groups=1,
// and any C, K, stride, padding and dilation (every edge is zero-filled or
// predicated). Its PTX for sm_80 runs on every later GPU, so it is also the
// portable fallback for channel-heavy shapes.
//
// The GEMM has M = N·P·Q output pixels, N = K output channels and a
// reduction over C·R·S taps in the filter's order ((r, s, c) for KRSC,
// (c, r, s) for KCRS). Operands come through a Stages-deep cp.async pipeline:
// 16-byte copies where the channel count allows (NHWC with C·elemsize a
// multiple of 16; the filter with C·R·S·elemsize a multiple of 16), 8- or
// 4-byte copies otherwise, and element loads for 2-byte data where not even
// 4 bytes are contiguous.
//
// It also serves op=dgrad (problem.Op), the same pipeline on the data
// gradient's GEMM: M = the dX pixels of one stride phase (h mod stride_h,
// w mod stride_w; grid z), N = C input channels, and a reduction over the
// phase's valid taps × K output channels (tap-major, k fastest), so no
// stride hole is visited. A gathers dY (K contiguous channels in NHWC), B
// is the filter W[k][c] of each tap, contiguous along c (MN-major): B
// tiles are [BK][BN] in shared memory, read by ldmatrix.trans (fp16, bf16)
// or scalar loads (tf32). No bias, epilogue chain or other output type.
//
// Knobs:
//   - BM, BN: output pixels and output channels per block tile (dgrad:
//     dX pixels of a phase and input channels);
//   - BK: taps (dgrad: tap × output-channel entries) per pipeline stage
//     (k-tile);
//   - WarpsM, WarpsN: the block's warps along pixels and channels;
//   - Stages: k-tiles in flight (2 to 4);
//   - Fold (dgrad with a stride > 1 only): 1 folds the stride phases into
//     the GEMM's columns instead of the grid: one GEMM of the N·HP·WP phase
//     pixels by SH·SW·C columns (phase row a, phase column b, channel c),
//     over the union of the phases' output offsets (dp, dq) × K, B[(dp, dq,
//     k)][(a, b, c)] = W[k][c][r][s] for the tap (r, s) that phase (a, b)
//     meets at (dp, dq), zero where it meets none. A (dY) is the same for
//     every phase, so a channel-poor layer (the flagship's C=3, stride 4:
//     48 columns instead of 3) fills the tile's columns, at the price of
//     the zero entries. Searched where C < 32;
//   - SplitK: blocks of a thread-block cluster (grid z; dgrad: z = phase ·
//     SplitK + rank) that split one tile's reduction in contiguous,
//     balanced k-tile ranges and add their FP32 partial tiles up in
//     distributed shared memory in rank order (deterministic, no workspace,
//     no atomics): 2, 4 or 8 (a portable cluster), sm_90 only; absent (or
//     1) for none. Searched (2 and 4, a few tiles) only where the unsplit
//     grid has fewer blocks than the device has SMs.
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "igemm" }

// Template implements family.Family.
func (Family) Template() string { return "igemm.cu.tmpl" }

// Serves implements family.Family: op fprop or dgrad, groups=1 in fp16,
// bf16, tf32 and 3xtf32.
func (Family) Serves(p problem.Problem) error {
	switch p.Op {
	case problem.OpFprop:
		if err := p.Shape.Validate(); err != nil {
			return err
		}
	case problem.OpDgrad:
		// Validate refuses a gradient's epilogue chain and output type.
		if err := p.Validate(); err != nil {
			return fmt.Errorf("igemm dgrad: %w", err)
		}
		if err := dgradphase.Foldable(p.Shape); err != nil {
			return fmt.Errorf("igemm dgrad: %w", err)
		}
	default:
		return family.OtherOp("igemm computes op=fprop and op=dgrad, not op=%s (the %s family serves it)", p.Op, p.Op)
	}
	if err := family.OneGroup("igemm", p.Shape); err != nil {
		return err
	}
	if err := family.Index32("igemm", p.Shape); err != nil {
		return err
	}
	switch p.Precision {
	case problem.FP16, problem.BF16, problem.TF32, problem.TF32x3:
	default:
		return fmt.Errorf("igemm serves fp16, bf16, tf32 and 3xtf32, not %s", p.Precision)
	}
	if _, err := problem.ParseLayout(string(p.Layout)); err != nil {
		return err
	}
	return nil
}

// igemmKnobs are an igemm configuration's knobs (see Family). SplitK is
// optional (0: no split), so that the unsplit configurations keep their IDs
// and kernels.
type igemmKnobs struct {
	BM, BN, BK, WarpsM, WarpsN, Stages int
	SplitK                             int `knob:",optional"`
	Fold                               int `knob:",optional"`
}

func parseIGEMMConfig(cfg family.Config) (igemmKnobs, error) {
	c, err := family.ParseKnobs[igemmKnobs]("igemm", cfg)
	if err != nil {
		return c, err
	}
	switch {
	case c.WarpsM < 1 || c.WarpsN < 1 || c.BM < 16 || c.BN < 16:
		return c, fmt.Errorf("igemm: config %s: want positive warps and tiles of at least 16", cfg)
	case c.BM%c.WarpsM != 0 || c.BN%c.WarpsN != 0 || (c.BM/c.WarpsM)%32 != 0 || (c.BN/c.WarpsN)%16 != 0:
		return c, fmt.Errorf("igemm: config %s: warp tiles BM/WarpsM and BN/WarpsN must be multiples of 32 and 16", cfg)
	case c.BK < 16 || c.BK%16 != 0:
		return c, fmt.Errorf("igemm: config %s: BK must be a positive multiple of 16", cfg)
	case c.Stages < 2 || c.Stages > 8:
		return c, fmt.Errorf("igemm: config %s: Stages must be 2 to 8", cfg)
	case c.SplitK != 0 && c.SplitK != 1 && c.SplitK != 2 && c.SplitK != 4 && c.SplitK != 8:
		return c, fmt.Errorf("igemm: config %s: SplitK must be 1, 2, 4 or 8 (a portable cluster)", cfg)
	case c.Fold != 0 && c.Fold != 1:
		return c, fmt.Errorf("igemm: config %s: Fold must be 0 or 1", cfg)
	}
	if c.SplitK == 1 {
		c.SplitK = 0 // SplitK=1 is the unsplit kernel, under its ID
	}
	return c, nil
}

// igemmGeometry holds a configuration's derived sizes; the template asserts
// each one it uses.
//
// For dgrad, M is the pixels of one stride phase (N·HP·WP), TilesN covers
// C, KRed and KTiles are the longest phase's, Pitch is A's row (BK + pad),
// BPitch B's (BN + 8: [BK][BPitch], channel-contiguous), VecA counts dY
// channels per A load and VecB filter channels per B load.
//
// Split-K: Split blocks per cluster (1: none), RankKTiles the fewest
// k-tiles a block gets (dgrad: of the longest phase), GridZ the grid's z
// (phases · Split), PartPitch the FP32 partial tile's row in floats (BN +
// 8), PartBytes its size (BM rows), RankRows the tile rows each block sums.
type igemmGeometry struct {
	M, KRed, KTiles, TilesM, TilesN int
	Threads, WTM, WTN, ElemBytes    int
	Pitch, VecA, VecB               int // tile row in elements; taps per A and B load
	SharedBytes, Registers          int // per block; a per-thread estimate
	Split3                          bool
	HP, WP, Phases, BPitch          int // dgrad: phase rows and columns, phases, B's row
	// Folded: the folded columns SH·SW·C and the union of the phases' output
	// offsets, dp in [DPMin, DPMin+NDP), dq in [DQMin, DQMin+NDQ).
	Folded                         bool
	CF, DPMin, NDP, DQMin, NDQ     int
	Split, RankKTiles, GridZ       int
	PartPitch, PartBytes, RankRows int
}

// igemmVec is the number of elements of one load: the widest of 16, 8 and 4
// bytes that divides run contiguous elements, else one element.
func igemmVec(run, elemBytes int) int {
	for _, bytes := range []int{16, 8, 4} {
		if v := bytes / elemBytes; v >= 1 && run%v == 0 {
			return v
		}
	}
	return 1
}

func igemmGeom(p problem.Problem, c igemmKnobs) igemmGeometry {
	s := p.Shape
	eb := p.Precision.ElementBytes()
	var g igemmGeometry
	g.M = s.N * s.P() * s.Q()
	g.KRed = s.C * s.R * s.S
	g.KTiles = family.CeilDiv(g.KRed, c.BK)
	g.TilesM, g.TilesN = family.CeilDiv(g.M, c.BM), family.CeilDiv(s.K, c.BN)
	g.Threads = 32 * c.WarpsM * c.WarpsN
	g.ElemBytes = eb
	g.WTM, g.WTN = c.BM/c.WarpsM, c.BN/c.WarpsN
	// 16 bytes of padding per row: 8 rows of a fragment load start in 8
	// different 16-byte bank groups (rows of 64 or 128 bytes + 16).
	g.Pitch = c.BK + 16/eb
	g.VecA = 1
	if p.Layout == problem.NHWC {
		g.VecA = igemmVec(s.C, eb)
	}
	g.VecB = igemmVec(g.KRed, eb)
	g.SharedBytes = c.Stages*(c.BM+c.BN)*g.Pitch*eb + 16*c.BM
	if p.Op == problem.OpDgrad {
		g.HP, g.WP = family.CeilDiv(s.H, s.StrideH), family.CeilDiv(s.W, s.StrideW)
		g.Phases = s.StrideH * s.StrideW
		g.M = s.N * g.HP * g.WP
		g.KRed = dgradphase.Rows(s).Most * dgradphase.Cols(s).Most * s.K
		g.KTiles = family.CeilDiv(g.KRed, c.BK)
		g.TilesM, g.TilesN = family.CeilDiv(g.M, c.BM), family.CeilDiv(s.C, c.BN)
		// 8 elements of padding: 16 bytes (fp16, bf16: ldmatrix rows in
		// distinct bank groups), 32 bytes (tf32: rows t of a fragment 8
		// banks apart).
		g.BPitch = c.BN + 8
		g.VecA, g.VecB = 1, 1
		if p.Layout == problem.NHWC {
			g.VecA, g.VecB = igemmVec(s.K, eb), igemmVec(s.C, eb)
		}
		g.SharedBytes = c.Stages*(c.BM*g.Pitch+c.BK*g.BPitch)*eb + 16*c.BM
		if c.Fold == 1 {
			// One GEMM: columns (a, b, c), entries (dp, dq, k) over the
			// union of the phases' offsets; B is gathered one element at a
			// time (its rows are not contiguous filter runs).
			g.Folded, g.Phases = true, 1
			g.CF = s.StrideH * s.StrideW * s.C
			g.DPMin, g.NDP = dgradphase.Rows(s).OffsetSpan()
			g.DQMin, g.NDQ = dgradphase.Cols(s).OffsetSpan()
			g.KRed = g.NDP * g.NDQ * s.K
			g.KTiles = family.CeilDiv(g.KRed, c.BK)
			g.TilesN = family.CeilDiv(g.CF, c.BN)
			g.VecB = 1
		}
	}
	g.Split = max(1, c.SplitK)
	g.RankKTiles = g.KTiles / g.Split
	g.GridZ = max(1, g.Phases) * g.Split
	if g.Split > 1 {
		// The partial tile reuses the stages once the main loop is done
		// (the row table before them stays: dgrad's stores read it).
		g.PartPitch = c.BN + 8
		g.PartBytes = c.BM * g.PartPitch * 4
		g.RankRows = c.BM / g.Split
		g.SharedBytes = max(g.SharedBytes, 16*c.BM+g.PartBytes)
	}
	g.Split3 = p.Precision == problem.TF32x3
	fm, fn := g.WTM/16, g.WTN/8
	acc := fm * fn * 4
	frags := fm*4 + fn*2
	if g.Split3 {
		frags *= 2
	}
	g.Registers = acc + frags + 40
	return g
}

// The knob values the space takes: block tiles, warp grids, and (BK,
// Stages) pairs per element size.
var (
	igemmTiles  = [][2]int{{128, 128}, {128, 64}, {64, 128}, {64, 64}}
	igemmWarps  = [][2]int{{2, 2}, {4, 2}, {2, 4}, {4, 1}, {1, 4}}
	igemmStages = map[int][][2]int{ // element bytes → (BK, Stages)
		2: {{32, 2}, {32, 3}, {32, 4}},
		4: {{16, 3}, {16, 4}, {32, 2}, {32, 3}},
	}
	// Split-K is searched for small grids only, on these tiles (BM, BN,
	// WarpsM, WarpsN, Stages; BK 32) × igemmSplitK: the tiles ResNet-50's
	// small maps tuned to unsplit.
	igemmSplitK     = []int{2, 4}
	igemmSplitTiles = [][5]int{{128, 128, 2, 4, 3}, {64, 128, 2, 4, 4}, {128, 64, 4, 2, 3}}
)

// Space implements family.Family: warp tiles of 32 or 64 pixels by 32 or 64
// channels, 4 or 8 warps. Split-K candidates (igemmSplitTiles ×
// igemmSplitK) are listed only where the tile's unsplit grid (dgrad: over
// every phase) has fewer blocks than the device has SMs and every block
// keeps at least 2 k-tiles.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	var out []family.Candidate
	for _, tile := range igemmTiles {
		for _, wg := range igemmWarps {
			wtm, wtn := tile[0]/wg[0], tile[1]/wg[1]
			if (wtm != 32 && wtm != 64) || (wtn != 32 && wtn != 64) {
				continue
			}
			for _, ks := range igemmStages[p.Precision.ElementBytes()] {
				c := igemmKnobs{BM: tile[0], BN: tile[1], BK: ks[0], WarpsM: wg[0], WarpsN: wg[1], Stages: ks[1]}
				out = append(out, family.NewCandidate(f.Name(), c, f.reject(p, c, lim)))
			}
		}
	}
	if foldable(p) {
		// The folded dgrad: the unsplit tiles of at most 64 columns.
		for _, c := range out[:len(out):len(out)] {
			if k := c.Config; k["BN"] <= 64 {
				fc := igemmKnobs{BM: k["BM"], BN: k["BN"], BK: k["BK"], WarpsM: k["WarpsM"], WarpsN: k["WarpsN"], Stages: k["Stages"], Fold: 1}
				out = append(out, family.NewCandidate(f.Name(), fc, f.reject(p, fc, lim)))
			}
		}
	}
	for _, t := range igemmSplitTiles {
		for _, sk := range igemmSplitK {
			c := igemmKnobs{BM: t[0], BN: t[1], BK: 32, WarpsM: t[2], WarpsN: t[3], Stages: t[4], SplitK: sk}
			g := igemmGeom(p, c)
			if lim.SMs == 0 || g.TilesM*g.TilesN*max(1, g.Phases) >= lim.SMs || g.RankKTiles < 2 {
				continue
			}
			out = append(out, family.NewCandidate(f.Name(), c, f.reject(p, c, lim)))
		}
	}
	return out
}

// foldable says whether the folded dgrad is searched: a strided dgrad with
// fewer than 32 input channels (an unfolded tile of 64 columns would be
// mostly empty).
func foldable(p problem.Problem) bool {
	s := p.Shape
	return p.Op == problem.OpDgrad && s.StrideH*s.StrideW > 1 && s.C < 32
}

// reject returns why a configuration is not worth compiling, or the zero
// Rejection: the device's limits reject hard (split-K: below sm_90, or
// fewer than 2 k-tiles a block); tiles more than twice the problem's
// extent, a SplitK whose half already gives a block per SM, and an
// unfolded dgrad tile at least four times wider than C where the folded
// one is searched, are pruned by soft rules.
func (Family) reject(p problem.Problem, c igemmKnobs, lim family.Limits) family.Rejection {
	g := igemmGeom(p, c)
	blocks := g.TilesM * g.TilesN * g.GridZ
	switch {
	case lim.Arch > 0 && lim.Arch < 80:
		return family.Hard("arch", "mma.sync with FP16/BF16 m16n8k16 or TF32 operands, ldmatrix and cp.async need sm_80 or newer, not sm_%d", lim.Arch)
	case g.Threads > lim.MaxThreadsPerBlock:
		return family.Hard("threads", "%d per block > %d", g.Threads, lim.MaxThreadsPerBlock)
	case g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
	case g.Registers > lim.MaxRegsPerThread:
		return family.Hard("registers", "about %d per thread > %d", g.Registers, lim.MaxRegsPerThread)
	case g.Registers*g.Threads > lim.RegistersPerSM:
		return family.Hard("registers", "about %d per block > %d per SM", g.Registers*g.Threads, lim.RegistersPerSM)
	case g.Split > 1 && lim.Arch > 0 && lim.Arch < 90:
		return family.Hard("arch", "SplitK=%d needs thread-block clusters (sm_90), not sm_%d", g.Split, lim.Arch)
	case g.Split > 1 && g.RankKTiles < 2:
		return family.Hard("split", "SplitK=%d leaves a block %d of the %d k-tiles (at least 2)", g.Split, g.RankKTiles, g.KTiles)
	case c.Fold == 1 && p.Op != problem.OpDgrad:
		return family.Hard("fold", "Fold folds the data gradient's stride phases; op=%s has none", p.Op)
	case c.Fold == 1 && p.Shape.StrideH*p.Shape.StrideW == 1:
		return family.Hard("fold", "Fold needs a stride > 1 (one phase has nothing to fold)")
	case g.GridZ > 65535:
		return family.Hard("grid", "%d stride phases × SplitK %d > 65535 (gridDim.z)", max(1, g.Phases), g.Split)
	case lim.SMs > 0 && g.Split > 1 && blocks/2 >= lim.SMs:
		return family.Soft("split", "SplitK=%d/2 already gives %d blocks for %d SMs", g.Split, blocks/2, lim.SMs)
	case !g.Folded && foldable(p) && 4*p.Shape.C <= c.BN:
		return family.Soft("waste", "BN=%d is at least four times C=%d: the folded candidates (Fold=1) fill the columns", c.BN, p.Shape.C)
	case g.Folded && c.BN > 64 && 2*g.CF <= c.BN:
		return family.Soft("waste", "BN=%d is more than twice the %d folded columns", c.BN, g.CF)
	case !g.Folded && p.Op == problem.OpDgrad && c.BN > 64 && 2*p.Shape.C <= c.BN:
		return family.Soft("waste", "BN=%d is more than twice C=%d", c.BN, p.Shape.C)
	case p.Op == problem.OpDgrad && c.BM > 64 && 2*g.M <= c.BM:
		return family.Soft("waste", "BM=%d is more than twice the %d pixels of a phase", c.BM, g.M)
	case p.Op == problem.OpDgrad:
		return family.Rejection{}
	case c.BN > 64 && 2*p.Shape.K <= c.BN:
		return family.Soft("waste", "BN=%d is more than twice K=%d", c.BN, p.Shape.K)
	case c.BM > 64 && 2*g.M <= c.BM:
		return family.Soft("waste", "BM=%d is more than twice M=%d", c.BM, g.M)
	}
	return family.Rejection{}
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	if err := f.Serves(p); err != nil {
		return family.Kernel{}, err
	}
	c, err := parseIGEMMConfig(cfg)
	if err != nil {
		return family.Kernel{}, err
	}
	cfg = family.KnobsConfig(c)
	g := igemmGeom(p, c)
	if g.Threads > 1024 {
		return family.Kernel{}, fmt.Errorf("igemm: config %s: %d threads per block > 1024", cfg, g.Threads)
	}
	if g.GridZ > 65535 {
		return family.Kernel{}, fmt.Errorf("igemm: config %s: %d stride phases × SplitK %d > 65535 (gridDim.z)", cfg, max(1, g.Phases), g.Split)
	}
	if c.Fold == 1 && (p.Op != problem.OpDgrad || p.Shape.StrideH*p.Shape.StrideW == 1) {
		return family.Kernel{}, fmt.Errorf("igemm: config %s: Fold needs op=dgrad with a stride > 1", cfg)
	}
	if g.Split > 1 && g.RankKTiles < 2 {
		return family.Kernel{}, fmt.Errorf("igemm: config %s: SplitK=%d leaves a block %d of the %d k-tiles (at least 2)", cfg, g.Split, g.RankKTiles, g.KTiles)
	}
	var doc string
	switch p.Precision {
	case problem.FP16:
		doc = "FP16 operands and output, FP32 accumulation"
	case problem.BF16:
		doc = "BF16 operands and output, FP32 accumulation"
	case problem.TF32:
		doc = "FP32 data rounded to TF32 operands, FP32 accumulation and output"
	case problem.TF32x3:
		doc = "3xTF32: FP32 data split into TF32 big and small parts, three products, FP32 accumulation and output"
	}
	name := fmt.Sprintf("convgen_igemm_%s_%s", p.Precision, family.KernelSuffix(cfg))
	grid := [3]int{g.TilesM, g.TilesN, g.GridZ}
	var taps dgradphase.Tables // dgrad's; the template renders them only for a strided axis
	if p.Op == problem.OpDgrad {
		name = fmt.Sprintf("convgen_igemm_dgrad_%s_%s", family.PrecisionTag(p.Precision), family.KernelSuffix(cfg))
		taps = dgradphase.NewTables(p.Shape)
	}
	data := struct {
		family.ShapeData
		igemmGeometry
		igemmKnobs
		dgradphase.Tables
		Name, Config, PrecisionDoc, FilterLayout string
		Dgrad                                    bool
	}{family.NewShapeData(p), g, c, taps, name, cfg.String(), doc, p.Layout.FilterLayout(), p.Op == problem.OpDgrad}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, fmt.Errorf("igemm: config %s: %w", cfg, err)
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src,
		Launch: family.Launch{Grid: grid, Block: [3]int{g.Threads, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}

// SupportsEpilogue implements family.EpilogueSupport: the template applies
// every chain at its forward store (family.Epilogue); a dgrad problem with
// a chain is refused by Serves (problem.ErrEpilogueOp).
func (Family) SupportsEpilogue(epilogue.Chain) error { return nil }

// SupportsOutPrecision implements family.OutPrecisionSupport: the forward
// epilogue stores every output type (family.Output), two channels at a
// time in NHWC when K is even, as it stores the input's; dgrad stores dX
// in the input's type only.
func (Family) SupportsOutPrecision(p problem.Problem) error {
	if p.Op != problem.OpFprop {
		return fmt.Errorf("igemm stores op=%s's output in the input's type only", p.Op)
	}
	return nil
}
