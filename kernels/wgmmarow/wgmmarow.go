// Package wgmmarow is the Hopper wgmma row-tile (TF32, NCHW) kernel family:
// its knobs, search space, static rules and template (wgmmarow.cu.tmpl),
// rendered through package kernels/family.
package wgmmarow

import (
	"embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/hopper"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed wgmmarow.cu.tmpl
var templateFS embed.FS

// Family is the Hopper row-tile family (wgmmarow.cu.tmpl):
// wgmma.mma_async m64nNk8 with TF32 operands and FP32 accumulators, like
// the wgmma family, but an m64 tile is one whole output row (Q ≤ 64 pixels in 64
// slots) and a block walks consecutive output rows, so that:
//   - the input is staged once: a ring of "groups" of stride_h input rows
//     at full width, output row p reading groups p .. p + GroupsPerRow - 1
//     of its image, one new group per row (an 8x8-pixel tile restages
//     most of its patch);
//   - the NCHW epilogue writes 16-pixel runs of each channel plane (a 4x4
//     transpose of every quad's sums, two rounds of shuffles) instead of
//     the 8-pixel runs that 8-column tiles leave: on the flagship the
//     8-pixel runs made tf32 NCHW a third slower than tf32 NHWC (see
//     docs/performance.md).
//
// The price is the slots past Q (on the flagship 9 of 64: 14% more tensor
// work). It serves tf32 in NCHW only, with stride_w 4 and dilation_w 1 (the
// A-operand trick of WGMMA) and Q ≤ 64, and compiles for sm_90a only.
//
// Knobs:
//   - TileK: output channels per block, the wgmma's N;
//   - Warpgroups: computing warpgroups per block, taking the block's rows
//     in turn and sharing the filter slice and the ring;
//   - Lag: groups whose copies are in flight behind the newest one the
//     producer warpgroup issued;
//   - RowsPerBlock: consecutive output rows per block (as many as make one
//     block per SM, given by the search from Limits.SMs);
//   - Slots: ring slots (as many as fit beside the filter slice, up to 8,
//     given by the search from Limits.MaxSharedPerBlock; at least the
//     groups a row reads plus Lag, so that the producer can always go on);
//   - ResidualPrefetch (only with a residual in the epilogue chain): when
//     a row's residual is read. 0: in the epilogue, each element right
//     before its store (the load latency exposed at the end of every row);
//     1: into registers (TileK/2 more per thread) with streaming loads
//     issued right after the row's wgmmas, so that they land while the
//     wgmmas run; 2: prefetched into L2 a row ahead (prefetch.L2 per
//     128-byte line, spread over the warpgroup), read in the epilogue as
//     with 0. The search prunes 1 and 2 (a soft rule a pin lifts: slower
//     on an H100, see residualPrefetches).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "wgmmarow" }

// Template implements family.Family.
func (Family) Template() string { return "wgmmarow.cu.tmpl" }

// wgmmaRowMaxQ is the most pixels of an output row one m64 tile holds.
const wgmmaRowMaxQ = 64

// Serves implements family.Family.
func (Family) Serves(p problem.Problem) error {
	if err := family.Forward("wgmmarow", p); err != nil {
		return err
	}
	s := p.Shape
	if err := family.OneGroup("wgmmarow", s); err != nil {
		return err
	}
	if err := family.Index32("wgmmarow", s); err != nil {
		return err
	}
	switch {
	case p.Precision != problem.TF32:
		return fmt.Errorf("wgmmarow serves tf32 only, not %s", p.Precision)
	case p.Layout != problem.NCHW:
		return fmt.Errorf("wgmmarow serves the nchw layout only, not %s", p.Layout)
	case s.StrideW != 4 || s.DilationW != 1:
		return fmt.Errorf("wgmmarow needs stride_w 4 and dilation_w 1 (16-byte pixel rows), not %d and %d", s.StrideW, s.DilationW)
	case s.Q() > wgmmaRowMaxQ:
		return fmt.Errorf("wgmmarow needs output rows of at most %d pixels (one m64 tile), not Q=%d", wgmmaRowMaxQ, s.Q())
	case s.K%8 != 0:
		return fmt.Errorf("wgmmarow needs K divisible by 8, not %d", s.K)
	}
	return nil
}

// wgmmaRowKnobs are a wgmmarow configuration's knobs (see Family).
// While the search derives Slots, it is 0 (wgmmaRowGeom fits the most).
// ResidualPrefetch is optional: 0, the only value without a residual, is
// left out of configurations (and of the records that predate it).
type wgmmaRowKnobs struct {
	TileK, Warpgroups, Lag, RowsPerBlock, Slots int
	ResidualPrefetch                            int `knob:",optional"`
}

// residualPrefetches is the ResidualPrefetch values the space lists for p:
// 0 to 2 when p's chain reads a residual, else only 0. reject prunes 1 and
// 2 (a soft rule, which a pin lifts): on the flagship with residual,relu
// (H100, tf32 NCHW, TileK=48, RowsPerBlock=214) they took 0.427–0.466 and
// 0.797–0.858 ms against 0's 0.388–0.390 (docs/performance.md).
func residualPrefetches(p problem.Problem) []int {
	if p.Epilogue.NeedsResidual() {
		return []int{0, 1, 2}
	}
	return []int{0}
}

// wgmmaRowSpace is the values the search space takes.
var wgmmaRowSpace = struct{ TileK, Warpgroups, Lag []int }{
	TileK: []int{48, 96, 128}, Warpgroups: []int{1, 2, 3}, Lag: []int{1, 2},
}

// wgmmaRowStep is one k8 step of the reduction: the ring group its two
// 4-tap blocks lie in, the first block's offset within the group's slot
// and the second's distance from it, both in 16-byte units (a padding
// block re-reads the first: distance 0).
type wgmmaRowStep struct {
	Index, Group, Off16, LBO16 int
}

type wgmmaRowGeometry struct {
	GroupsPerRow, Pitch, SlotFloats, SlackFloats, Slots int
	KSteps, PairStage, ThreadsPerBlock, Rows, Grid      int
	SharedBytes                                         int
	Steps                                               []wgmmaRowStep
	// BlockTaps and BlockS0 list each k step's two blocks (the filter's
	// order): tap offset (c*R + r)*S + s0 and s0, -1 for padding.
	BlockTaps, BlockS0 []int
}

// wgmmaRowAReadEnd is one past the last byte, from the start of its slot,
// that k step st's A descriptor addresses: the tensor cores read the 64
// rows of 16 bytes of each of the step's two 4-tap blocks (the second LBO
// bytes after the first), and compute-sanitizer's memcheck counts the
// operand as the 64 x 32 bytes from the descriptor's start (as an "Invalid
// __shared__ read of size 2048 bytes" where they pass the allocation's end).
// Rows past a staged row's Q pixels feed only the discarded pixel slots
// Q..63. The template's static_assert checks the same bound.
func wgmmaRowAReadEnd(st wgmmaRowStep) int {
	return 16*st.Off16 + max(16*st.LBO16+64*16, 64*32)
}

// wgmmaRowMaxSlots caps the ring: more slots than the rows in flight need
// buy nothing.
const wgmmaRowMaxSlots = 8

func wgmmaRowGeom(p problem.Problem, c wgmmaRowKnobs, lim family.Limits) wgmmaRowGeometry {
	s := p.Shape
	var g wgmmaRowGeometry
	sb := family.CeilDiv(s.S, 4) // 4-tap blocks per filter row
	g.GroupsPerRow = family.CeilDiv((s.R-1)*s.DilationH+1, s.StrideH)
	g.Pitch = 4*(s.Q()-1) + 4*sb
	g.SlotFloats = s.C * s.StrideH * g.Pitch
	if s.W%2 == 0 && s.PadW%2 == 0 {
		g.PairStage = 1
	}
	for j := range g.GroupsPerRow {
		type block struct{ off, tap, s0 int }
		var blocks []block
		for ch := range s.C {
			for rr := range s.StrideH {
				o := j*s.StrideH + rr // input row offset from the output row's first
				if o%s.DilationH != 0 || o/s.DilationH >= s.R {
					continue // no filter row reads this staged row here
				}
				r := o / s.DilationH
				for b := range sb {
					blocks = append(blocks, block{(ch*s.StrideH+rr)*g.Pitch + 4*b, (ch*s.R+r)*s.S + 4*b, 4 * b})
				}
			}
		}
		for i := 0; i < len(blocks); i += 2 {
			st := wgmmaRowStep{Index: g.KSteps, Group: j, Off16: blocks[i].off / 4}
			g.BlockTaps = append(g.BlockTaps, blocks[i].tap)
			g.BlockS0 = append(g.BlockS0, blocks[i].s0)
			if i+1 < len(blocks) {
				st.LBO16 = (blocks[i+1].off - blocks[i].off) / 4
				g.BlockTaps = append(g.BlockTaps, blocks[i+1].tap)
				g.BlockS0 = append(g.BlockS0, blocks[i+1].s0)
			} else {
				g.BlockTaps = append(g.BlockTaps, -1)
				g.BlockS0 = append(g.BlockS0, 0)
			}
			g.Steps = append(g.Steps, st)
			g.KSteps++
		}
	}
	// The zeroed slack after the last slot holds what its k steps' A
	// descriptors address past it (wgmmaRowAReadEnd).
	for _, st := range g.Steps {
		g.SlackFloats = max(g.SlackFloats, family.RoundUp(wgmmaRowAReadEnd(st)/4-g.SlotFloats, 4))
	}
	g.ThreadsPerBlock = 128 * (c.Warpgroups + 1)
	g.Rows = s.N * s.P()
	if c.RowsPerBlock > 0 {
		g.Grid = family.CeilDiv(g.Rows, c.RowsPerBlock)
	}
	filter := c.TileK * g.KSteps * 8
	fixed := 4 * (filter + g.SlackFloats)
	perSlot := 4*g.SlotFloats + 16 // the slot and its two mbarriers
	g.Slots = wgmmaRowMaxSlots
	if c.Slots > 0 { // Render: the search chose it
		g.Slots = c.Slots
	} else if lim.MaxSharedPerBlock > 0 {
		g.Slots = min(wgmmaRowMaxSlots, max(0, (lim.MaxSharedPerBlock-fixed)/perSlot))
	}
	g.SharedBytes = fixed + g.Slots*perSlot
	return g
}

// wgmmaRowRowsPerBlock is the rows per block that make one block per SM.
func wgmmaRowRowsPerBlock(p problem.Problem, lim family.Limits, tileK int) int {
	blocks := max(lim.SMs/max(p.Shape.K/tileK, 1), 1)
	return family.CeilDiv(p.Shape.N*p.Shape.P(), blocks)
}

// Space implements family.Family. Without Limits.SM90a every configuration is
// listed as rejected.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	var out []family.Candidate
	for _, tk := range family.ChannelTiles(p.Shape.K, wgmmaRowSpace.TileK, 8) {
		for _, wg := range wgmmaRowSpace.Warpgroups {
			for _, lag := range wgmmaRowSpace.Lag {
				for _, rp := range residualPrefetches(p) {
					k := wgmmaRowKnobs{TileK: tk, Warpgroups: wg, Lag: lag, RowsPerBlock: wgmmaRowRowsPerBlock(p, lim, tk), ResidualPrefetch: rp}
					k.Slots = wgmmaRowGeom(p, k, lim).Slots
					out = append(out, family.NewCandidate(f.Name(), k, f.reject(p, k, lim)))
				}
			}
		}
	}
	return out
}

func (Family) reject(p problem.Problem, c wgmmaRowKnobs, lim family.Limits) family.Rejection {
	s := p.Shape
	g := wgmmaRowGeom(p, c, lim)
	share := lim.RegistersPerSM / g.ThreadsPerBlock / 8 * 8
	// Accumulators, the bias of the thread's channels, and wgmmaSpareRegs
	// (and with ResidualPrefetch=1 the row's residual, one per accumulator).
	regs := c.TileK/2 + c.TileK/4 + hopper.SpareRegs
	resid := 0
	if c.ResidualPrefetch == 1 {
		resid = c.TileK / 2
	}
	regs += resid
	switch {
	case !lim.SM90a:
		return family.Hard("arch", "wgmmarow needs an sm_90 device and NVRTC 12 or newer (sm_90a)")
	case c.TileK > 256:
		return family.Hard("shape", "wgmma's N is at most 256, not TileK=%d", c.TileK)
	case g.ThreadsPerBlock > lim.MaxThreadsPerBlock:
		return family.Hard("threads", "%d per block > %d", g.ThreadsPerBlock, lim.MaxThreadsPerBlock)
	case regs > share && resid > 0:
		return family.Hard("registers", "%d accumulators + %d bias + %d residual + %d per thread exceed the %d that %d threads leave each",
			c.TileK/2, c.TileK/4, resid, hopper.SpareRegs, share, g.ThreadsPerBlock)
	case regs > share:
		return family.Hard("registers", "%d accumulators + %d bias + %d per thread exceed the %d that %d threads leave each",
			c.TileK/2, c.TileK/4, hopper.SpareRegs, share, g.ThreadsPerBlock)
	case g.GroupsPerRow > 8:
		return family.Hard("shape", "an output row reads %d groups of %d input rows, more than 8 descriptors", g.GroupsPerRow, s.StrideH)
	case g.Slots < g.GroupsPerRow+c.Lag:
		return family.Hard("shared memory", "%d ring slots of %d B fit beside the filter, a row's %d groups and Lag=%d need %d",
			g.Slots, 4*g.SlotFloats, g.GroupsPerRow, c.Lag, g.GroupsPerRow+c.Lag)
	case g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
	}
	// The soft rules last: family.AdmitSoft may lift them. (The 64 - Q unused pixel
	// slots of a row tile are a property of the shape, not of a
	// configuration: the tuner weighs them against the other families.)
	if c.ResidualPrefetch != 0 {
		return family.Soft("prefetch", "ResidualPrefetch=%d was slower than 0 on an H100 (see residualPrefetches)", c.ResidualPrefetch)
	}
	if blocks := g.Grid * (s.K / c.TileK); blocks*20 < 19*lim.SMs {
		return family.Soft("occupancy", "%d blocks leave more than 5%% of %d SMs idle", blocks, lim.SMs)
	}
	return family.Rejection{}
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	if err := f.Serves(p); err != nil {
		return family.Kernel{}, err
	}
	k, err := family.ParseKnobs[wgmmaRowKnobs](f.Name(), cfg)
	if err != nil {
		return family.Kernel{}, err
	}
	tk, wg, lag := k.TileK, k.Warpgroups, k.Lag
	if tk < 8 || tk%8 != 0 || tk > 256 || p.Shape.K%tk != 0 {
		return family.Kernel{}, fmt.Errorf("wgmmarow: config %s: TileK must be a multiple of 8 up to 256 dividing K", cfg)
	}
	if wg < 1 || wg > 7 || lag < 1 || k.RowsPerBlock < 1 {
		return family.Kernel{}, fmt.Errorf("wgmmarow: config %s: Warpgroups is 1 to 7, Lag and RowsPerBlock at least 1", cfg)
	}
	if rp := k.ResidualPrefetch; rp < 0 || rp > 2 || (rp != 0 && !p.Epilogue.NeedsResidual()) {
		return family.Kernel{}, fmt.Errorf("wgmmarow: config %s: ResidualPrefetch is 0, 1 or 2, and 0 without a residual in the epilogue chain", cfg)
	}
	if k.Slots < 1 {
		return family.Kernel{}, fmt.Errorf("wgmmarow: config %s: Slots must be at least the groups a row reads plus Lag", cfg)
	}
	cfg = family.KnobsConfig(k)
	g := wgmmaRowGeom(p, k, family.Limits{})
	if g.Slots < g.GroupsPerRow+lag {
		return family.Kernel{}, fmt.Errorf("wgmmarow: config %s: Slots must be at least the %d groups a row reads plus Lag", cfg, g.GroupsPerRow)
	}
	acc := tk / 2
	accOps, accCons := hopper.AccOperands(acc)
	ints := func(v []int) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = strconv.Itoa(x)
		}
		return strings.Join(s, ", ")
	}
	// The knobs' Slots and the geometry's are the same number (the
	// geometry takes the knob's): the explicit field resolves the selector.
	data := struct {
		family.ShapeData
		wgmmaRowGeometry
		wgmmaRowKnobs
		Slots                                          int
		Name, Config, FilterLayout, BlockTaps, BlockS0 string
		AccOperands, AccConstraints                    string
		DescAOperand, DescBOperand, ScaleOperand       int
	}{family.NewShapeData(p), g, k, g.Slots, fmt.Sprintf("convgen_wgmmarow_tf32_%s", family.KernelSuffix(cfg)), cfg.String(), p.Layout.FilterLayout(),
		ints(g.BlockTaps), ints(g.BlockS0), accOps, accCons, acc, acc + 1, acc + 2}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: data.Name, Source: src, ArchSuffix: "a",
		Launch: family.Launch{Grid: [3]int{g.Grid, p.Shape.K / tk, 1}, Block: [3]int{g.ThreadsPerBlock, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}

// SupportsEpilogue implements family.EpilogueSupport: the template applies
// every chain at its store (family.Epilogue).
func (Family) SupportsEpilogue(epilogue.Chain) error { return nil }
