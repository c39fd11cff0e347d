// Package winograd is the strict-FP32 Winograd F(2x2, 3x3) convolution
// kernel family: its knobs, search space, static rules and template
// (winograd.cu.tmpl), rendered through package kernels/family.
package winograd

import (
	"embed"
	"fmt"
	"math"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed winograd.cu.tmpl
var templateFS embed.FS

// Family is the strict-FP32 Winograd F(2x2, 3x3) family
// (winograd.cu.tmpl), for both layouts. It splits a strided
// convolution by input phase into C·StrideH·StrideW stride-1 convolutions
// with 3×3 filters, so it serves shapes whose filter spans at most three
// taps per phase (ceil(R/StrideH) ≤ 3 and ceil(S/StrideW) ≤ 3), such as
// the flagship's 11×11 filter at stride 4 (padded to 12×12). It does
// 16·C·StrideH·StrideW multiplies per 2×2 output tile and output channel
// where the direct convolution does 4·C·R·S: 1.89× fewer on the flagship
// per tile, 1.82× counting the partial tiles at the image's edges.
// All arithmetic is FP32 (FFMA and FADD).
//
// Knobs:
//   - TileT: 2×2 output tiles per block step (the GEMMs' M);
//   - TileK: output channels per block (the GEMMs' N); the block keeps the
//     transformed filter of all phase channels for them in shared memory;
//   - ThreadT, ThreadK: a thread's register tile of one transform point;
//   - Chunk: phase channels per pipeline stage (a divisor of CH holding
//     whole phase columns);
//   - StepsPerBlock: steps of TileT tiles each block walks (one or two
//     blocks per SM).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "winograd" }

// Template implements family.Family.
func (Family) Template() string { return "winograd.cu.tmpl" }

// Serves implements family.Family.
func (Family) Serves(p problem.Problem) error {
	if err := family.Forward("winograd", p); err != nil {
		return err
	}
	s := p.Shape
	if err := family.OneGroup("winograd", s); err != nil {
		return err
	}
	if err := family.Index32("winograd", s); err != nil {
		return err
	}
	switch {
	case p.Precision != problem.FP32:
		return fmt.Errorf("winograd serves only fp32, not %s", p.Precision)
	case s.DilationH != 1 || s.DilationW != 1:
		return fmt.Errorf("winograd needs dilation 1, not %dx%d", s.DilationH, s.DilationW)
	case float64(s.C)*float64(s.StrideH)*float64(s.StrideW)*16 > math.MaxInt32:
		// The phase channels' multiplies per tile (16·C·stride_h·stride_w)
		// in 32-bit arithmetic, here and in the kernel.
		return fmt.Errorf("winograd splits C = %d into %d×%d stride phases: too many phase channels", s.C, s.StrideH, s.StrideW)
	case family.CeilDiv(s.R, s.StrideH) > 3 || family.CeilDiv(s.S, s.StrideW) > 3:
		return fmt.Errorf("winograd needs at most 3 filter taps per stride phase, not %dx%d (R=%d, S=%d at stride %dx%d)",
			family.CeilDiv(s.R, s.StrideH), family.CeilDiv(s.S, s.StrideW), s.R, s.S, s.StrideH, s.StrideW)
	}
	return nil
}

// The values each knob takes in the search space.
var (
	winogradTileT   = []int{32, 64}
	winogradTileK   = []int{16, 32, 48, 64, 96}
	winogradThreadT = []int{4, 8}
	winogradThreadK = []int{4, 8}
)

// winogradKnobs are a winograd configuration's knobs (see Family).
type winogradKnobs struct {
	TileT, TileK, ThreadT, ThreadK, Chunk, StepsPerBlock int
}

// winogradGeometry holds a configuration's derived sizes.
type winogradGeometry struct {
	ThreadsPerBlock, TilesP, TilesQ, Steps, PairsPerThread int
	VPitch, EpiTiles, SharedBytes, Grid                    int
	Registers                                              int // a rough lower estimate
}

func winogradGeom(s problem.Shape, c winogradKnobs) winogradGeometry {
	var g winogradGeometry
	tg, kg := c.TileT/max(c.ThreadT, 1), c.TileK/max(c.ThreadK, 1)
	g.ThreadsPerBlock = 16 * tg * kg
	g.TilesP, g.TilesQ = family.CeilDiv(s.P(), 2), family.CeilDiv(s.Q(), 2)
	g.Steps = family.CeilDiv(s.N*g.TilesP*g.TilesQ, c.TileT)
	g.PairsPerThread = family.CeilDiv(c.TileT*c.Chunk, max(g.ThreadsPerBlock, 1))
	g.VPitch = winogradVPitch(c.TileT, s.StrideW, g.ThreadsPerBlock)
	// The two stage buffers, grown where needed to hold an epilogue round
	// of 4 register-tile rows ([16][rows][TG][TileK+1] floats); the round
	// takes as many rows as fit.
	epiRow := 16 * tg * (c.TileK + 1)
	region := max(2*16*c.Chunk*g.VPitch, 4*epiRow)
	for e := c.ThreadT; e >= 4; e -= 4 {
		if c.ThreadT%e == 0 && e*epiRow <= region {
			g.EpiTiles = e
			break
		}
	}
	ch := s.C * s.StrideH * s.StrideW
	g.SharedBytes = 4 * (16*ch*c.TileK + region)
	g.Grid = (s.K / c.TileK) * family.CeilDiv(g.Steps, max(c.StepsPerBlock, 1))
	g.Registers = c.ThreadT*c.ThreadK + c.ThreadT + c.ThreadK + 16*g.PairsPerThread + 24
	return g
}

// winogradVPitch is the row length of the transformed input in shared
// memory: the smallest multiple of 4 floats (16-byte rows for the GEMMs'
// float4 reads) from tileT up whose stores, one warp's (tile, phase
// column) pairs at a time, hit each bank at most the fewest times.
func winogradVPitch(tileT, strideW, threads int) int {
	best, bestWays := tileT, 1<<30
	for pitch := tileT; pitch <= tileT+32; pitch += 4 {
		ways := 0
		for warp := 0; warp*32 < min(threads, tileT*strideW*4); warp++ {
			var banks [32]int
			for lane := 0; lane < 32; lane++ {
				pair := warp*32 + lane
				t, col := pair/strideW%tileT, pair/(strideW*tileT)*strideW+pair%strideW
				banks[(col*pitch+t)%32]++
			}
			for _, n := range banks {
				ways = max(ways, n)
			}
		}
		if ways < bestWays {
			best, bestWays = pitch, ways
		}
	}
	return best
}

// Space implements family.Family.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	s := p.Shape
	ch := s.C * s.StrideH * s.StrideW
	chunks := winogradChunks(ch, s.StrideW)
	var out []family.Candidate
	for _, tt := range winogradTileT {
		for _, tk := range family.ChannelTiles(s.K, winogradTileK, 4) {
			for _, xt := range winogradThreadT {
				for _, xk := range winogradThreadK {
					for _, chunk := range chunks {
						k := winogradKnobs{TileT: tt, TileK: tk, ThreadT: xt, ThreadK: xk, Chunk: chunk}
						// One block per SM walks ceil(steps / blocks) steps;
						// two per SM walk half as many each.
						blocks := max(lim.SMs/(s.K/tk), 1)
						one := family.CeilDiv(winogradGeom(s, k).Steps, blocks)
						for perSM := 1; perSM <= 2; perSM++ {
							if perSM == 2 && one < 2 {
								break // a step per block already: no smaller grid
							}
							k.StepsPerBlock = family.CeilDiv(one, perSM)
							out = append(out, family.NewCandidate(f.Name(), k, f.reject(s, k, lim, perSM)))
						}
					}
				}
			}
		}
	}
	return out
}

// winogradChunks lists the stage sizes: the divisors of the CH phase
// channels that hold whole phase columns (multiples of strideW), from 4 to
// 32 channels, or CH itself when it is smaller.
func winogradChunks(ch, strideW int) []int {
	if ch < 4 {
		return []int{ch}
	}
	var out []int
	for d := 4; d <= 32; d++ {
		if ch%d == 0 && d%strideW == 0 {
			out = append(out, d)
		}
	}
	return out
}

// reject returns why a configuration is not worth compiling, or the zero
// Rejection.
func (Family) reject(s problem.Shape, c winogradKnobs, lim family.Limits, perSM int) family.Rejection {
	g := winogradGeom(s, c)
	regCap := min(lim.MaxRegsPerThread, lim.RegistersPerSM/max(g.ThreadsPerBlock*perSM, 1)/8*8)
	wino, direct := 16*s.C*s.StrideH*s.StrideW, 4*s.C*s.R*s.S
	switch {
	case wino >= direct:
		return family.Hard("arithmetic", "%d multiplies per 2x2 tile and channel, the direct convolution's %d or fewer", wino, direct)
	case c.TileT%c.ThreadT != 0 || c.TileK%c.ThreadK != 0 || c.ThreadT%4 != 0 || c.ThreadK%4 != 0:
		return family.Hard("divisibility", "register tile %dx%d does not split the %dx%d block tile in float4 groups",
			c.ThreadT, c.ThreadK, c.TileT, c.TileK)
	case g.ThreadsPerBlock > lim.MaxThreadsPerBlock:
		return family.Hard("threads", "%d per block > %d", g.ThreadsPerBlock, lim.MaxThreadsPerBlock)
	case g.ThreadsPerBlock < 128:
		return family.Soft("warps", "%d threads per block leave the SM too few warps", g.ThreadsPerBlock)
	case g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
	case perSM > 1 && perSM*(g.SharedBytes+1024) > lim.MaxSharedPerBlock+1024:
		return family.Hard("shared memory", "%d blocks of %d B do not fit one SM", perSM, g.SharedBytes)
	case g.Registers > regCap:
		return family.Hard("registers", "about %d per thread > %d for %d blocks of %d threads per SM",
			g.Registers, regCap, perSM, g.ThreadsPerBlock)
	case c.ThreadT*c.ThreadK < 32:
		return family.Hard("register tile", "%d accumulators per thread < 32 leaves the GEMMs bound by shared-memory reads",
			c.ThreadT*c.ThreadK)
	}
	return family.Rejection{}
}

// ExecutedFLOPs implements ExecutedFLOPs: 16 transform points × CH phase
// channels multiply-adds per 2×2 output tile and output channel (tiles past
// the image edge excluded).
func (Family) ExecutedFLOPs(p problem.Problem, cfg family.Config) float64 {
	s := p.Shape
	tiles := float64(s.N) * float64(family.CeilDiv(s.P(), 2)) * float64(family.CeilDiv(s.Q(), 2))
	return 2 * 16 * float64(s.C*s.StrideH*s.StrideW) * tiles * float64(s.K)
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	if err := f.Serves(p); err != nil {
		return family.Kernel{}, err
	}
	k, err := family.ParseKnobs[winogradKnobs](f.Name(), cfg)
	if err != nil {
		return family.Kernel{}, err
	}
	s := p.Shape
	if k.ThreadT <= 0 || k.ThreadK <= 0 || k.TileT%k.ThreadT != 0 || k.TileK <= 0 || k.TileK%k.ThreadK != 0 || s.K%k.TileK != 0 ||
		k.Chunk <= 0 || (s.C*s.StrideH*s.StrideW)%k.Chunk != 0 || k.StepsPerBlock <= 0 {
		return family.Kernel{}, fmt.Errorf("%s: config %s does not tile the problem", f.Name(), cfg)
	}
	cfg = family.KnobsConfig(k)
	g := winogradGeom(s, k)
	if g.EpiTiles == 0 {
		return family.Kernel{}, fmt.Errorf("%s: config %s: ThreadT must be a multiple of 4", f.Name(), cfg)
	}
	name := "convgen_winograd_" + family.KernelSuffix(cfg)
	data := struct {
		family.ShapeData
		winogradGeometry
		winogradKnobs
		Name, Config string
	}{family.NewShapeData(p), g, k, name, cfg.String()}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src,
		Launch: family.Launch{Grid: [3]int{g.Grid, 1, 1}, Block: [3]int{g.ThreadsPerBlock, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}

// SupportsEpilogue implements family.EpilogueSupport: the template applies
// every chain at its store (family.Epilogue).
func (Family) SupportsEpilogue(epilogue.Chain) error { return nil }
