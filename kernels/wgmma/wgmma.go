// Package wgmma is the Hopper wgmma implicit-GEMM (TF32, 3xTF32, FP16 and
// BF16) kernel family: its knobs, search space, static rules and template
// (wgmma.cu.tmpl), rendered through package kernels/family.
package wgmma

import (
	"embed"
	"fmt"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/hopper"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed wgmma.cu.tmpl
var templateFS embed.FS

// Family is the Hopper implicit-GEMM family (wgmma.cu.tmpl):
// wgmma.mma_async m64nNk8 with TF32 operands and FP32 accumulators, in one
// pass (tf32) or three products (3xtf32: operands split into TF32 high parts
// and residuals, kept side by side in shared memory, so that A_hi*B_hi and
// A_hi*B_lo are one wgmma of N = 2*TileK, then A_lo*B_hi, each product in
// its own accumulators, summed in the epilogue), both operands read from
// shared memory through matrix descriptors. It also serves fp16 and bf16:
// 2-byte tensors in memory, widened to FP32 in shared memory, where every
// FP16 and BF16 value is exactly a TF32 value (so the products are exact and
// accumulated in FP32, as on FP16 tensor cores). The input patch is the A
// operand as it is staged, which needs stride_w = 4 (16-byte pixel rows) and
// dilation_w = 1. It compiles for sm_90a only: the tuner offers it on sm_90
// devices with NVRTC 12 or newer (Limits.SM90a).
//
// Knobs:
//   - TileP, TileQ: output rows and columns per warpgroup tile (multiples
//     of 8: one m64 sub-tile is 8 x 8 pixels);
//   - TileK: output channels per block, the wgmma's N;
//   - Warpgroups: computing warpgroups per block, sharing the filter slice;
//   - TilesPerWarpgroup: tiles each warpgroup walks (8, 16, or as many as
//     make one block per SM);
//   - Producer: 0, each warpgroup stages its own patches; 1, one more
//     warpgroup stages them for all (warp specialisation); 2, two more
//     share the staging of every tile (with VecStage = 1);
//   - Overlap (with a producer): 1, two accumulator sets per thread, a
//     tile's outputs stored while the next tile's wgmmas run;
//   - PredicatedStores: 1, the epilogue's stores are predicated instead of
//     branched around (always so with Overlap);
//   - RoundInput: 1, the input patch is rounded to TF32 in shared memory;
//     0, the tensor cores truncate it (one pass over the patch less); always
//     0 for fp16/bf16 (nothing to round);
//   - VecStage (with a producer): 1, the producer stages the patch
//     through registers with aligned vector loads of whole image rows,
//     converting (fp16/bf16, which need it), rounding or splitting each
//     element on the way and de-interleaving NHWC; 0, with cp.async;
//   - RegisterA (with producers, without Overlap; absent means 0): 1, the
//     patch is staged once, unrounded, and each computing thread loads its
//     A fragments from it into registers, splits them into TF32 high parts
//     and residuals (3xtf32) or rounds them (tf32, RoundInput) there and
//     issues the wgmmas with A from registers, AGroup k steps per commit
//     group (three groups in registers: one in flight, one ready, one
//     loading). The reduction then runs over the C*R*S taps packed (S not
//     padded to a multiple of 4): 46 k steps instead of 50 on the
//     flagship; and with cp.async staging (VecStage = 0) of NCHW images
//     whose width is a multiple of 4 the producer copies the patch 16
//     bytes at a time from aligned image columns (QuadStage). For 3xtf32
//     also half the producers' shared stores and no rounding pass; more
//     registers per computing thread. The search offers it for 3xtf32
//     only: for tf32 it measured slower than the tensor cores
//     reading A from shared memory (0.29-0.34 ms against 0.287 in NCHW,
//     0.248 against 0.218 in NHWC, on an H200), but Render accepts it;
//     A computing warpgroup hands a buffer back to the producers through
//     an mbarrier (each thread's mbarrier.arrive releases its own ld.shared
//     loads; the producers' mbarrier.try_wait.parity acquires them), 8
//     bytes of shared memory a buffer, rather than the named barrier of the
//     descriptor path (issue 22, docs/reliability.md);
//   - Stages: with Producer = 0, input-patch buffers per warpgroup (2: the
//     next tile's patch is prefetched while this one is computed); with
//     producers, the buffers of the shared ring (a multiple of Warpgroups,
//     so that a buffer always serves the same warpgroup).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "wgmma" }

// Template implements family.Family.
func (Family) Template() string { return "wgmma.cu.tmpl" }

// Serves implements family.Family.
func (Family) Serves(p problem.Problem) error {
	if err := family.Forward("wgmma", p); err != nil {
		return err
	}
	s := p.Shape
	if err := family.OneGroup("wgmma", s); err != nil {
		return err
	}
	if err := family.Index32("wgmma", s); err != nil {
		return err
	}
	switch {
	case p.Precision != problem.TF32 && p.Precision != problem.TF32x3 && !family.HalfIO(p):
		return fmt.Errorf("wgmma serves tf32, 3xtf32, fp16 and bf16, not %s", p.Precision)
	case s.StrideW != 4 || s.DilationW != 1:
		return fmt.Errorf("wgmma needs stride_w 4 and dilation_w 1 (16-byte pixel rows), not %d and %d", s.StrideW, s.DilationW)
	case s.K%8 != 0:
		return fmt.Errorf("wgmma needs K divisible by 8, not %d", s.K)
	}
	return nil
}

// wgmmaKnobs are a wgmma configuration's knobs (see Family). RegisterA and
// AGroup are absent from the IDs of configurations without RegisterA.
type wgmmaKnobs struct {
	hopper.Tile
	Warpgroups, TilesPerWarpgroup, Stages                     int
	Producer, RoundInput, Overlap, PredicatedStores, VecStage int
	RegisterA                                                 int `knob:",optional"`
	AGroup                                                    int `knob:",optional"`
}

// wgmmaSpace is the values the search space takes.
var wgmmaSpace = struct{ TileP, TileQ, TileK, Warpgroups, TilesPerWarpgroup, Stages []int }{
	TileP: []int{8, 16}, TileQ: []int{8, 16}, TileK: []int{48, 96, 128},
	Warpgroups: []int{1, 2, 3, 4}, TilesPerWarpgroup: []int{8, 16}, Stages: []int{1, 2},
}

type wgmmaGeometry struct {
	ThreadsPerBlock, S4, TapBlocks, KSteps, TilesP, TilesQ int
	PatchRows, PatchCols, PatchPitch, PairStage            int
	// QuadStage (RegisterA with cp.async, NCHW, W a multiple of 4): the
	// patch is copied 16 bytes at a time from aligned image columns, its
	// first column ColShift floats into each row.
	QuadStage, ColShift                  int
	GridTiles, SharedBytes, Accumulators int
	// FragmentRegs is what RegisterA holds besides the accumulators: two
	// groups of AGroup A fragments ready for the tensor cores (8 registers
	// a k step split for 3xtf32, 4 for tf32) and one loaded, not split yet
	// (4).
	FragmentRegs int
	// Chunk is the elements per load of VecStage: the most that keep 4 to
	// 16 bytes per load and divide an image row; 0 when none does.
	// RowChunks is the loads per staged row (one thread each).
	Chunk, RowChunks int
}

// vecChunk returns the elements per load of register staging for p: the
// largest load of 16, 8 or 4 bytes whose element count divides an image
// row (one channel's in NCHW), so that aligned loads never straddle a row
// end; 0 if there is none.
func vecChunk(p problem.Problem) int {
	eb, row := p.Precision.ElementBytes(), vecRow(p)
	for bytes := 16; bytes >= 4; bytes /= 2 {
		if n := bytes / eb; row%n == 0 {
			return n
		}
	}
	return 0
}

func wgmmaGeom(p problem.Problem, c wgmmaKnobs) wgmmaGeometry {
	s := p.Shape
	var g wgmmaGeometry
	g.ThreadsPerBlock = 128 * (c.Warpgroups + c.Producer)
	g.S4 = family.RoundUp(s.S, 4)
	g.TapBlocks = s.C * s.R * g.S4 / 4
	if c.RegisterA == 1 {
		g.TapBlocks = family.CeilDiv(s.C*s.R*s.S, 4) // packed taps
	}
	g.KSteps = family.CeilDiv(g.TapBlocks, 2)
	g.TilesP, g.TilesQ = family.CeilDiv(s.P(), c.TileP), family.CeilDiv(s.Q(), c.TileQ)
	g.PatchRows = (c.TileP-1)*s.StrideH + (s.R-1)*s.DilationH + 1
	g.PatchCols = (c.TileQ-1)*s.StrideW + g.S4
	g.PatchPitch = family.RoundUp(g.PatchCols, 4)
	if p.Layout == problem.NCHW && s.PadW%2 == 0 && s.W%2 == 0 {
		// Tiles start on even image columns (TileQ*4 is even) and image
		// borders fall between pairs: stage 8 bytes at a time.
		g.PairStage = 1
	}
	if c.RegisterA == 1 && c.VecStage == 0 && p.Layout == problem.NCHW && s.W%4 == 0 {
		// Tiles start on image columns of -PadW modulo 4 (stride_w is 4).
		g.PairStage, g.QuadStage, g.ColShift = 0, 1, (4-s.PadW%4)%4
		g.PatchPitch = family.RoundUp(g.PatchCols+g.ColShift, 4)
	}
	g.GridTiles = family.CeilDiv(s.N*g.TilesP*g.TilesQ, c.Warpgroups*c.TilesPerWarpgroup)
	g.Chunk = vecChunk(p)
	if g.Chunk > 0 {
		g.RowChunks = family.CeilDiv(g.PatchCols*vecRow(p)/s.W, g.Chunk) + 1 // a patch row's elements, aligned start
	}
	g.Accumulators = c.TileP / 8 * c.TileQ / 8 * c.TileK / 2 * (1 + c.Overlap)
	copies, patchCopies := 1, 1 // high parts only, or also residuals (3xtf32)
	if p.Precision == problem.TF32x3 {
		copies, patchCopies = 2, 2
		g.Accumulators *= 3 // A_hi*B_hi, A_hi*B_lo and A_lo*B_hi apart
		if c.RegisterA == 1 {
			g.FragmentRegs = 20 * c.AGroup
			patchCopies = 1 // staged once, unsplit
		}
	} else if c.RegisterA == 1 {
		g.FragmentRegs = 12 * c.AGroup
	}
	filter := c.TileK * g.KSteps * 8
	buffers := c.Warpgroups * c.Stages
	if c.Producer >= 1 {
		buffers = c.Stages
	}
	g.SharedBytes = 4 * (copies*filter + patchCopies*buffers*s.C*g.PatchRows*g.PatchPitch)
	if c.RegisterA == 1 {
		g.SharedBytes += 8 * buffers // each buffer's "empty" mbarrier (see the template)
	}
	return g
}

// Space implements family.Family. Without Limits.SM90a every configuration is
// listed as rejected.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	var out []family.Candidate
	for _, tp := range wgmmaSpace.TileP {
		for _, tq := range wgmmaSpace.TileQ {
			for _, tk := range family.ChannelTiles(p.Shape.K, wgmmaSpace.TileK, 8) {
				for _, wg := range wgmmaSpace.Warpgroups {
					for _, tpw := range hopper.TilesPerWarpgroup(p, lim, wgmmaSpace.TilesPerWarpgroup, tp, tq, tk, wg) {
						for _, pr := range []int{0, 1, 2} {
							stages := wgmmaSpace.Stages
							if pr > 0 {
								stages = []int{wg, 2 * wg}
							}
							vecStages, overlaps := []int{0}, []int{0}
							switch pr {
							case 1:
								vecStages, overlaps = []int{0, 1}, []int{0, 1}
							case 2: // two producers stage through registers only
								vecStages, overlaps = []int{1}, []int{0, 1}
							}
							for _, st := range stages {
								for _, vs := range vecStages {
									for _, ri := range wgmmaRounding(p, vs) {
										for _, ov := range overlaps {
											for ps := ov; ps <= 1; ps++ { // Overlap needs predicated stores
												for _, ag := range wgmmaAGroups(p, pr, ov) {
													k := wgmmaKnobs{Tile: hopper.Tile{TileP: tp, TileQ: tq, TileK: tk}, Warpgroups: wg,
														TilesPerWarpgroup: tpw, Stages: st, Producer: pr, RoundInput: ri,
														Overlap: ov, PredicatedStores: ps, VecStage: vs}
													if ag > 0 {
														k.RegisterA, k.AGroup = 1, ag
													}
													out = append(out, family.NewCandidate(f.Name(), k, f.reject(p, k, lim)))
												}
											}
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

// wgmmaAGroups lists the A-fragment groups worth trying, 0 standing for
// the patch as the A operand in shared memory: RegisterA (with AGroup 1
// to 3; more do not fit beside 3xtf32's sums) for 3xtf32 with producers
// and without Overlap (measured slower for tf32, and slower without a
// producer: docs/performance.md).
func wgmmaAGroups(p problem.Problem, producer, overlap int) []int {
	if p.Precision != problem.TF32x3 || producer == 0 || overlap != 0 {
		return []int{0}
	}
	return []int{0, 1, 2, 3}
}

// wgmmaRounding lists the RoundInput values worth trying: none for 2-byte
// input (exact in TF32), only rounding for 3xtf32 (the split needs it) and
// for register staging (it rounds at no extra pass), both otherwise.
func wgmmaRounding(p problem.Problem, vecStage int) []int {
	switch {
	case family.HalfIO(p):
		return []int{0}
	case p.Precision == problem.TF32x3 || vecStage == 1:
		return []int{1}
	}
	return []int{1, 0}
}

func (Family) reject(p problem.Problem, c wgmmaKnobs, lim family.Limits) family.Rejection {
	s := p.Shape
	g := wgmmaGeom(p, c)
	res := hopper.ResourceReject(c.TileK, g.ThreadsPerBlock, g.Accumulators, lim)
	switch {
	case !lim.SM90a:
		return family.Hard("arch", "wgmma needs an sm_90 device and NVRTC 12 or newer (sm_90a)")
	case family.HalfIO(p) && c.VecStage == 0:
		return family.Hard("staging", "%s input is widened to FP32 while staged, which needs the producer's register staging (VecStage=1)", p.Precision)
	case c.VecStage == 1 && g.Chunk == 0:
		return family.Hard("align", "an image row of %d elements allows no aligned 4-, 8- or 16-byte loads (VecStage=1)", vecRow(p))
	case c.VecStage == 1 && g.RowChunks > 128*c.Producer:
		return family.Hard("staging", "a patch row needs %d loads, more than the producers' %d threads (VecStage=1)", g.RowChunks, 128*c.Producer)
	case res.Rule != "":
		return res
	case g.FragmentRegs > 0 && g.Accumulators+g.FragmentRegs+hopper.SpareRegs > lim.RegistersPerSM/g.ThreadsPerBlock/8*8:
		return family.Hard("registers", "%d accumulators + %d for A fragments (AGroup=%d) + %d per thread exceed the %d that %d threads leave each",
			g.Accumulators, g.FragmentRegs, c.AGroup, hopper.SpareRegs, lim.RegistersPerSM/g.ThreadsPerBlock/8*8, g.ThreadsPerBlock)
	case g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
	case c.Producer >= 1 && c.Stages > 7:
		return family.Hard("barriers", "%d buffers need %d named barriers > 15", c.Stages, 2*c.Stages)
	case c.Producer == 0 && c.Stages == 2 && c.TilesPerWarpgroup == 1:
		return family.Hard("stages", "nothing to prefetch with one tile per warpgroup")
	}
	// Soft rules last: family.AdmitSoft may lift them, so a hard reason must win.
	return hopper.SoftReject(s, c.Tile, g.TilesP, g.TilesQ, g.GridTiles, lim)
}

// vecRow is the elements of one image row as VecStage loads it.
func vecRow(p problem.Problem) int {
	if p.Layout == problem.NHWC {
		return p.Shape.W * p.Shape.C
	}
	return p.Shape.W
}

// wgmmaData is the wgmma template's data: the shape, the geometry, the
// knobs, and the inline-PTX operand numbers of the wgmma instructions (the
// accumulators come first, then the descriptors and the scale operands).
type wgmmaData struct {
	family.ShapeData
	wgmmaGeometry
	Name, Config, FilterLayout string
	PrecisionDoc               string // the precision paragraph of the header comment
	Split3                     bool   // 3xtf32
	wgmmaKnobs
	// AGroup is the knob, at least 1 (the template's A_GROUP is defined
	// without RegisterA too).
	AGroup int
	IOHalf int // tensors in memory: 0 FP32, 1 FP16, 2 BF16
	// Operands of the TileK-wide wgmma (N = TileK, TileK/2 accumulators).
	AccOperands, AccConstraints              string
	DescAOperand, DescBOperand, ScaleOperand int
	// Operands of the double-width wgmma (N = WideN = 2*TileK).
	WideN                                                int
	WideAccOperands, WideAccConstraints                  string
	WideDescAOperand, WideDescBOperand, WideScaleOperand int
	// Operands of the register-A wgmmas: the four A registers, then the
	// B descriptor and the scale.
	RegAOperands                               string
	RegADescBOperand, RegAScaleOperand         int
	WideRegAOperands                           string
	WideRegADescBOperand, WideRegAScaleOperand int
}

// regOperands names the four inline-PTX operands from first on, "{%first,
// ...}": the A fragment registers of a register-A wgmma.
func regOperands(first int) string {
	return fmt.Sprintf("{%%%d, %%%d, %%%d, %%%d}", first, first+1, first+2, first+3)
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	if err := f.Serves(p); err != nil {
		return family.Kernel{}, err
	}
	k, err := family.ParseKnobs[wgmmaKnobs](f.Name(), cfg)
	if err != nil {
		return family.Kernel{}, err
	}
	if vs := k.VecStage; vs < 0 || vs > 1 || (vs == 1 && k.Producer == 0) || (vs == 0 && k.Producer == 2) || (vs == 1 && vecChunk(p) == 0) || (family.HalfIO(p) && (vs != 1 || k.RoundInput != 0)) {
		return family.Kernel{}, fmt.Errorf("wgmma: config %s: VecStage is 0 or 1; 1 needs a producer, 2 producers need 1, and 1 needs image rows of a multiple of 4 bytes per load; fp16 and bf16 need VecStage=1 and RoundInput=0", cfg)
	}
	if ov, ps := k.Overlap, k.PredicatedStores; ov < 0 || ov > 1 || ps < 0 || ps > 1 || (ov == 1 && (k.Producer == 0 || ps != 1)) {
		return family.Kernel{}, fmt.Errorf("wgmma: config %s: Overlap and PredicatedStores are 0 or 1, and Overlap=1 needs a producer and PredicatedStores=1", cfg)
	}
	if p.Precision == problem.TF32x3 && k.RoundInput != 1 {
		return family.Kernel{}, fmt.Errorf("wgmma: config %s: 3xtf32 needs RoundInput=1 (the residuals are written by the rounding pass)", cfg)
	}
	if ra, ag := k.RegisterA, k.AGroup; ra < 0 || ra > 1 || (ra == 1 && ((p.Precision != problem.TF32x3 && p.Precision != problem.TF32) || k.Producer == 0 || k.Overlap != 0 || ag < 1 || ag > 8)) || (ra == 0 && ag != 0) {
		return family.Kernel{}, fmt.Errorf("wgmma: config %s: RegisterA is 0 or 1; 1 is for tf32 and 3xtf32 with a producer and without Overlap, with AGroup from 1 to 8 (else AGroup is 0 or absent)", cfg)
	}
	if pr, st, wg := k.Producer, k.Stages, k.Warpgroups; pr < 0 || pr > 2 || st < 1 || wg < 1 || (pr > 0 && (st%wg != 0 || st > 7)) {
		return family.Kernel{}, fmt.Errorf("wgmma: config %s: Producer is 0, 1 or 2, and with producers Stages is a multiple of Warpgroups up to 7", cfg)
	}
	if err := hopper.TileCheck(f.Name(), cfg, k.Tile, p.Shape.K); err != nil {
		return family.Kernel{}, err
	}
	cfg = family.KnobsConfig(k)
	g := wgmmaGeom(p, k)
	if k.VecStage == 1 && g.RowChunks > 128*k.Producer {
		return family.Kernel{}, fmt.Errorf("wgmma: config %s: a patch row needs %d register-staging loads, more than the producers' %d threads", cfg, g.RowChunks, 128*k.Producer)
	}
	acc := k.TileK / 2
	accOps, accCons := hopper.AccOperands(acc)
	wideOps, wideCons := hopper.AccOperands(2 * acc)
	name := fmt.Sprintf("convgen_wgmma_%s_%s", family.PrecisionTag(p.Precision), family.KernelSuffix(cfg))
	split3 := p.Precision == problem.TF32x3
	doc := "TF32 operands, FP32 accumulation; the filter is rounded to TF32 (nearest), the input too with\n// RoundInput = 1, else the tensor cores truncate it (the error bound holds either way)"
	ioHalf := 0
	switch p.Precision {
	case problem.TF32x3:
		doc = "3xTF32: operands split into TF32 high parts and residuals,\n// three products (A_lo*B_hi, A_hi*B_lo, A_hi*B_hi) accumulated in FP32"
	case problem.FP16:
		ioHalf = 1
		doc = "FP16 input, filter, bias and output; exact TF32 products, FP32 accumulation,\n// the output rounded to FP16 once"
	case problem.BF16:
		ioHalf = 2
		doc = "BF16 input, filter, bias and output; exact TF32 products, FP32 accumulation,\n// the output rounded to BF16 once"
	}
	data := wgmmaData{
		ShapeData: family.NewShapeData(p), wgmmaGeometry: g,
		wgmmaKnobs: k,
		Name:       name, Config: cfg.String(), FilterLayout: p.Layout.FilterLayout(), PrecisionDoc: doc, Split3: split3,
		IOHalf:      ioHalf,
		AccOperands: accOps, AccConstraints: accCons,
		DescAOperand: acc, DescBOperand: acc + 1, ScaleOperand: acc + 2,
		WideN:           2 * k.TileK,
		WideAccOperands: wideOps, WideAccConstraints: wideCons,
		WideDescAOperand: 2 * acc, WideDescBOperand: 2*acc + 1, WideScaleOperand: 2*acc + 2,
		AGroup:           max(k.AGroup, 1),
		RegAOperands:     regOperands(acc),
		RegADescBOperand: acc + 4, RegAScaleOperand: acc + 5,
		WideRegAOperands:     regOperands(2 * acc),
		WideRegADescBOperand: 2*acc + 4, WideRegAScaleOperand: 2*acc + 5,
	}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src, ArchSuffix: "a",
		Launch: family.Launch{Grid: [3]int{g.GridTiles, p.Shape.K / k.TileK, 1}, Block: [3]int{g.ThreadsPerBlock, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}

// SupportsEpilogue implements family.EpilogueSupport: the template applies
// every chain at its store (family.Epilogue).
func (Family) SupportsEpilogue(epilogue.Chain) error { return nil }
