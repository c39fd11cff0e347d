// Package mmahalf is the mma.sync FP16 and BF16 implicit-GEMM kernel family:
// its knobs, search space, static rules and template (mmahalf.cu.tmpl),
// rendered through package kernels/family.
package mmahalf

import (
	"embed"
	"fmt"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/gemmtile"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed mmahalf.cu.tmpl
var templateFS embed.FS

// Family is the half-precision tensor-core implicit-GEMM family
// (mmahalf.cu.tmpl): mma.sync m16n8k16 with FP16 or BF16 operands
// and FP32 accumulators; input, filter, bias and output are 2-byte.
//
// Knobs: TileP, TileQ (output pixels per block tile), TileK (channels per
// block), WarpM, WarpN (pixels and channels per warp), TilesPerBlock (tiles a
// block walks with the filter slice kept in shared memory).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "mmahalf" }

// Template implements family.Family.
func (Family) Template() string { return "mmahalf.cu.tmpl" }

// Serves implements family.Family.
func (Family) Serves(p problem.Problem) error {
	if err := family.Forward("mmahalf", p); err != nil {
		return err
	}
	if err := family.OneGroup("mmahalf", p.Shape); err != nil {
		return err
	}
	if err := family.Index32("mmahalf", p.Shape); err != nil {
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
// gemmtile.Knobs.
var halfSpace = gemmtile.Space{TileP: []int{4, 8}, TileQ: []int{8, 16, 28, 32}, TileK: []int{48, 96},
	WarpM: []int{32, 64}, WarpN: []int{32, 48}, TilesPerBlock: []int{8}}

type halfGeometry struct {
	ThreadsPerBlock, R4, S4, JP, TilesP, TilesQ, PatchRows, PatchCols, PatchPitch int
	FilterPitch, GridTiles, SharedBytes, Accumulators, PairsAligned               int
}

func halfGeom(p problem.Problem, c gemmtile.Knobs) halfGeometry {
	s := p.Shape
	var g halfGeometry
	t := gemmtile.NewTile(s, c)
	g.ThreadsPerBlock, g.TilesP, g.TilesQ, g.GridTiles, g.Accumulators = t.Threads, t.TilesP, t.TilesQ, t.GridTiles, t.Accumulators
	g.R4, g.S4 = family.RoundUp(s.R, 4), family.RoundUp(s.S, 4)
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

// Space implements family.Family.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	var out []family.Candidate
	for _, k := range halfSpace.Configs(p.Shape) {
		out = append(out, family.NewCandidate(f.Name(), k, f.reject(p, k, lim)))
	}
	return out
}

func (Family) reject(p problem.Problem, c gemmtile.Knobs, lim family.Limits) family.Rejection {
	return gemmtile.Reject(p.Shape, c, gemmtile.NewTile(p.Shape, c), halfGeom(p, c).SharedBytes, lim, 0, 128)
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	if err := f.Serves(p); err != nil {
		return family.Kernel{}, err
	}
	k, err := family.ParseKnobs[gemmtile.Knobs](f.Name(), cfg)
	if err != nil {
		return family.Kernel{}, err
	}
	if err := k.Check(p.Shape.K); err != nil {
		return family.Kernel{}, fmt.Errorf("%s: config %s: %w", f.Name(), cfg, err)
	}
	cfg = family.KnobsConfig(k)
	g := halfGeom(p, k)
	elem, doc := "FP16", "FP16 operands and output, FP32 accumulation"
	if p.Precision == problem.BF16 {
		elem, doc = "BF16", "BF16 operands and output, FP32 accumulation"
	}
	name := fmt.Sprintf("convgen_mmahalf_%s_%s", p.Precision, family.KernelSuffix(cfg))
	data := struct {
		family.ShapeData
		halfGeometry
		gemmtile.Knobs
		Name, Config, PrecisionDoc, FilterLayout, Elem string
	}{family.NewShapeData(p), g, k, name, cfg.String(), doc, p.Layout.FilterLayout(), elem}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src,
		Launch: family.Launch{Grid: [3]int{g.GridTiles, p.Shape.K / k.TileK, 1}, Block: [3]int{g.ThreadsPerBlock, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}

// SupportsEpilogue implements family.EpilogueSupport: the template applies
// every chain at its store (family.Epilogue).
func (Family) SupportsEpilogue(epilogue.Chain) error { return nil }
