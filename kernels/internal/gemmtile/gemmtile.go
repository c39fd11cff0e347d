// Package gemmtile holds what the mma.sync implicit-GEMM families (mma,
// mmahalf) share: their tile knobs, search space and static rules.
package gemmtile

import (
	"fmt"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// Knobs are the knobs the mma.sync implicit-GEMM families share: the
// block tile (TileP × TileQ output pixels, TileK channels), the warp tile
// (WarpM pixels × WarpN channels) and the tiles a block walks.
type Knobs struct {
	TileP, TileQ, TileK, WarpM, WarpN, TilesPerBlock int
}

// Check refuses tiles the kernels cannot split: warp tiles of whole m16n8
// fragments that divide a block tile whose channels divide k.
func (c Knobs) Check(k int) error {
	if c.TileP < 1 || c.TileQ < 1 || c.TileK < 1 || c.WarpM < 16 || c.WarpN < 8 || c.TilesPerBlock < 1 ||
		c.WarpM%16 != 0 || c.WarpN%8 != 0 || c.TileP*c.TileQ%c.WarpM != 0 || c.TileK%c.WarpN != 0 || k%c.TileK != 0 {
		return fmt.Errorf("want positive tiles, WarpM a multiple of 16 dividing TileP*TileQ, WarpN a multiple of 8 dividing TileK, TileK dividing K")
	}
	return nil
}

// Space is the knob values the search space of an mma.sync family
// takes.
type Space struct {
	TileP, TileQ, TileK, WarpM, WarpN, TilesPerBlock []int
}

// Configs lists the knob combinations for shape s: channel tiles that divide
// K (or a fallback), warp tiles that divide the block tile exactly.
func (k Space) Configs(s problem.Shape) []Knobs {
	var out []Knobs
	for _, tp := range k.TileP {
		for _, tq := range k.TileQ {
			for _, tk := range family.ChannelTiles(s.K, k.TileK, 8) {
				for _, wm := range k.WarpM {
					if tp*tq%wm != 0 {
						continue // warps tile the block's pixels exactly
					}
					for _, wn := range family.ChannelTiles(tk, k.WarpN, 8) {
						for _, tpb := range k.TilesPerBlock {
							out = append(out, Knobs{TileP: tp, TileQ: tq, TileK: tk, WarpM: wm, WarpN: wn, TilesPerBlock: tpb})
						}
					}
				}
			}
		}
	}
	return out
}

// Tile is the part of a tensor-core configuration's geometry that the
// static rules look at.
type Tile struct {
	Threads, TilesP, TilesQ, GridTiles, Accumulators int
}

func NewTile(s problem.Shape, c Knobs) Tile {
	var t Tile
	t.Threads = 32 * (c.TileP * c.TileQ / c.WarpM) * (c.TileK / c.WarpN)
	t.TilesP, t.TilesQ = family.CeilDiv(s.P(), c.TileP), family.CeilDiv(s.Q(), c.TileQ)
	t.GridTiles = family.CeilDiv(s.N*t.TilesP*t.TilesQ, c.TilesPerBlock)
	t.Accumulators = (c.WarpM / 16) * (c.WarpN / 8) * 4
	return t
}

// Reject applies the static rules the tensor-core families share;
// accumulators per thread must lie in [minAcc, maxAcc] (minAcc 0: no lower
// bound).
func Reject(s problem.Shape, c Knobs, t Tile, sharedBytes int, lim family.Limits, minAcc, maxAcc int) family.Rejection {
	computed := float64(t.TilesP*c.TileP) * float64(t.TilesQ*c.TileQ)
	waste := 1 - float64(s.P()*s.Q())/computed
	maxThreads := min(512, lim.MaxThreadsPerBlock)
	switch {
	case lim.Arch > 0 && lim.Arch < 80:
		return family.Hard("arch", "mma.sync with TF32, BF16 or m16n8k16 FP16 operands and cp.async need sm_80 or newer, not sm_%d", lim.Arch)
	case t.Threads > maxThreads:
		return family.Hard("threads", "%d per block > %d", t.Threads, maxThreads)
	case t.Accumulators > maxAcc:
		return family.Hard("registers", "%d accumulators per thread > %d", t.Accumulators, maxAcc)
	case t.Accumulators < minAcc:
		return family.Hard("register tile", "%d accumulators per thread < %d", t.Accumulators, minAcc)
	case sharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block > %d", sharedBytes, lim.MaxSharedPerBlock)
	// Soft rules last: family.AdmitSoft may lift them, so a hard reason must win.
	case t.Threads < 64:
		return family.Soft("warps", "%d threads per block < 64", t.Threads)
	case waste > 0.20:
		return family.Soft("waste", "%.0f%% of computed outputs fall outside the %dx%d output", 100*waste, s.P(), s.Q())
	case c.TileP > 1 && t.TilesP*c.TileP-s.P() >= c.TileP:
		return family.Soft("waste", "TileP=%d leaves a whole empty tile row for P=%d", c.TileP, s.P())
	case c.TilesPerBlock > 1 && t.GridTiles*(s.K/c.TileK) < lim.SMs:
		return family.Soft("occupancy", "%d blocks cannot fill %d SMs", t.GridTiles*(s.K/c.TileK), lim.SMs)
	}
	return family.Rejection{}
}
