// Package depthwise is the depthwise convolution kernel family: its knobs,
// search space, static rules and template (depthwise.cu.tmpl), rendered
// through package kernels/family.
package depthwise

import (
	"embed"
	"errors"
	"fmt"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed depthwise.cu.tmpl
var templateFS embed.FS

// Family is the memory-bound depthwise family (depthwise.cu.tmpl):
// groups = C and K = m·C (channel multiplier m ≥ 1), output channel k
// reading input channel k/m only, exactly PyTorch's groups semantics. Both
// filter layouts are then the same [K][R][S] array. It serves every
// precision (fp32; tf32 and 3xtf32 computed in plain FP32 FFMA, more
// accurate than their bound needs; fp16 and bf16 widened to FP32 with one
// rounding at the store), both layouts, any N, H, W, R, S, stride, pad and
// dilation per axis, with or without bias. It declines every other shape
// with a *Declined error. Epilogue chains are applied at the store, in
// FP32 after the bias and before the one rounding.
//
// NCHW: a block stages one input plane's tile (its output tile's rows and
// columns plus the halo) in shared memory once, with coalesced loads, and
// computes the m output planes that read it; each thread computes
// OutputsPerThread horizontally adjacent outputs, reusing input columns in
// registers, with the plane's R·S taps in registers.
//
// NHWC: threads run along the output channels (VectorWidth channels each,
// loaded in one 4-, 8- or 16-byte access where K allows), each walking a
// strip of OutputsPerThread adjacent output pixels of one row, reusing the
// overlapping input columns in registers; the block's taps are staged once
// in shared memory.
//
// NCHW with Planes > 1 (small planes, one tile covering a plane): a block
// stages Planes consecutive input planes at once (they are contiguous in
// memory) and its threads split into Planes groups, one per plane: more
// loads in flight per block and fewer idle threads than one small plane
// per block.
//
// Knobs (NCHW: TileH, TileW, OutputsPerThread, Planes; NHWC: the first
// three and ChannelsPerBlock, VectorWidth):
//   - TileH, TileW: output rows and columns per block tile;
//   - OutputsPerThread: horizontally adjacent outputs per thread;
//   - Planes: input planes per block (NCHW; absent or 1: one), each one
//     tile of TileH ≥ P rows and TileW ≥ Q columns;
//   - ChannelsPerBlock: output channels per block (NHWC);
//   - VectorWidth: channels per thread and per load (NHWC).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "depthwise" }

// Template implements family.Family.
func (Family) Template() string { return "depthwise.cu.tmpl" }

// Declined is the family's refusal of a problem: the typed reason (rule
// "shape", "index" or "problem") behind Serves' error.
type Declined struct {
	Reason family.Rejection
}

// Error implements error.
func (d *Declined) Error() string { return d.Reason.Message }

// Is matches family.ErrOtherOp where the refusal is of the problem's op.
func (d *Declined) Is(target error) bool { return target == family.ErrOtherOp && d.Reason.Rule == "op" }

// decline is a *Declined error by rule.
func decline(rule, format string, args ...any) error {
	return &Declined{Reason: family.Hard(rule, format, args...)}
}

// Serves implements family.Family: groups = C, K a multiple of C, tensors
// below 2^31 elements; every precision and layout. A refusal is a
// *Declined (errors.As).
func (Family) Serves(p problem.Problem) error {
	if err := family.Forward("depthwise", p); err != nil {
		return decline("op", "%v", err)
	}
	s := p.Shape
	if err := s.Validate(); err != nil {
		return decline("problem", "%v", err)
	}
	if _, err := problem.ParsePrecision(string(p.Precision)); err != nil {
		return decline("problem", "%v", err)
	}
	if _, err := problem.ParseLayout(string(p.Layout)); err != nil {
		return decline("problem", "%v", err)
	}
	if err := family.Index32("depthwise", s); err != nil {
		return decline("index", "%v", err)
	}
	if s.Groups != s.C || s.K%s.C != 0 {
		return decline("shape", "depthwise serves groups = C with K a multiple of C (K = m·C), not groups=%d with C=%d, K=%d (generic serves grouped convolution)", s.Groups, s.C, s.K)
	}
	return nil
}

// Knobs are a depthwise configuration's knobs (see Family). The knobs one
// layout does not use are 0 and left out of its configurations.
type Knobs struct {
	TileH            int
	TileW            int
	OutputsPerThread int
	ChannelsPerBlock int `knob:",optional"`
	VectorWidth      int `knob:",optional"`
	Planes           int `knob:",optional"`
}

// planes is k's input planes per block (Planes, 0 read as 1).
func (k Knobs) planes() int { return max(1, k.Planes) }

// geometry holds a configuration's derived sizes; the template asserts
// each one it relies on.
type geometry struct {
	Mult, Taps            int // channel multiplier K/C, R·S
	Threads, Blocks       int
	TilesH, TilesW        int // output tiles per image plane
	InTileH, InTileW      int // NCHW: staged input rows and columns (tile + halo)
	LoadVec, Shift        int // NCHW: elements per staging load; the tile's offset in its aligned row
	InPitch               int // NCHW: staged row length, Shift + InTileW rounded up to LoadVec
	InCols                int // input columns one thread keeps in registers per filter row
	PlaneThreads          int // NCHW: threads per plane's tile, TileH × TileW/OutputsPerThread
	ChannelThreads        int // NHWC: threads along the channels
	PixelThreads          int // NHWC: threads along the pixels (TileH × TileW/OutputsPerThread)
	ChannelTiles          int // NHWC: ceil(K / ChannelsPerBlock)
	SharedBytes           int
	Registers             int // a rough per-thread estimate
	VecLoad, VecStore     bool
	WasteH, WasteW, Waste int // padded rows/columns (NCHW), padded channels (NHWC)
}

func geom(p problem.Problem, k Knobs) geometry {
	s := p.Shape
	var g geometry
	g.Mult = s.K / s.C
	g.Taps = s.R * s.S
	opt := k.OutputsPerThread
	g.InCols = (opt-1)*s.StrideW + (s.S-1)*s.DilationW + 1
	g.TilesH, g.TilesW = family.CeilDiv(s.P(), k.TileH), family.CeilDiv(s.Q(), k.TileW)
	g.WasteH = g.TilesH*k.TileH - s.P()
	g.WasteW = g.TilesW*k.TileW - s.Q()
	if p.Layout == problem.NHWC {
		g.ChannelThreads = k.ChannelsPerBlock / k.VectorWidth
		g.PixelThreads = k.TileH * (k.TileW / opt)
		g.Threads = g.ChannelThreads * g.PixelThreads
		g.ChannelTiles = family.CeilDiv(s.K, k.ChannelsPerBlock)
		g.Blocks = s.N * g.TilesH * g.TilesW * g.ChannelTiles
		g.SharedBytes = 4 * g.Taps * k.ChannelsPerBlock
		g.Registers = opt*k.VectorWidth + g.InCols*k.VectorWidth + 2*k.VectorWidth + 28
		g.VecLoad = k.VectorWidth > 1 && g.Mult == 1
		g.VecStore = k.VectorWidth > 1
		g.Waste = g.ChannelTiles*k.ChannelsPerBlock - s.K
		return g
	}
	g.PlaneThreads = k.TileH * k.TileW / opt
	g.Threads = k.planes() * g.PlaneThreads
	g.Blocks = family.CeilDiv(s.N*s.C, k.planes()) * g.TilesH * g.TilesW
	eb := p.Precision.ElementBytes()
	g.InTileH = (k.TileH-1)*s.StrideH + (s.R-1)*s.DilationH + 1
	g.InTileW = (k.TileW-1)*s.StrideW + (s.S-1)*s.DilationW + 1
	g.LoadVec = stagingVec(s.W, eb, k.TileW*s.StrideW)
	g.Shift = ((-s.PadW)%g.LoadVec + g.LoadVec) % g.LoadVec
	g.InPitch = family.RoundUp(g.Shift+g.InTileW, g.LoadVec)
	g.SharedBytes = 4 * k.planes() * g.InTileH * g.InPitch
	g.Registers = g.Taps + opt + g.InCols + 24
	g.VecStore = (opt == 2 || opt == 4) && s.Q()%opt == 0 && opt*eb >= 4
	return g
}

// The values the knobs take.
var (
	nchwTileW   = []int{16, 32, 64}
	outputs     = []int{1, 2, 4}
	nchwThreads = []int{128, 256}
	nchwPlanes  = []int{2, 4, 8, 16, 32}
	nhwcCPB     = []int{1, 2, 4, 8, 16, 32, 64, 128}
	nhwcThreads = []int{128, 256}
)

// vectorWidth is the widest of 4, 2 and 1 channels that divides k: a
// thread's channels then never straddle K and its loads and stores are
// aligned.
func vectorWidth(k int) int {
	for _, v := range []int{4, 2} {
		if k%v == 0 {
			return v
		}
	}
	return 1
}

// stagingVec is the number of elements of one NCHW staging load for rows
// of w elements of eb bytes and tiles step input columns apart (TileW ×
// StrideW): the widest of 16, 8 and 4 bytes whose element count divides w,
// so that every aligned vector of a row lies wholly inside or wholly
// outside the image, and step, so that every tile's staged row starts
// aligned (the template asserts both); 1 where none does.
func stagingVec(w, eb, step int) int {
	for _, bytes := range []int{16, 8, 4} {
		if v := bytes / eb; v > 1 && w%v == 0 && step%v == 0 {
			return v
		}
	}
	return 1
}

// pow2Ceil is the smallest power of two ≥ n.
func pow2Ceil(n int) int {
	p := 1
	for p < n {
		p *= 2
	}
	return p
}

// Space implements family.Family.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	if p.Layout == problem.NHWC {
		return f.spaceNHWC(p, lim)
	}
	return f.spaceNCHW(p, lim)
}

func (f Family) spaceNCHW(p problem.Problem, lim family.Limits) []family.Candidate {
	s := p.Shape
	var out []family.Candidate
	for _, tw := range nchwTileW {
		if tw > 16 && tw >= 2*pow2Ceil(s.Q()) {
			continue // a narrower tile covers the row
		}
		for _, opt := range outputs {
			for _, threads := range nchwThreads {
				th := threads * opt / tw
				if th < 1 || threads*opt%tw != 0 || (th > 1 && th >= 2*pow2Ceil(s.P())) {
					continue
				}
				k := Knobs{TileH: th, TileW: tw, OutputsPerThread: opt}
				out = append(out, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
			}
		}
	}
	if len(out) == 0 {
		// A plane too small for the tiles above: one warp, 2 x 16 outputs.
		k := Knobs{TileH: 2, TileW: 16, OutputsPerThread: 1}
		out = append(out, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
	}
	return append(out, f.spacePlanes(p, lim)...)
}

// spacePlanes is the NCHW candidates with several planes per block, for
// planes of at most 16 output rows and 32 columns: a tile of exactly P
// rows and the narrowest power-of-two width of whole strips that covers
// Q, Planes of them per block where that makes a multiple of 32 threads
// from 128 to 512.
func (f Family) spacePlanes(p problem.Problem, lim family.Limits) []family.Candidate {
	s := p.Shape
	if s.P() > 16 || s.Q() > 32 {
		return nil
	}
	var out []family.Candidate
	for _, opt := range outputs {
		if opt > 1 && opt >= 2*pow2Ceil(s.Q()) {
			continue
		}
		tw := max(pow2Ceil(s.Q()), opt)
		pt := s.P() * tw / opt
		for _, planes := range nchwPlanes {
			if t := planes * pt; t%32 != 0 || t < 128 || t > 512 {
				continue
			}
			k := Knobs{TileH: s.P(), TileW: tw, OutputsPerThread: opt, Planes: planes}
			out = append(out, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
		}
	}
	return out
}

func (f Family) spaceNHWC(p problem.Problem, lim family.Limits) []family.Candidate {
	s := p.Shape
	vec := vectorWidth(s.K)
	top := min(pow2Ceil(s.K), 128)
	var out []family.Candidate
	for _, cpb := range nhwcCPB {
		if cpb%vec != 0 || cpb/vec > 32 || 4*cpb < top || cpb > top {
			continue
		}
		ct := cpb / vec
		for _, opt := range outputs {
			if opt > 1 && opt >= 2*pow2Ceil(s.Q()) {
				continue
			}
			for _, threads := range nhwcThreads {
				if threads%ct != 0 {
					continue
				}
				out = append(out, f.nhwcCandidate(p, lim, cpb, vec, opt, threads)...)
			}
		}
	}
	// 2-byte data with K a multiple of 8: also 16-byte accesses (8
	// channels per thread), 128 threads, one or two pixels per thread.
	if p.Precision.ElementBytes() == 2 && vec == 4 && s.K%8 == 0 {
		for _, cpb := range nhwcCPB {
			if cpb < 8 || 4*cpb < top || cpb > top {
				continue
			}
			for _, opt := range outputs[:2] {
				if opt > 1 && opt >= 2*pow2Ceil(s.Q()) {
					continue
				}
				out = append(out, f.nhwcCandidate(p, lim, cpb, 8, opt, 128)...)
			}
		}
	}
	if len(out) == 0 {
		// A problem too small for the tiles above: one warp, one pixel
		// per thread.
		cpb := min(top, 32*vec)
		ct := cpb / vec
		k := Knobs{TileH: 1, TileW: max(1, 32/ct), OutputsPerThread: 1, ChannelsPerBlock: cpb, VectorWidth: vec}
		out = append(out, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
	}
	return out
}

// nhwcCandidate is the NHWC candidate of cpb channels, vec per thread, opt
// pixels per thread and threads per block: the block's pixel threads take
// whole strips of a row first, then rows. None where the rows would be
// mostly past P.
func (f Family) nhwcCandidate(p problem.Problem, lim family.Limits, cpb, vec, opt, threads int) []family.Candidate {
	s := p.Shape
	pt := threads / (cpb / vec)
	cols := min(pt, pow2Ceil(family.CeilDiv(s.Q(), opt)))
	th := pt / cols
	if th > 1 && th >= 2*pow2Ceil(s.P()) {
		return nil
	}
	k := Knobs{TileH: th, TileW: cols * opt, OutputsPerThread: opt, ChannelsPerBlock: cpb, VectorWidth: vec}
	return []family.Candidate{family.NewCandidate(f.Name(), k, reject(p, k, lim))}
}

// reject returns why a configuration is not worth compiling, or the zero
// Rejection. The device limits and the template's own requirements reject
// hard; waste, registers past 128 and occupancy are soft.
func reject(p problem.Problem, k Knobs, lim family.Limits) family.Rejection {
	if err := checkKnobs(p, k); err != nil {
		return family.Hard("knobs", "%v", err)
	}
	g := geom(p, k)
	s := p.Shape
	switch {
	case g.Threads > lim.MaxThreadsPerBlock:
		return family.Hard("threads", "%d per block > %d", g.Threads, lim.MaxThreadsPerBlock)
	case g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
	case g.Registers*g.Threads > lim.RegistersPerSM:
		return family.Hard("registers", "about %d per block > %d per SM", g.Registers*g.Threads, lim.RegistersPerSM)
	case g.Registers > 128:
		return family.Soft("registers", "about %d per thread: taps or input columns spill", g.Registers)
	case 2*g.WasteH > s.P() && k.TileH > 1:
		return family.Soft("waste", "TileH=%d computes %d padded rows for P=%d", k.TileH, g.WasteH, s.P())
	case 2*g.WasteW > s.Q() && k.TileW > 16:
		return family.Soft("waste", "TileW=%d computes %d padded columns for Q=%d", k.TileW, g.WasteW, s.Q())
	case 2*g.Waste > s.K && k.ChannelsPerBlock > 8:
		return family.Soft("waste", "ChannelsPerBlock=%d computes %d padded channels for K=%d", k.ChannelsPerBlock, g.Waste, s.K)
	case g.Blocks < 2*lim.SMs && g.Threads > 64:
		return family.Soft("occupancy", "%d blocks of %d threads leave SMs idle", g.Blocks, g.Threads)
	}
	return family.Rejection{}
}

// checkKnobs says what the template cannot do with knobs k for p's layout.
func checkKnobs(p problem.Problem, k Knobs) error {
	opt := k.OutputsPerThread
	if opt < 1 || k.TileW < 1 || k.TileW%opt != 0 {
		return fmt.Errorf("OutputsPerThread=%d must be positive and divide TileW=%d", opt, k.TileW)
	}
	var threads int
	if p.Layout == problem.NHWC {
		v := k.VectorWidth
		switch {
		case k.TileH < 1:
			return fmt.Errorf("TileH=%d, want positive", k.TileH)
		case v != 1 && v != 2 && v != 4 && (v != 8 || p.Precision.ElementBytes() != 2):
			return fmt.Errorf("VectorWidth=%d, want 1, 2 or 4 (8 for 2-byte data)", v)
		case p.Shape.K%v != 0:
			return fmt.Errorf("VectorWidth=%d does not divide K=%d", v, p.Shape.K)
		case k.ChannelsPerBlock < v || k.ChannelsPerBlock%v != 0:
			return fmt.Errorf("ChannelsPerBlock=%d is not a positive multiple of VectorWidth=%d", k.ChannelsPerBlock, v)
		case k.Planes > 1:
			return errors.New("NHWC configurations have no Planes (one plane's pixels per block)")
		}
		threads = k.ChannelsPerBlock / v * k.TileH * (k.TileW / opt)
	} else {
		switch {
		case k.ChannelsPerBlock != 0 || k.VectorWidth != 0:
			return errors.New("NCHW configurations have no ChannelsPerBlock or VectorWidth")
		case k.TileH < 1:
			return fmt.Errorf("TileH=%d, want positive", k.TileH)
		case k.Planes < 0:
			return fmt.Errorf("Planes=%d, want positive", k.Planes)
		case k.Planes > 1 && (k.TileH < p.Shape.P() || k.TileW < p.Shape.Q()):
			return fmt.Errorf("Planes=%d needs one tile per plane: TileH=%d, TileW=%d for P=%d, Q=%d", k.Planes, k.TileH, k.TileW, p.Shape.P(), p.Shape.Q())
		}
		threads = k.planes() * k.TileH * (k.TileW / opt)
	}
	if threads%32 != 0 || threads > 1024 {
		return fmt.Errorf("%d threads per block, want a multiple of 32 up to 1024", threads)
	}
	return nil
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	if err := f.Serves(p); err != nil {
		return family.Kernel{}, fmt.Errorf("depthwise: %w", err)
	}
	k, err := family.ParseKnobs[Knobs](f.Name(), cfg)
	if err != nil {
		return family.Kernel{}, err
	}
	if err := checkKnobs(p, k); err != nil {
		return family.Kernel{}, fmt.Errorf("depthwise: config %s: %w", cfg, err)
	}
	if k.Planes == 1 {
		k.Planes = 0 // one plane per block is the kernel without the knob, under its ID
	}
	cfg = family.KnobsConfig(k)
	g := geom(p, k)
	name := "convgen_depthwise_" + family.KernelSuffix(cfg)
	elem, prec := "float", "FP32 data"
	switch p.Precision {
	case problem.FP16:
		elem, prec = "unsigned short", "FP16 data widened to FP32, FP32 accumulation, output rounded to FP16 once"
	case problem.BF16:
		elem, prec = "unsigned short", "BF16 data widened to FP32, FP32 accumulation, output rounded to BF16 once"
	case problem.TF32, problem.TF32x3:
		prec = fmt.Sprintf("FP32 data computed in plain FP32 (FFMA), more accurate than %s needs", p.Precision)
	}
	data := struct {
		family.ShapeData
		geometry
		Knobs
		Name, Config, Elem, PrecisionDoc string
	}{family.NewShapeData(p), g, k, name, cfg.String(), elem, prec}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src,
		Launch: family.Launch{Grid: [3]int{g.Blocks, 1, 1}, Block: [3]int{g.Threads, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}

// SupportsEpilogue implements family.EpilogueSupport: the template applies
// every chain at its store (family.Epilogue), in FP32 before the rounding.
func (Family) SupportsEpilogue(epilogue.Chain) error { return nil }

// SupportsOutPrecision implements family.OutPrecisionSupport: the template
// stores every output type (family.Output), vector stores included
// (store_out: a vector of VEC or OPT outputs is aligned to as many
// elements whatever their size).
func (Family) SupportsOutPrecision(problem.Problem) error { return nil }
