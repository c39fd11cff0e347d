// Package hopper holds what the Hopper wgmma families (wgmma, wgmmahalf,
// wgmmarow) share: their tile knobs and walk, their resource and soft
// rejection rules and the operand lists of their wgmma instructions.
package hopper

import (
	"fmt"
	"slices"
	"strings"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// Tile is the tile knobs of both Hopper families: TileP x TileQ
// output pixels per warpgroup tile, TileK output channels per block (the
// wgmma's N).
type Tile struct {
	TileP, TileQ, TileK int
}

// TilesPerWarpgroup lists the TilesPerWarpgroup values to try for a
// tile of tp x tq pixels and tk channels with wg computing warpgroups:
// the fixed counts given, and the one that makes one wave of one block per
// SM.
func TilesPerWarpgroup(p problem.Problem, lim family.Limits, fixed []int, tp, tq, tk, wg int) []int {
	tiles := p.Shape.N * family.CeilDiv(p.Shape.P(), tp) * family.CeilDiv(p.Shape.Q(), tq)
	tpws := append([]int(nil), fixed...)
	if one := family.CeilDiv(tiles*(p.Shape.K/tk), wg*max(lim.SMs, 1)); !slices.Contains(tpws, one) {
		tpws = append(tpws, one)
	}
	return tpws
}

// ResourceReject checks the wgmma's N and a block's threads and
// registers; it returns the reason for rejecting, or "".
func ResourceReject(tileK, threads, accumulators int, lim family.Limits) family.Rejection {
	share := lim.RegistersPerSM / threads / 8 * 8
	switch {
	case tileK > 256:
		return family.Hard("shape", "wgmma's N is at most 256, not TileK=%d", tileK)
	case threads > lim.MaxThreadsPerBlock:
		return family.Hard("threads", "%d per block > %d", threads, lim.MaxThreadsPerBlock)
	case accumulators > 128:
		return family.Hard("registers", "%d accumulators per thread > 128", accumulators)
	case accumulators+SpareRegs > share:
		return family.Hard("registers", "%d accumulators + %d per thread exceed the %d that %d threads leave each",
			accumulators, SpareRegs, share, threads)
	}
	return family.Rejection{}
}

// SoftReject applies the soft rules (family.AdmitSoft may lift them): too
// many computed outputs outside the image, or too few blocks for the SMs.
func SoftReject(s problem.Shape, c Tile, tilesP, tilesQ, gridTiles int, lim family.Limits) family.Rejection {
	computed := float64(tilesP*c.TileP) * float64(tilesQ*c.TileQ)
	waste := 1 - float64(s.P()*s.Q())/computed
	switch {
	case waste > 0.20:
		return family.Soft("waste", "%.0f%% of computed outputs fall outside the %dx%d output", 100*waste, s.P(), s.Q())
	case gridTiles*(s.K/c.TileK)*20 < 19*lim.SMs:
		return family.Soft("occupancy", "%d blocks leave more than 5%% of %d SMs idle", gridTiles*(s.K/c.TileK), lim.SMs)
	}
	return family.Rejection{}
}

// AccOperands returns the inline-assembly operand list of acc FP32
// accumulators ("{%0, %1, ...}") and their read-write constraints.
func AccOperands(acc int) (operands, constraints string) {
	regs := make([]string, acc)
	cons := make([]string, acc)
	for i := range acc {
		regs[i] = fmt.Sprintf("%%%d", i)
		cons[i] = fmt.Sprintf(`"+f"(d[%d])`, i)
	}
	return "{" + strings.Join(regs, ", ") + "}", strings.Join(cons, ", ")
}

// TileCheck checks a Hopper configuration's tile knobs before any
// geometry is derived from them: TileP and TileQ whole m64 sub-tiles (8 x 8
// pixels), TileK a wgmma N (a multiple of 8 up to 256) that divides K.
func TileCheck(family string, cfg family.Config, c Tile, k int) error {
	tp, tq, tk := c.TileP, c.TileQ, c.TileK
	if tp < 8 || tq < 8 || tp%8 != 0 || tq%8 != 0 || tk < 8 || tk%8 != 0 || tk > 256 || k%tk != 0 {
		return fmt.Errorf("%s: config %s: TileP and TileQ must be multiples of 8, TileK a multiple of 8 up to 256 dividing K", family, cfg)
	}
	return nil
}

// SpareRegs is what a computing thread needs besides its accumulators
// (descriptors, addresses, bias): ptxas refuses a wgmma m64n96k8 with 72
// registers per thread ("insufficient registers", it asks for 74), compiles
// it with 80.
const SpareRegs = 32
