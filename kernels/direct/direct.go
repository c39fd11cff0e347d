// Package direct is the strict-FP32 direct convolution kernel family: its
// knobs, search space, static rules and template (direct.cu.tmpl), rendered
// through package kernels/family.
package direct

import (
	"embed"
	"fmt"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed direct.cu.tmpl
var templateFS embed.FS

// Family is the strict-FP32 direct convolution family (direct.cu.tmpl),
// for both layouts.
//
// Knobs:
//   - TileP, TileQ: output rows and columns per block;
//   - TileK: output channels per block;
//   - PixelsPerThread: consecutive output columns per thread;
//   - ChannelsPerThread: output channels per thread;
//   - StageC: input channels staged in shared memory at a time;
//   - TilesPerBlock: output tiles one block walks (the filter slice stays in
//     shared memory when StageC == C).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "direct" }

// Template implements family.Family.
func (Family) Template() string { return "direct.cu.tmpl" }

// Serves implements family.Family.
func (Family) Serves(p problem.Problem) error {
	if err := family.Forward("direct", p); err != nil {
		return err
	}
	if err := family.OneGroup("direct", p.Shape); err != nil {
		return err
	}
	if err := family.Index32("direct", p.Shape); err != nil {
		return err
	}
	if p.Precision != problem.FP32 {
		return fmt.Errorf("direct serves only fp32, not %s", p.Precision)
	}
	return nil
}

// The values each knob takes in the search space.
var (
	directPixelsPerThread   = []int{2, 4, 5, 8}
	directColGroups         = []int{1, 2, 4, 8, 11, 16}
	directTileP             = []int{2, 4, 8, 16}
	directTileK             = []int{16, 32, 48, 96}
	directChannelsPerThread = []int{4, 8, 16}
	directTilesPerBlock     = []int{1}
)

// directKnobs are a direct configuration's knobs (see Family).
type directKnobs struct {
	TileP, TileQ, TileK, PixelsPerThread, ChannelsPerThread, StageC, TilesPerBlock int
}

// check refuses knobs that do not tile s: every knob positive, the
// thread tile dividing the block tile, StageC dividing C and TileK K.
func (c directKnobs) check(s problem.Shape) error {
	if c.TileP < 1 || c.TileQ < 1 || c.TileK < 1 || c.PixelsPerThread < 1 || c.ChannelsPerThread < 1 || c.StageC < 1 || c.TilesPerBlock < 1 {
		return fmt.Errorf("every knob must be positive")
	}
	if c.TileQ%c.PixelsPerThread != 0 || c.TileK%c.ChannelsPerThread != 0 || s.C%c.StageC != 0 || s.K%c.TileK != 0 {
		return fmt.Errorf("PixelsPerThread must divide TileQ, ChannelsPerThread TileK, StageC C and TileK K")
	}
	return nil
}

// directGeometry holds a configuration's derived sizes.
type directGeometry struct {
	ThreadsPerBlock, TilesP, TilesQ, InRows, InCols, RowsPerPhase int
	InPitch, SegLen, SegVec, FilterPitch, SharedBytes, Grid       int
	Registers                                                     int // a rough lower estimate
	InSmemFloats                                                  int // input patch floats, rounded up to 16 bytes
}

func directGeom(s problem.Shape, c directKnobs) directGeometry {
	var g directGeometry
	px := c.PixelsPerThread
	g.ThreadsPerBlock = c.TileP * (c.TileQ / px) * (c.TileK / c.ChannelsPerThread)
	g.TilesP = family.CeilDiv(s.P(), c.TileP)
	g.TilesQ = family.CeilDiv(s.Q(), c.TileQ)
	g.InRows = (c.TileP-1)*s.StrideH + (s.R-1)*s.DilationH + 1
	g.InCols = (c.TileQ-1)*s.StrideW + (s.S-1)*s.DilationW + 1
	g.RowsPerPhase = family.CeilDiv(g.InRows, s.StrideH)
	g.SegLen = (px-1)*s.StrideW + (s.S-1)*s.DilationW + 1
	if px*s.StrideW%4 == 0 {
		g.SegVec = 1
		g.SegLen = family.RoundUp(g.SegLen, 4)
	}
	need := max(g.InCols, (c.TileQ/px-1)*px*s.StrideW+g.SegLen)
	if g.SegVec == 1 {
		g.InPitch = family.Pitch4(need) // 16-byte rows, ≡ 4 words mod 8: conflict-free LDS.128 across rows
	} else {
		g.InPitch = need | 1 // odd: conflict-free scalar reads across rows
	}
	if c.ChannelsPerThread%4 == 0 {
		g.FilterPitch = family.Pitch4(c.TileK)
	} else {
		g.FilterPitch = c.TileK
	}
	// The filter slice follows the input patch: start it on 16 bytes for
	// its float4 reads.
	g.InSmemFloats = family.RoundUp(c.StageC*s.StrideH*g.RowsPerPhase*g.InPitch, 4)
	g.SharedBytes = 4 * (g.InSmemFloats + c.StageC*s.R*s.S*g.FilterPitch)
	tiles := s.N * g.TilesP * g.TilesQ
	g.Grid = (s.K / c.TileK) * family.CeilDiv(tiles, c.TilesPerBlock)
	g.Registers = px*c.ChannelsPerThread + g.SegLen + c.ChannelsPerThread + 24
	return g
}

// Space implements family.Family.
func (d Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	s := p.Shape
	var out []family.Candidate
	stageC := family.Divisors(s.C)
	for _, px := range directPixelsPerThread {
		for _, groups := range directColGroups {
			for _, tp := range directTileP {
				for _, tk := range family.ChannelTiles(s.K, directTileK, 4) {
					for _, kx := range directChannelsPerThread {
						if tk%kx != 0 || px*kx < 32 || px*kx > 64 {
							continue // register tiles of 32 to 64 accumulators only
						}
						for _, sc := range stageC {
							for _, tpb := range directTilesPerBlock {
								if tpb > 1 && sc != s.C {
									continue // walking tiles keeps the filter, which needs StageC == C
								}
								k := directKnobs{TileP: tp, TileQ: px * groups, TileK: tk,
									PixelsPerThread: px, ChannelsPerThread: kx, StageC: sc, TilesPerBlock: tpb}
								out = append(out, family.NewCandidate(d.Name(), k, d.reject(s, k, lim)))
							}
						}
					}
				}
			}
		}
	}
	return out
}

// reject returns why a configuration is not worth compiling, or the zero
// Rejection.
func (Family) reject(s problem.Shape, c directKnobs, lim family.Limits) family.Rejection {
	g := directGeom(s, c)
	switch {
	case c.TileK%c.ChannelsPerThread != 0:
		return family.Hard("divisibility", "ChannelsPerThread=%d does not divide TileK=%d", c.ChannelsPerThread, c.TileK)
	case c.PixelsPerThread*c.ChannelsPerThread < 32 || c.PixelsPerThread*c.ChannelsPerThread > 64:
		return family.Hard("register tile", "%d accumulators per thread outside [32, 64]", c.PixelsPerThread*c.ChannelsPerThread)
	case g.ThreadsPerBlock > 512:
		return family.Hard("threads", "%d per block > 512 leaves too few registers per thread", g.ThreadsPerBlock)
	case g.ThreadsPerBlock > lim.MaxThreadsPerBlock:
		return family.Hard("threads", "%d per block > %d", g.ThreadsPerBlock, lim.MaxThreadsPerBlock)
	case g.ThreadsPerBlock < 64 || g.ThreadsPerBlock%32 != 0:
		return family.Soft("warps", "%d threads per block is not a multiple of 32 of at least 64", g.ThreadsPerBlock)
	case g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
	case g.Registers > lim.MaxRegsPerThread:
		return family.Hard("registers", "about %d per thread > %d", g.Registers, lim.MaxRegsPerThread)
	case g.Registers*g.ThreadsPerBlock > lim.RegistersPerSM:
		return family.Hard("registers", "about %d per block > %d per SM", g.Registers*g.ThreadsPerBlock, lim.RegistersPerSM)
	case c.TileP > 1 && g.TilesP*c.TileP-s.P() >= c.TileP:
		return family.Soft("waste", "TileP=%d leaves a whole empty tile row for P=%d", c.TileP, s.P())
	case c.TileQ > s.Q() && c.PixelsPerThread*(c.TileQ/c.PixelsPerThread-1) >= s.Q():
		return family.Soft("waste", "TileQ=%d has a whole idle column group for Q=%d", c.TileQ, s.Q())
	case wasteFraction(s, c) > 0.20:
		return family.Soft("waste", "%.0f%% of computed outputs fall outside the %dx%d output", 100*wasteFraction(s, c), s.P(), s.Q())
	case c.TilesPerBlock > 1 && c.StageC != s.C:
		return family.Hard("staging", "TilesPerBlock > 1 keeps the filter in shared memory, which needs StageC == C")
	case (c.TileQ/c.PixelsPerThread)*c.TileP%32 != 0 && c.TileQ/c.PixelsPerThread*c.TileP < 32:
		return family.Soft("warps", "pixel threads do not fill a warp, so filter reads are not broadcasts")
	case g.Grid < 2*lim.SMs && s.N*s.K*s.P()*s.Q() >= 2*lim.SMs*4096:
		return family.Soft("occupancy", "%d blocks cannot fill %d SMs twice", g.Grid, lim.SMs)
	}
	return family.Rejection{}
}

// wasteFraction is the share of computed outputs that lie outside P×Q.
func wasteFraction(s problem.Shape, c directKnobs) float64 {
	g := directGeom(s, c)
	computed := float64(g.TilesP*c.TileP) * float64(g.TilesQ*c.TileQ)
	return 1 - float64(s.P()*s.Q())/computed
}

// Render implements family.Family.
func (d Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	if err := d.Serves(p); err != nil {
		return family.Kernel{}, err
	}
	k, err := family.ParseKnobs[directKnobs](d.Name(), cfg)
	if err != nil {
		return family.Kernel{}, err
	}
	if err := k.check(p.Shape); err != nil {
		return family.Kernel{}, fmt.Errorf("%s: config %s: %w", d.Name(), cfg, err)
	}
	cfg = family.KnobsConfig(k)
	g := directGeom(p.Shape, k)
	name := "convgen_direct_" + family.KernelSuffix(cfg)
	data := struct {
		family.ShapeData
		directGeometry
		directKnobs
		Name, Config string
	}{family.NewShapeData(p), g, k, name, cfg.String()}
	src, err := family.Render(templateFS, d.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: d.Name(), Config: cfg, Name: name, Source: src,
		Launch: family.Launch{Grid: [3]int{g.Grid, 1, 1}, Block: [3]int{g.ThreadsPerBlock, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}

// SupportsEpilogue implements family.EpilogueSupport: the template applies
// every chain at its store (family.Epilogue).
func (Family) SupportsEpilogue(epilogue.Chain) error { return nil }
