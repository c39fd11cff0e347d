package kernels

import (
	"fmt"
	"slices"
	"strings"

	"github.com/convgen/convgen/problem"
)

// This file holds what the two Hopper families (wgmma and wgmmahalf) share:
// their tile walk, their resource and soft rejection rules and the operand
// lists of their wgmma instructions.

// hopperTile is the tile knobs of both Hopper families: TileP x TileQ
// output pixels per warpgroup tile, TileK output channels per block (the
// wgmma's N).
type hopperTile struct {
	TileP, TileQ, TileK int
}

// wgmmaTilesPerWarpgroup lists the TilesPerWarpgroup values to try for a
// tile of tp x tq pixels and tk channels with wg computing warpgroups:
// the fixed counts given, and the one that makes one wave of one block per
// SM.
func wgmmaTilesPerWarpgroup(p problem.Problem, lim Limits, fixed []int, tp, tq, tk, wg int) []int {
	tiles := p.Shape.N * ceilDiv(p.Shape.P(), tp) * ceilDiv(p.Shape.Q(), tq)
	tpws := append([]int(nil), fixed...)
	if one := ceilDiv(tiles*(p.Shape.K/tk), wg*max(lim.SMs, 1)); !slices.Contains(tpws, one) {
		tpws = append(tpws, one)
	}
	return tpws
}

// wgmmaResourceReject checks the wgmma's N and a block's threads and
// registers; it returns the reason for rejecting, or "".
func wgmmaResourceReject(tileK, threads, accumulators int, lim Limits) Rejection {
	share := lim.RegistersPerSM / threads / 8 * 8
	switch {
	case tileK > 256:
		return hard("shape", "wgmma's N is at most 256, not TileK=%d", tileK)
	case threads > lim.MaxThreadsPerBlock:
		return hard("threads", "%d per block > %d", threads, lim.MaxThreadsPerBlock)
	case accumulators > 128:
		return hard("registers", "%d accumulators per thread > 128", accumulators)
	case accumulators+wgmmaSpareRegs > share:
		return hard("registers", "%d accumulators + %d per thread exceed the %d that %d threads leave each",
			accumulators, wgmmaSpareRegs, share, threads)
	}
	return Rejection{}
}

// wgmmaSoftReject applies the soft rules (admitSoft may lift them): too
// many computed outputs outside the image, or too few blocks for the SMs.
func wgmmaSoftReject(s problem.Shape, c hopperTile, tilesP, tilesQ, gridTiles int, lim Limits) Rejection {
	computed := float64(tilesP*c.TileP) * float64(tilesQ*c.TileQ)
	waste := 1 - float64(s.P()*s.Q())/computed
	switch {
	case waste > 0.20:
		return soft("waste", "%.0f%% of computed outputs fall outside the %dx%d output", 100*waste, s.P(), s.Q())
	case gridTiles*(s.K/c.TileK)*20 < 19*lim.SMs:
		return soft("occupancy", "%d blocks leave more than 5%% of %d SMs idle", gridTiles*(s.K/c.TileK), lim.SMs)
	}
	return Rejection{}
}

// wgmmaAccOperands returns the inline-assembly operand list of acc FP32
// accumulators ("{%0, %1, ...}") and their read-write constraints.
func wgmmaAccOperands(acc int) (operands, constraints string) {
	regs := make([]string, acc)
	cons := make([]string, acc)
	for i := range acc {
		regs[i] = fmt.Sprintf("%%%d", i)
		cons[i] = fmt.Sprintf(`"+f"(d[%d])`, i)
	}
	return "{" + strings.Join(regs, ", ") + "}", strings.Join(cons, ", ")
}

// wgmmaTileCheck checks a Hopper configuration's tile knobs before any
// geometry is derived from them: TileP and TileQ whole m64 sub-tiles (8 x 8
// pixels), TileK a wgmma N (a multiple of 8 up to 256) that divides K.
func wgmmaTileCheck(family string, cfg Config, c hopperTile, k int) error {
	tp, tq, tk := c.TileP, c.TileQ, c.TileK
	if tp < 8 || tq < 8 || tp%8 != 0 || tq%8 != 0 || tk < 8 || tk%8 != 0 || tk > 256 || k%tk != 0 {
		return fmt.Errorf("%s: config %s: TileP and TileQ must be multiples of 8, TileK a multiple of 8 up to 256 dividing K", family, cfg)
	}
	return nil
}
