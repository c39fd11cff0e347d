// Package mma is the mma.sync TF32 and 3xTF32 implicit-GEMM kernel family:
// its knobs, search space, static rules and template (mma.cu.tmpl), rendered
// through package kernels/family.
package mma

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
//go:embed mma.cu.tmpl
var templateFS embed.FS

// Family is the tensor-core implicit-GEMM family (mma.cu.tmpl):
// mma.sync m16n8k8 with TF32 operands and FP32 accumulators, in one pass
// (tf32) or three (3xtf32: each operand split into a TF32 high part and a
// TF32 residual, for FP32 accuracy).
//
// Knobs:
//   - TileP, TileQ: output rows and columns per block tile (BM = TileP*TileQ pixels);
//   - TileK: output channels per block;
//   - WarpM, WarpN: pixels and channels per warp (multiples of 16 and 8);
//   - TilesPerBlock: tiles a block walks with the filter kept in shared
//     memory;
//   - Stages: input-patch buffers (2: the next tile's patch is prefetched
//     with cp.async while this one is computed).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "mma" }

// Template implements family.Family.
func (Family) Template() string { return "mma.cu.tmpl" }

// Serves implements family.Family.
func (Family) Serves(p problem.Problem) error {
	if err := family.Forward("mma", p); err != nil {
		return err
	}
	if err := family.OneGroup("mma", p.Shape); err != nil {
		return err
	}
	if err := family.Index32("mma", p.Shape); err != nil {
		return err
	}
	if p.Precision != problem.TF32 && p.Precision != problem.TF32x3 {
		return fmt.Errorf("mma serves tf32 and 3xtf32, not %s", p.Precision)
	}
	if p.Shape.K%8 != 0 {
		return fmt.Errorf("mma needs K divisible by 8, not %d", p.Shape.K)
	}
	return nil
}

// mmaKnobs are an mma configuration's knobs (see Family).
type mmaKnobs struct {
	gemmtile.Knobs
	Stages int
}

// mmaSpace is the values the search space takes.
var mmaSpace = gemmtile.Space{TileP: []int{4, 8}, TileQ: []int{8, 16, 28, 32}, TileK: []int{48, 96, 128},
	WarpM: []int{32, 64}, WarpN: []int{32, 48}, TilesPerBlock: []int{8}}

type mmaGeometry struct {
	ThreadsPerBlock, S4, JP, TilesP, TilesQ, PatchRows, PatchCols, PatchPitch int
	FilterPitch, GridTiles, SharedBytes, Accumulators                         int
	LDMatrix                                                                  int // 1: fragments loaded with ldmatrix
	PairStage                                                                 int // 1: the patch is staged 8 bytes at a time
}

func mmaGeom(p problem.Problem, c mmaKnobs) mmaGeometry {
	s := p.Shape
	var g mmaGeometry
	t := gemmtile.NewTile(s, c.Knobs)
	g.ThreadsPerBlock, g.TilesP, g.TilesQ, g.GridTiles, g.Accumulators = t.Threads, t.TilesP, t.TilesQ, t.GridTiles, t.Accumulators
	g.S4 = family.RoundUp(s.S, 4)
	g.JP = family.RoundUp(s.C*s.R*g.S4, 8)
	g.PatchRows = (c.TileP-1)*s.StrideH + (s.R-1)*s.DilationH + 1
	g.PatchCols = (c.TileQ-1)*s.StrideW + (g.S4-1)*s.DilationW + 1
	g.PatchPitch = g.PatchCols
	if s.StrideW%4 == 0 && s.DilationW == 1 && c.WarpN%16 == 0 {
		// 16-byte aligned fragment rows: ldmatrix can load them.
		g.LDMatrix = 1
		g.PatchPitch = family.RoundUp(g.PatchCols, 4)
	}
	if p.Layout == problem.NCHW && c.TileQ*s.StrideW%2 == 0 && s.PadW%2 == 0 && s.W%2 == 0 {
		// Every tile's patch starts on an even image column and image
		// borders fall between pairs: stage 8 bytes at a time.
		g.PairStage = 1
		g.PatchPitch = family.RoundUp(g.PatchPitch, 2)
		g.PatchCols = family.RoundUp(g.PatchCols, 2) // the last pair may run one column past
		g.PatchPitch = max(g.PatchPitch, g.PatchCols)
	}
	// B-fragment loads hit rows g*FilterPitch + t: ≡ 4 mod 32 keeps them in
	// 32 distinct banks.
	g.FilterPitch = g.JP + ((4-g.JP%32)+32)%32
	g.SharedBytes = 4 * (c.TileK*g.FilterPitch + c.Stages*s.C*g.PatchRows*g.PatchPitch)
	return g
}

// Space implements family.Family.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	var out []family.Candidate
	for _, base := range mmaSpace.Configs(p.Shape) {
		for _, st := range []int{1, 2} {
			if st == 2 && base.TilesPerBlock == 1 {
				continue // nothing to prefetch
			}
			k := mmaKnobs{Knobs: base, Stages: st}
			out = append(out, family.NewCandidate(f.Name(), k, f.reject(p, k, lim)))
		}
	}
	return out
}

func (Family) reject(p problem.Problem, c mmaKnobs, lim family.Limits) family.Rejection {
	maxAcc := 128
	if p.Precision == problem.TF32x3 {
		// The split operands, double-buffered, need registers too; larger
		// tiles also take NVRTC 7-11 s each to compile and never won.
		maxAcc = 48
	}
	return gemmtile.Reject(p.Shape, c.Knobs, gemmtile.NewTile(p.Shape, c.Knobs), mmaGeom(p, c).SharedBytes, lim, 16, maxAcc)
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	if err := f.Serves(p); err != nil {
		return family.Kernel{}, err
	}
	k, err := family.ParseKnobs[mmaKnobs](f.Name(), cfg)
	if err != nil {
		return family.Kernel{}, err
	}
	if err := k.Check(p.Shape.K); err != nil {
		return family.Kernel{}, fmt.Errorf("%s: config %s: %w", f.Name(), cfg, err)
	}
	if k.Stages < 1 || k.Stages > 2 {
		return family.Kernel{}, fmt.Errorf("%s: config %s: Stages is 1 or 2", f.Name(), cfg)
	}
	cfg = family.KnobsConfig(k)
	g := mmaGeom(p, k)
	split3 := p.Precision == problem.TF32x3
	doc := "TF32 operands (rounded to nearest), FP32 accumulation"
	if split3 {
		doc = "3xTF32: operands split into TF32 high and residual parts, three products accumulated in FP32"
	}
	name := fmt.Sprintf("convgen_mma_%s_%s", family.PrecisionTag(p.Precision), family.KernelSuffix(cfg))
	data := struct {
		family.ShapeData
		mmaGeometry
		mmaKnobs
		Name, Config, PrecisionDoc, FilterLayout string
		Split3                                   bool
	}{family.NewShapeData(p), g, k, name, cfg.String(), doc, p.Layout.FilterLayout(), split3}
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
