package kernels

import (
	"fmt"

	"github.com/convgen/convgen/problem"
)

// MMAHalf is the half-precision tensor-core implicit-GEMM family
// (templates/mmahalf.cu.tmpl): mma.sync m16n8k16 with FP16 or BF16 operands
// and FP32 accumulators; input, filter, bias and output are 2-byte.
//
// Knobs: TileP, TileQ (output pixels per block tile), TileK (channels per
// block), WarpM, WarpN (pixels and channels per warp), TilesPerBlock (tiles a
// block walks with the filter slice kept in shared memory).
type MMAHalf struct{}

// Name implements Family.
func (MMAHalf) Name() string { return "mmahalf" }

// Template implements Family.
func (MMAHalf) Template() string { return "mmahalf.cu.tmpl" }

// Serves implements Family.
func (MMAHalf) Serves(p problem.Problem) error {
	if err := p.Shape.Supported(); err != nil {
		return err
	}
	if p.Precision != problem.FP16 && p.Precision != problem.BF16 {
		return fmt.Errorf("mmahalf serves fp16 and bf16, not %s", p.Precision)
	}
	if p.Shape.K%8 != 0 {
		return fmt.Errorf("mmahalf needs K divisible by 8, not %d", p.Shape.K)
	}
	return nil
}

var (
	halfTileP         = []int{4, 8}
	halfTileQ         = []int{8, 16, 28, 32}
	halfTileK         = []int{48, 96}
	halfWarpM         = []int{32, 64}
	halfWarpN         = []int{32, 48}
	halfTilesPerBlock = []int{8}
)

type halfGeometry struct {
	ThreadsPerBlock, R4, S4, JP, TilesP, TilesQ, PatchRows, PatchCols, PatchPitch int
	FilterPitch, GridTiles, SharedBytes, Accumulators, PairsAligned               int
}

func halfGeom(p problem.Problem, c Config) halfGeometry {
	s := p.Shape
	var g halfGeometry
	bm := c["TileP"] * c["TileQ"]
	g.ThreadsPerBlock = 32 * (bm / c["WarpM"]) * (c["TileK"] / c["WarpN"])
	g.R4, g.S4 = roundUp(s.R, 4), roundUp(s.S, 4)
	g.JP = s.C * g.R4 * g.S4
	g.TilesP, g.TilesQ = ceilDiv(s.P(), c["TileP"]), ceilDiv(s.Q(), c["TileQ"])
	g.PatchRows = (c["TileP"]-1)*s.StrideH + (g.R4-1)*s.DilationH + 1
	g.PatchCols = (c["TileQ"]-1)*s.StrideW + (g.S4-1)*s.DilationW + 1
	// Pitch ≡ 32 mod 64 halves: the lanes' fragment words (pixel g, row
	// t/2) land in 32 distinct banks; ≡ 8 mod 16 for the filter rows.
	g.PatchPitch = g.PatchCols + ((32-g.PatchCols%64)+64)%64
	g.FilterPitch = g.JP + ((8-g.JP%16)+16)%16
	if s.StrideW%2 == 0 && s.DilationW == 1 {
		g.PairsAligned = 1
	}
	g.GridTiles = ceilDiv(s.N*g.TilesP*g.TilesQ, c["TilesPerBlock"])
	g.SharedBytes = 2 * (c["TileK"]*g.FilterPitch + s.C*g.PatchRows*g.PatchPitch)
	g.Accumulators = (c["WarpM"] / 16) * (c["WarpN"] / 8) * 4
	return g
}

// Space implements Family.
func (f MMAHalf) Space(p problem.Problem, lim Limits) []Candidate {
	s := p.Shape
	var out []Candidate
	for _, tp := range halfTileP {
		for _, tq := range halfTileQ {
			for _, tk := range channelTiles(s.K, halfTileK, 8) {
				for _, wm := range halfWarpM {
					if tp*tq%wm != 0 {
						continue // warps tile the block's pixels exactly
					}
					for _, wn := range channelTiles(tk, halfWarpN, 8) {
						for _, tpb := range halfTilesPerBlock {
							cfg := Config{"TileP": tp, "TileQ": tq, "TileK": tk, "WarpM": wm, "WarpN": wn, "TilesPerBlock": tpb}
							out = append(out, Candidate{Family: f.Name(), Config: cfg, Rejected: f.reject(p, cfg, lim)})
						}
					}
				}
			}
		}
	}
	return out
}

func (MMAHalf) reject(p problem.Problem, c Config, lim Limits) string {
	s := p.Shape
	g := halfGeom(p, c)
	computed := float64(g.TilesP*c["TileP"]) * float64(g.TilesQ*c["TileQ"])
	waste := 1 - float64(s.P()*s.Q())/computed
	switch {
	case g.ThreadsPerBlock > min(512, lim.MaxThreadsPerBlock):
		return fmt.Sprintf("threads: %d per block > %d", g.ThreadsPerBlock, min(512, lim.MaxThreadsPerBlock))
	case g.ThreadsPerBlock < 64:
		return fmt.Sprintf("warps: %d threads per block < 64", g.ThreadsPerBlock)
	case g.Accumulators > 128:
		return fmt.Sprintf("registers: %d accumulators per thread > 128", g.Accumulators)
	case g.SharedBytes > lim.MaxSharedPerBlock:
		return fmt.Sprintf("shared memory: %d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
	case waste > 0.20:
		return fmt.Sprintf("waste: %.0f%% of computed outputs fall outside the %dx%d output", 100*waste, s.P(), s.Q())
	case c["TileP"] > 1 && g.TilesP*c["TileP"]-s.P() >= c["TileP"]:
		return fmt.Sprintf("waste: TileP=%d leaves a whole empty tile row for P=%d", c["TileP"], s.P())
	case c["TilesPerBlock"] > 1 && g.GridTiles*(s.K/c["TileK"]) < 132:
		return fmt.Sprintf("occupancy: %d blocks cannot fill 132 SMs", g.GridTiles*(s.K/c["TileK"]))
	}
	return ""
}

// Render implements Family.
func (f MMAHalf) Render(p problem.Problem, cfg Config) (Kernel, error) {
	if err := f.Serves(p); err != nil {
		return Kernel{}, err
	}
	for _, k := range []string{"TileP", "TileQ", "TileK", "WarpM", "WarpN", "TilesPerBlock"} {
		if _, ok := cfg[k]; !ok {
			return Kernel{}, fmt.Errorf("mmahalf: config %s lacks knob %s", cfg, k)
		}
	}
	g := halfGeom(p, cfg)
	elem, doc := "FP16", "FP16 operands and output, FP32 accumulation"
	if p.Precision == problem.BF16 {
		elem, doc = "BF16", "BF16 operands and output, FP32 accumulation"
	}
	name := fmt.Sprintf("convgen_mmahalf_%s_%s", p.Precision, kernelSuffix(cfg))
	data := struct {
		shapeData
		halfGeometry
		Name, Config, PrecisionDoc, FilterLayout, Elem   string
		TileP, TileQ, TileK, WarpM, WarpN, TilesPerBlock int
	}{newShapeData(p), g, name, cfg.String(), doc, p.Layout.FilterLayout(), elem,
		cfg["TileP"], cfg["TileQ"], cfg["TileK"], cfg["WarpM"], cfg["WarpN"], cfg["TilesPerBlock"]}
	src, err := render(f.Template(), data)
	if err != nil {
		return Kernel{}, err
	}
	return Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src,
		Grid: [3]int{g.GridTiles, p.Shape.K / cfg["TileK"], 1}, Block: [3]int{g.ThreadsPerBlock, 1, 1}, SharedBytes: g.SharedBytes}, nil
}
