// Package generic is the generic (every valid problem) kernel family: its
// knobs, search space, static rules and template (generic.cu.tmpl), rendered
// through package kernels/family.
package generic

import (
	"embed"
	"fmt"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed generic.cu.tmpl
var templateFS embed.FS

// Family is the family that serves every valid problem
// (generic.cu.tmpl): an implicit GEMM over FP32 FFMA with every
// edge predicated, for any shape (groups, depthwise, odd channel counts,
// per-axis stride, pad and dilation, with or without bias), every precision
// and both layouts. The GEMM of one channel group g has M = N·P·Q output
// pixels, N = K/G output channels and a reduction over (C/G)·R·S taps.
// FP16 and BF16 data are widened to FP32 and the output rounded once; TF32
// and 3xTF32 problems are computed in strict FP32, more accurate than their
// bound requires.
//
// Knobs:
//   - TileM: output pixels per block tile;
//   - TileN: output channels (of one group) per block tile;
//   - TileR: reduction taps staged in shared memory per step;
//   - ThreadM, ThreadN: the register tile of one thread (pixels × channels).
//
// Problems that need 64-bit offsets (problem.Shape.Needs64BitIndex: a
// tensor of 2^31 elements or more) render the 64-bit path: pixel, tap and
// element offsets in long long, and a grid folded into y where it has more
// than 2^31−1 blocks. Other problems render the 32-bit path, whose source
// is unchanged by the 64-bit one.
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "generic" }

// Template implements family.Family.
func (Family) Template() string { return "generic.cu.tmpl" }

// Serves implements family.Family: every valid problem.
func (Family) Serves(p problem.Problem) error {
	if err := family.Forward("generic", p); err != nil {
		return err
	}
	if err := p.Shape.Validate(); err != nil {
		return err
	}
	if _, err := problem.ParsePrecision(string(p.Precision)); err != nil {
		return err
	}
	if _, err := problem.ParseLayout(string(p.Layout)); err != nil {
		return err
	}
	return nil
}

// The values the knobs take; TileN and TileR are clipped to the problem,
// and the register tile follows from the block's thread count.
var (
	genericTileM   = []int{32, 64, 128, 256}
	genericTileN   = []int{1, 2, 4, 8, 16, 32, 64}
	genericTileR   = []int{8, 16, 32}
	genericThreads = []int{32, 64, 128, 256}
)

// genericKnobs are a generic configuration's knobs (see Family).
type genericKnobs struct {
	TileM, TileN, TileR, ThreadM, ThreadN int
}

// genericGeometry holds a configuration's derived sizes.
type genericGeometry struct {
	CG, KG, KRed                 int // channels and output channels per group, reduction length
	M                            int // output pixels N·P·Q
	TilesM, TilesN, Grid         int
	GridX, GridY                 int // Grid folded into CUDA's limits (foldGrid)
	ThreadsM, ThreadsN, Threads  int // threads along M and N
	APitch, BPitch, SharedBytes  int
	ALoads, BLoads, Registers    int // loads per thread per step, a rough register estimate
	Accumulators, WasteM, WasteN int // register tile size; padded tile rows and columns beyond M and K/G
}

func genericGeom(p problem.Problem, c genericKnobs) genericGeometry {
	s := p.Shape
	var g genericGeometry
	g.CG, g.KG = s.C/s.Groups, s.K/s.Groups
	g.KRed = g.CG * s.R * s.S
	g.M = s.N * s.P() * s.Q()
	tm, tn, tr := c.TileM, c.TileN, c.TileR
	g.TilesM, g.TilesN = family.CeilDiv(g.M, tm), family.CeilDiv(g.KG, tn)
	g.Grid = g.TilesM * g.TilesN * s.Groups
	g.ThreadsM, g.ThreadsN = tm/c.ThreadM, tn/c.ThreadN
	g.Threads = g.ThreadsM * g.ThreadsN
	// Staging writes consecutive taps of one pixel (NHWC) or consecutive
	// pixels of one tap (NCHW) from consecutive threads: pad the rows of the
	// tap-major tiles so that the NHWC writes spread over the banks.
	g.APitch, g.BPitch = tm, tn
	if p.Layout == problem.NHWC {
		g.APitch = tm + max(1, 32/tr)
	}
	if tn > 1 {
		g.BPitch = tn + 1
	}
	g.SharedBytes = 4 * tr * (g.APitch + g.BPitch)
	if g.Threads > 0 {
		g.ALoads = family.CeilDiv(tr*tm, g.Threads)
		g.BLoads = family.CeilDiv(tr*tn, g.Threads)
	}
	g.Accumulators = c.ThreadM * c.ThreadN
	g.Registers = g.Accumulators + c.ThreadM + c.ThreadN + 32
	g.WasteM = g.TilesM*tm - g.M
	g.WasteN = g.TilesN*tn - g.KG
	g.GridX, g.GridY = foldGrid(g.Grid)
	return g
}

// maxGridX and maxGridY are CUDA's limits on a grid's x and y dimensions.
const (
	maxGridX = 1<<31 - 1
	maxGridY = 65535
)

// foldGrid lays out blocks blocks as x × y, y as small as the x limit
// allows: x·y ≥ blocks, the blocks past it return at once (the 64-bit path
// only; the 32-bit path's grids are below 2^31 blocks and have y = 1).
func foldGrid(blocks int) (x, y int) {
	if blocks <= maxGridX {
		return blocks, 1
	}
	y = family.CeilDiv(blocks, maxGridX)
	return family.CeilDiv(blocks, y), y
}

// genericTileNs are the channel tiles offered for kg output channels per
// group: powers of two up to kg rounded up to one, and no smaller than a
// quarter of min(that, 64).
func genericTileNs(kg int) []int {
	top := 1
	for top < kg && top < 64 {
		top *= 2
	}
	var out []int
	for _, t := range genericTileN {
		if t <= top && 4*t >= top {
			out = append(out, t)
		}
	}
	return out
}

// genericTileRs are the reduction steps offered for kred taps and a block
// tile of tile outputs: 8 always, 16 when the reduction fills it, 32 also
// when the tile is large enough to amortise the longer stage.
func genericTileRs(kred, tile int) []int {
	var out []int
	for _, t := range genericTileR {
		if t == genericTileR[0] || (t <= kred && (t < 32 || tile >= 4096)) {
			out = append(out, t)
		}
	}
	return out
}

// genericThreadTile splits a tm × tn block tile over threads threads: a
// register tile of 1 to 64 accumulators, as square as the tile allows
// (ThreadN ≤ ThreadM), at least 16 where the block tile has room. One warp
// only serves tiles too small for two.
func genericThreadTile(tm, tn, threads int) ([2]int, bool) {
	acc := tm * tn / threads
	if acc < 1 || acc > 64 || tm*tn%threads != 0 || (threads == 32 && tm*tn >= 128) || acc < min(16, tm*tn/256) {
		return [2]int{}, false
	}
	xn := 1
	for 2*xn <= tn && 4*xn*xn <= acc {
		xn *= 2
	}
	xm := acc / xn
	if xm > tm {
		return [2]int{}, false
	}
	return [2]int{xm, xn}, true
}

// Space implements family.Family.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	s := p.Shape
	var out []family.Candidate
	for _, tn := range genericTileNs(s.K / s.Groups) {
		for _, tm := range genericTileM {
			if tm == 256 && tn > 2 {
				continue // long pixel tiles only for (nearly) depthwise problems
			}
			for _, threads := range genericThreads {
				th, ok := genericThreadTile(tm, tn, threads)
				if !ok {
					continue
				}
				for _, tr := range genericTileRs(s.C/s.Groups*s.R*s.S, tm*tn) {
					k := genericKnobs{TileM: tm, TileN: tn, TileR: tr, ThreadM: th[0], ThreadN: th[1]}
					out = append(out, family.NewCandidate(f.Name(), k, f.reject(p, k, lim)))
				}
			}
		}
	}
	return out
}

// reject returns why a configuration is not worth compiling, or the zero
// Rejection. Only the device limits reject hard; the rest are soft rules,
// which come back when they would leave the family empty.
func (Family) reject(p problem.Problem, c genericKnobs, lim family.Limits) family.Rejection {
	g := genericGeom(p, c)
	tm, tn := c.TileM, c.TileN
	switch {
	case g.GridY > maxGridY:
		return family.Hard("grid", "%d blocks > %d×%d", g.Grid, maxGridX, maxGridY)
	case g.Threads > lim.MaxThreadsPerBlock:
		return family.Hard("threads", "%d per block > %d", g.Threads, lim.MaxThreadsPerBlock)
	case g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
	case g.Registers > lim.MaxRegsPerThread:
		return family.Hard("registers", "about %d per thread > %d", g.Registers, lim.MaxRegsPerThread)
	case g.Registers*g.Threads > lim.RegistersPerSM:
		return family.Hard("registers", "about %d per block > %d per SM", g.Registers*g.Threads, lim.RegistersPerSM)
	case tm > 32 && 2*g.WasteM >= g.M:
		return family.Soft("waste", "TileM=%d computes %d padded pixels for M=%d", tm, g.WasteM, g.M)
	case tn > 1 && 2*g.WasteN >= g.KG && tn > 8:
		return family.Soft("waste", "TileN=%d computes %d padded channels for K/groups=%d", tn, g.WasteN, g.KG)
	case tm > 32 && g.Grid < lim.SMs && g.M*g.KG*p.Shape.Groups >= 32*lim.SMs*tn:
		return family.Soft("occupancy", "%d blocks leave some of the %d SMs idle; a smaller TileM makes more", g.Grid, lim.SMs)
	}
	return family.Rejection{}
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	if err := f.Serves(p); err != nil {
		return family.Kernel{}, err
	}
	k, err := family.ParseKnobs[genericKnobs](f.Name(), cfg)
	if err != nil {
		return family.Kernel{}, err
	}
	if k.TileM < 1 || k.TileN < 1 || k.TileR < 1 || k.ThreadM < 1 || k.ThreadN < 1 || k.TileM%k.ThreadM != 0 || k.TileN%k.ThreadN != 0 {
		return family.Kernel{}, fmt.Errorf("generic: config %s: ThreadM must divide TileM and ThreadN TileN, all positive", cfg)
	}
	cfg = family.KnobsConfig(k)
	g := genericGeom(p, k)
	if g.Threads%32 != 0 || g.Threads > 1024 {
		return family.Kernel{}, fmt.Errorf("generic: config %s: %d threads per block, want a multiple of 32 up to 1024", cfg, g.Threads)
	}
	name := "convgen_generic_" + family.KernelSuffix(cfg)
	elem, prec := "float", "FP32 data"
	switch p.Precision {
	case problem.FP16:
		elem, prec = "unsigned short", "FP16 data widened to FP32, FP32 accumulation, output rounded to FP16 once"
	case problem.BF16:
		elem, prec = "unsigned short", "BF16 data widened to FP32, FP32 accumulation, output rounded to BF16 once"
	case problem.TF32, problem.TF32x3:
		prec = fmt.Sprintf("FP32 data computed in strict FP32 (FFMA), more accurate than %s needs", p.Precision)
	}
	if g.GridY > maxGridY {
		return family.Kernel{}, fmt.Errorf("generic: config %s: %d blocks exceed CUDA's grid (%d×%d)", cfg, g.Grid, maxGridX, maxGridY)
	}
	data := struct {
		family.ShapeData
		genericGeometry
		genericKnobs
		genericIndex
		Name, Config, Elem, PrecisionDoc string
	}{family.NewShapeData(p), g, k, newGenericIndex(p.Shape.Needs64BitIndex()), name, cfg.String(), elem, prec}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src,
		Launch: family.Launch{Grid: [3]int{g.GridX, g.GridY, 1}, Block: [3]int{g.Threads, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}

// genericIndex is how the template spells its offsets: Idx is the type of
// pixel, tap and element offsets, Cast widens an int product before it can
// overflow, Block is the block's index. The 32-bit path spells them "int",
// "" and "blockIdx.x", so that its source reads as before the 64-bit path.
type genericIndex struct {
	Index64          bool
	Idx, Cast, Block string
}

func newGenericIndex(wide bool) genericIndex {
	if wide {
		return genericIndex{Index64: true, Idx: "idx_t", Cast: "(idx_t)", Block: "block"}
	}
	return genericIndex{Idx: "int", Block: "blockIdx.x"}
}

// SupportsEpilogue implements family.EpilogueSupport: the template applies
// every chain at its store (family.Epilogue).
func (Family) SupportsEpilogue(epilogue.Chain) error { return nil }

// SupportsOutPrecision implements family.OutPrecisionSupport: the template
// stores every output type (family.Output), so that every valid shape is
// served whatever its output precision.
func (Family) SupportsOutPrecision(problem.Problem) error { return nil }
