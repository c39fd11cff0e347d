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
	if err := oneGroup("mmahalf", p.Shape); err != nil {
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

// halfSpace is the values the search space takes; the knobs are
// gemmKnobs.
var halfSpace = gemmSpace{TileP: []int{4, 8}, TileQ: []int{8, 16, 28, 32}, TileK: []int{48, 96},
	WarpM: []int{32, 64}, WarpN: []int{32, 48}, TilesPerBlock: []int{8}}

type halfGeometry struct {
	ThreadsPerBlock, R4, S4, JP, TilesP, TilesQ, PatchRows, PatchCols, PatchPitch int
	FilterPitch, GridTiles, SharedBytes, Accumulators, PairsAligned               int
}

func halfGeom(p problem.Problem, c gemmKnobs) halfGeometry {
	s := p.Shape
	var g halfGeometry
	t := newGemmTile(s, c)
	g.ThreadsPerBlock, g.TilesP, g.TilesQ, g.GridTiles, g.Accumulators = t.Threads, t.TilesP, t.TilesQ, t.GridTiles, t.Accumulators
	g.R4, g.S4 = roundUp(s.R, 4), roundUp(s.S, 4)
	g.JP = s.C * g.R4 * g.S4
	g.PatchRows = (c.TileP-1)*s.StrideH + (g.R4-1)*s.DilationH + 1
	g.PatchCols = (c.TileQ-1)*s.StrideW + (g.S4-1)*s.DilationW + 1
	// Pitch ≡ 32 mod 64 halves: the lanes' fragment words (pixel g, row
	// t/2) land in 32 distinct banks; ≡ 8 mod 16 for the filter rows.
	g.PatchPitch = g.PatchCols + ((32-g.PatchCols%64)+64)%64
	g.FilterPitch = g.JP + ((8-g.JP%16)+16)%16
	if s.StrideW%2 == 0 && s.DilationW == 1 {
		g.PairsAligned = 1
	}
	g.SharedBytes = 2 * (c.TileK*g.FilterPitch + s.C*g.PatchRows*g.PatchPitch)
	return g
}

// Space implements Family.
func (f MMAHalf) Space(p problem.Problem, lim Limits) []Candidate {
	var out []Candidate
	for _, k := range halfSpace.configs(p.Shape) {
		out = append(out, newCandidate(f.Name(), k, f.reject(p, k, lim)))
	}
	return out
}

func (MMAHalf) reject(p problem.Problem, c gemmKnobs, lim Limits) Rejection {
	return gemmReject(p.Shape, c, newGemmTile(p.Shape, c), halfGeom(p, c).SharedBytes, lim, 0, 128)
}

// Render implements Family.
func (f MMAHalf) Render(p problem.Problem, cfg Config) (Kernel, error) {
	if err := f.Serves(p); err != nil {
		return Kernel{}, err
	}
	k, err := parseKnobs[gemmKnobs](f.Name(), cfg)
	if err != nil {
		return Kernel{}, err
	}
	if err := k.check(p.Shape.K); err != nil {
		return Kernel{}, fmt.Errorf("%s: config %s: %w", f.Name(), cfg, err)
	}
	cfg = knobsConfig(k)
	g := halfGeom(p, k)
	elem, doc := "FP16", "FP16 operands and output, FP32 accumulation"
	if p.Precision == problem.BF16 {
		elem, doc = "BF16", "BF16 operands and output, FP32 accumulation"
	}
	name := fmt.Sprintf("convgen_mmahalf_%s_%s", p.Precision, kernelSuffix(cfg))
	data := struct {
		shapeData
		halfGeometry
		gemmKnobs
		Name, Config, PrecisionDoc, FilterLayout, Elem string
	}{newShapeData(p), g, k, name, cfg.String(), doc, p.Layout.FilterLayout(), elem}
	src, err := render(f.Template(), data)
	if err != nil {
		return Kernel{}, err
	}
	return Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src,
		Launch: Launch{Grid: [3]int{g.GridTiles, p.Shape.K / k.TileK, 1}, Block: [3]int{g.ThreadsPerBlock, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}
