// Package wgmmahalf is the Hopper wgmma FP16 and BF16 implicit-GEMM kernel
// family: its knobs, search space, static rules and template
// (wgmmahalf.cu.tmpl), rendered through package kernels/family.
package wgmmahalf

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
//go:embed wgmmahalf.cu.tmpl
var templateFS embed.FS

// Family is the Hopper FP16/BF16 implicit-GEMM family
// (wgmmahalf.cu.tmpl): wgmma.mma_async m64nNk16 with FP16 or BF16
// operands and FP32 accumulators, both operands read from shared memory
// through matrix descriptors. The A operand is staged as "windows": for
// every (channel, patch row), window e holds the 8 patch columns
// stride_w*e .. +7, so that 8 neighbouring output pixels' 8 taps are 8
// consecutive 16-byte windows (a core matrix), which the plain patch of
// 2-byte pixels is not. Producer warpgroups build the windows from aligned
// 16-byte loads of the image rows (NHWC de-interleaved in registers) while
// the computing warpgroups run the wgmmas. It compiles for sm_90a only:
// offered on sm_90 devices with NVRTC 12 or newer (Limits.SM90a).
//
// Knobs:
//   - TileP, TileQ: output rows and columns per warpgroup tile (multiples
//     of 8: one m64 sub-tile is 8 x 8 pixels);
//   - TileK: output channels per block, the wgmma's N;
//   - Warpgroups: computing warpgroups per block, sharing the filter slice;
//   - TilesPerWarpgroup: tiles each warpgroup walks (8, 16, or as many as
//     make one block per SM);
//   - Producer: 1 or 2 producer warpgroups building the windows;
//   - Stages: window buffers in the ring (Warpgroups or twice that);
//   - Overlap: 1, two accumulator sets per thread, a tile's outputs stored
//     while the next tile's wgmmas run;
//   - PredicatedStores: 1, the epilogue's stores are predicated instead of
//     branched around (always so with Overlap);
//   - ResidualPrefetch (only with a residual in the epilogue chain): when a
//     tile's residual is read. 0: in the epilogue, each element right
//     before its store; 1: into registers (ResidualWords more per thread)
//     with streaming loads, all issued before the tile's stores: with
//     Overlap=0 right after its wgmmas, landing while they run, with
//     Overlap=1 (where the stores already run beside the next tile's
//     wgmmas) right before the stores; 2: prefetched into L2 a tile ahead
//     (prefetch.L2 per 128-byte line, spread over the warpgroup), read in
//     the epilogue as with 0. The search prunes 2 (a soft rule a pin
//     lifts: slower on an H100, see residualPrefetches).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "wgmmahalf" }

// Template implements family.Family.
func (Family) Template() string { return "wgmmahalf.cu.tmpl" }

// Serves implements family.Family.
func (Family) Serves(p problem.Problem) error {
	if err := family.Forward("wgmmahalf", p); err != nil {
		return err
	}
	s := p.Shape
	if err := family.OneGroup("wgmmahalf", s); err != nil {
		return err
	}
	if err := family.Index32("wgmmahalf", s); err != nil {
		return err
	}
	pix := pixElems(p)
	switch {
	case !family.HalfIO(p):
		return fmt.Errorf("wgmmahalf serves fp16 and bf16, not %s", p.Precision)
	case (s.StrideW != 2 && s.StrideW != 4 && s.StrideW != 8) || s.DilationW != 1:
		return fmt.Errorf("wgmmahalf needs stride_w 2, 4 or 8 and dilation_w 1 (windows of 8 taps), not %d and %d", s.StrideW, s.DilationW)
	case s.PadW%2 != 0:
		return fmt.Errorf("wgmmahalf needs an even pad_w (windows of whole 4-byte words), not %d", s.PadW)
	case s.StrideW*pix%4 != 0:
		return fmt.Errorf("wgmmahalf needs stride_w × elements per pixel divisible by 4 (every window pair at the same offset within 16 bytes), not %d × %d", s.StrideW, pix)
	case s.W*pix%8 != 0:
		return fmt.Errorf("wgmmahalf needs image rows of a multiple of 16 bytes, not %d elements", s.W*pix)
	case p.Layout == problem.NHWC && s.C > 4:
		return fmt.Errorf("wgmmahalf serves NHWC with at most 4 channels (a producer thread holds every channel of its pixels), not %d", s.C)
	case s.K%8 != 0:
		return fmt.Errorf("wgmmahalf needs K divisible by 8, not %d", s.K)
	}
	return nil
}

// pixElems is the elements of one pixel in an image row: C in NHWC, 1 in NCHW.
func pixElems(p problem.Problem) int {
	if p.Layout == problem.NHWC {
		return p.Shape.C
	}
	return 1
}

// wgmmaHalfKnobs are a wgmmahalf configuration's knobs (see Family).
// ResidualPrefetch is optional: 0, the only value without a residual, is
// left out of configurations (and of the records that predate it).
type wgmmaHalfKnobs struct {
	hopper.Tile
	Warpgroups, TilesPerWarpgroup, Stages, Producer, Overlap, PredicatedStores int
	ResidualPrefetch                                                           int `knob:",optional"`
}

// residualPrefetches is the ResidualPrefetch values the space lists for p:
// 0 to 2 when p's chain reads a residual, else only 0. reject prunes 2 (a
// soft rule, which a pin lifts): on the flagship with residual,relu (H100,
// fp16 NHWC) it took 0.262 ms against 0's 0.224 and 1's 0.204
// (docs/performance.md).
func residualPrefetches(p problem.Problem) []int {
	if p.Epilogue.NeedsResidual() {
		return []int{0, 1, 2}
	}
	return []int{0}
}

// wgmmaHalfSpace is the values the search space takes.
var wgmmaHalfSpace = struct{ TileP, TileQ, TileK, Warpgroups, TilesPerWarpgroup, Producer []int }{
	TileP: []int{8, 16}, TileQ: []int{8, 16}, TileK: []int{48, 96, 128},
	Warpgroups: []int{1, 2, 3, 4}, TilesPerWarpgroup: []int{8, 16}, Producer: []int{1, 2},
}

type wgmmaHalfGeometry struct {
	ThreadsPerBlock, S8, TapBlocks, KSteps, TilesP, TilesQ int
	PatchRows, Windows, Head                               int
	GridTiles, SharedBytes, Accumulators                   int
	// ResidualWords is the registers a computing thread holds the
	// residual of a tile in with ResidualPrefetch=1: a 4-byte word per
	// channel pair and pixel in NHWC, one per element in NCHW.
	ResidualWords int
	// StagedWords is the 4-byte registers a producer thread holds for the
	// tiles it has loading (its jobs' image segments).
	StagedWords int
}

func wgmmaHalfGeom(p problem.Problem, c wgmmaHalfKnobs) wgmmaHalfGeometry {
	s := p.Shape
	var g wgmmaHalfGeometry
	pix := pixElems(p)
	g.ThreadsPerBlock = 128 * (c.Warpgroups + c.Producer)
	g.S8 = family.RoundUp(s.S, 8)
	g.TapBlocks = s.C * s.R * g.S8 / 8
	g.KSteps = family.CeilDiv(g.TapBlocks, 2)
	g.TilesP, g.TilesQ = family.CeilDiv(s.P(), c.TileP), family.CeilDiv(s.Q(), c.TileQ)
	g.PatchRows = (c.TileP-1)*s.StrideH + (s.R-1)*s.DilationH + 1
	g.Windows = family.RoundUp(c.TileQ+(g.S8/8-1)*8/max(s.StrideW, 1), 2)
	g.Head = ((-s.PadW*pix/2)%4 + 4) % 4
	g.GridTiles = family.CeilDiv(s.N*g.TilesP*g.TilesQ, c.Warpgroups*c.TilesPerWarpgroup)
	g.Accumulators = c.TileP / 8 * c.TileQ / 8 * c.TileK / 2 * (1 + c.Overlap)
	if c.ResidualPrefetch == 1 {
		g.ResidualWords = c.TileP / 8 * c.TileQ / 8 * c.TileK / 2 // per sub-tile: 2 rows x TileK/8 groups x 2 elements
		if p.Layout == problem.NHWC {
			g.ResidualWords /= 2
		}
	}
	rows := g.PatchRows
	if p.Layout == problem.NCHW {
		rows *= s.C
	}
	producers := 128 * max(c.Producer, 1)
	passes := family.CeilDiv(rows*g.Windows/2, producers)
	prefetch := 1 + c.Producer
	if passes > 1 {
		prefetch = 2
	}
	g.StagedWords = passes * prefetch * (s.StrideW + 8) * pix / 2
	g.SharedBytes = 2*c.TileK*g.KSteps*16 + c.Stages*16*s.C*g.PatchRows*g.Windows
	return g
}

// Space implements family.Family. Without Limits.SM90a every configuration is
// listed as rejected.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	var out []family.Candidate
	k := wgmmaHalfSpace
	for _, tp := range k.TileP {
		for _, tq := range k.TileQ {
			for _, tk := range family.ChannelTiles(p.Shape.K, k.TileK, 8) {
				for _, wg := range k.Warpgroups {
					for _, tpw := range hopper.TilesPerWarpgroup(p, lim, k.TilesPerWarpgroup, tp, tq, tk, wg) {
						for _, pr := range k.Producer {
							for _, st := range []int{wg, 2 * wg} {
								for ov := 0; ov <= 1; ov++ {
									for ps := ov; ps <= 1; ps++ { // Overlap needs predicated stores
										for _, rp := range residualPrefetches(p) {
											kn := wgmmaHalfKnobs{Tile: hopper.Tile{TileP: tp, TileQ: tq, TileK: tk}, Warpgroups: wg,
												TilesPerWarpgroup: tpw, Stages: st, Producer: pr,
												Overlap: ov, PredicatedStores: ps, ResidualPrefetch: rp}
											out = append(out, family.NewCandidate(f.Name(), kn, f.reject(p, kn, lim)))
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

func (Family) reject(p problem.Problem, c wgmmaHalfKnobs, lim family.Limits) family.Rejection {
	g := wgmmaHalfGeom(p, c)
	share := lim.RegistersPerSM / g.ThreadsPerBlock / 8 * 8
	if !lim.SM90a {
		return family.Hard("arch", "wgmmahalf needs an sm_90 device and NVRTC 12 or newer (sm_90a)")
	}
	if res := hopper.ResourceReject(c.TileK, g.ThreadsPerBlock, g.Accumulators, lim); res.Rule != "" {
		return res
	}
	switch {
	case g.ResidualWords > 0 && g.Accumulators+g.ResidualWords+hopper.SpareRegs > share:
		return family.Hard("registers", "%d accumulators + %d residual words + %d per thread exceed the %d that %d threads leave each",
			g.Accumulators, g.ResidualWords, hopper.SpareRegs, share, g.ThreadsPerBlock)
	case g.StagedWords+16 > share:
		return family.Hard("registers", "a producer thread holds %d words of loading tiles, + 16 more than the %d that %d threads leave each",
			g.StagedWords, share, g.ThreadsPerBlock)
	case g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
	case c.Stages > 7:
		return family.Hard("barriers", "%d buffers need %d named barriers > 15", c.Stages, 2*c.Stages)
	}
	// Soft rules last: family.AdmitSoft may lift them, so a hard reason must win.
	if c.ResidualPrefetch == 2 {
		return family.Soft("prefetch", "ResidualPrefetch=2 was slower than 0 and 1 on an H100 (see residualPrefetches)")
	}
	return hopper.SoftReject(p.Shape, c.Tile, g.TilesP, g.TilesQ, g.GridTiles, lim)
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	if err := f.Serves(p); err != nil {
		return family.Kernel{}, err
	}
	k, err := family.ParseKnobs[wgmmaHalfKnobs](f.Name(), cfg)
	if err != nil {
		return family.Kernel{}, err
	}
	if ov, ps := k.Overlap, k.PredicatedStores; ov < 0 || ov > 1 || ps < 0 || ps > 1 || (ov == 1 && ps != 1) {
		return family.Kernel{}, fmt.Errorf("wgmmahalf: config %s: Overlap and PredicatedStores are 0 or 1, and Overlap=1 needs PredicatedStores=1", cfg)
	}
	if pr, st, wg := k.Producer, k.Stages, k.Warpgroups; pr < 1 || pr > 2 || wg < 1 || st < wg || st%wg != 0 || st > 7 {
		return family.Kernel{}, fmt.Errorf("wgmmahalf: config %s: Producer is 1 or 2, and Stages a multiple of Warpgroups up to 7", cfg)
	}
	if rp := k.ResidualPrefetch; rp < 0 || rp > 2 || (rp != 0 && !p.Epilogue.NeedsResidual()) {
		return family.Kernel{}, fmt.Errorf("wgmmahalf: config %s: ResidualPrefetch is 0, 1 or 2, and 0 without a residual in the epilogue chain", cfg)
	}
	if err := hopper.TileCheck(f.Name(), cfg, k.Tile, p.Shape.K); err != nil {
		return family.Kernel{}, err
	}
	cfg = family.KnobsConfig(k)
	g := wgmmaHalfGeom(p, k)
	acc := k.TileK / 2
	accOps, accCons := hopper.AccOperands(acc)
	name := fmt.Sprintf("convgen_wgmmahalf_%s_%s", p.Precision, family.KernelSuffix(cfg))
	typeName, doc := "f16", "FP16 operands and output, FP32 accumulation"
	if p.Precision == problem.BF16 {
		typeName, doc = "bf16", "BF16 operands and output, FP32 accumulation"
	}
	data := struct {
		family.ShapeData
		wgmmaHalfGeometry
		wgmmaHalfKnobs
		Name, Config, FilterLayout, PrecisionDoc, TypeName string
		AccOperands, AccConstraints                        string
		DescAOperand, DescBOperand, ScaleOperand           int
		// ResidualRegs and ResidualL2: ResidualPrefetch 1 and 2.
		ResidualRegs, ResidualL2 bool
	}{family.NewShapeData(p), g, k, name, cfg.String(), p.Layout.FilterLayout(), doc, typeName,
		accOps, accCons, acc, acc + 1, acc + 2, k.ResidualPrefetch == 1, k.ResidualPrefetch == 2}
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
