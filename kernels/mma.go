package kernels

import (
	"fmt"

	"github.com/convgen/convgen/problem"
)

// MMA is the tensor-core implicit-GEMM family (templates/mma.cu.tmpl):
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
type MMA struct{}

// Name implements Family.
func (MMA) Name() string { return "mma" }

// Template implements Family.
func (MMA) Template() string { return "mma.cu.tmpl" }

// Serves implements Family.
func (MMA) Serves(p problem.Problem) error {
	if err := oneGroup("mma", p.Shape); err != nil {
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

// mmaKnobs are an mma configuration's knobs (see MMA).
type mmaKnobs struct {
	gemmKnobs
	Stages int
}

// mmaSpace is the values the search space takes.
var mmaSpace = gemmSpace{TileP: []int{4, 8}, TileQ: []int{8, 16, 28, 32}, TileK: []int{48, 96, 128},
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
	t := newGemmTile(s, c.gemmKnobs)
	g.ThreadsPerBlock, g.TilesP, g.TilesQ, g.GridTiles, g.Accumulators = t.Threads, t.TilesP, t.TilesQ, t.GridTiles, t.Accumulators
	g.S4 = roundUp(s.S, 4)
	g.JP = roundUp(s.C*s.R*g.S4, 8)
	g.PatchRows = (c.TileP-1)*s.StrideH + (s.R-1)*s.DilationH + 1
	g.PatchCols = (c.TileQ-1)*s.StrideW + (g.S4-1)*s.DilationW + 1
	g.PatchPitch = g.PatchCols
	if s.StrideW%4 == 0 && s.DilationW == 1 && c.WarpN%16 == 0 {
		// 16-byte aligned fragment rows: ldmatrix can load them.
		g.LDMatrix = 1
		g.PatchPitch = roundUp(g.PatchCols, 4)
	}
	if p.Layout == problem.NCHW && c.TileQ*s.StrideW%2 == 0 && s.PadW%2 == 0 && s.W%2 == 0 {
		// Every tile's patch starts on an even image column and image
		// borders fall between pairs: stage 8 bytes at a time.
		g.PairStage = 1
		g.PatchPitch = roundUp(g.PatchPitch, 2)
		g.PatchCols = roundUp(g.PatchCols, 2) // the last pair may run one column past
		g.PatchPitch = max(g.PatchPitch, g.PatchCols)
	}
	// B-fragment loads hit rows g*FilterPitch + t: ≡ 4 mod 32 keeps them in
	// 32 distinct banks.
	g.FilterPitch = g.JP + ((4-g.JP%32)+32)%32
	g.SharedBytes = 4 * (c.TileK*g.FilterPitch + c.Stages*s.C*g.PatchRows*g.PatchPitch)
	return g
}

// Space implements Family.
func (f MMA) Space(p problem.Problem, lim Limits) []Candidate {
	var out []Candidate
	for _, base := range mmaSpace.configs(p.Shape) {
		for _, st := range []int{1, 2} {
			if st == 2 && base.TilesPerBlock == 1 {
				continue // nothing to prefetch
			}
			k := mmaKnobs{gemmKnobs: base, Stages: st}
			out = append(out, newCandidate(f.Name(), k, f.reject(p, k, lim)))
		}
	}
	return out
}

func (MMA) reject(p problem.Problem, c mmaKnobs, lim Limits) Rejection {
	maxAcc := 128
	if p.Precision == problem.TF32x3 {
		// The split operands, double-buffered, need registers too; larger
		// tiles also take NVRTC 7-11 s each to compile and never won.
		maxAcc = 48
	}
	return gemmReject(p.Shape, c.gemmKnobs, newGemmTile(p.Shape, c.gemmKnobs), mmaGeom(p, c).SharedBytes, lim, 16, maxAcc)
}

// Render implements Family.
func (f MMA) Render(p problem.Problem, cfg Config) (Kernel, error) {
	if err := f.Serves(p); err != nil {
		return Kernel{}, err
	}
	k, err := parseKnobs[mmaKnobs](f.Name(), cfg)
	if err != nil {
		return Kernel{}, err
	}
	if err := k.check(p.Shape.K); err != nil {
		return Kernel{}, fmt.Errorf("%s: config %s: %w", f.Name(), cfg, err)
	}
	if k.Stages < 1 || k.Stages > 2 {
		return Kernel{}, fmt.Errorf("%s: config %s: Stages is 1 or 2", f.Name(), cfg)
	}
	cfg = knobsConfig(k)
	g := mmaGeom(p, k)
	split3 := p.Precision == problem.TF32x3
	doc := "TF32 operands (rounded to nearest), FP32 accumulation"
	if split3 {
		doc = "3xTF32: operands split into TF32 high and residual parts, three products accumulated in FP32"
	}
	name := fmt.Sprintf("convgen_mma_%s_%s", precisionTag(p.Precision), kernelSuffix(cfg))
	data := struct {
		shapeData
		mmaGeometry
		mmaKnobs
		Name, Config, PrecisionDoc, FilterLayout string
		Split3                                   bool
	}{newShapeData(p), g, k, name, cfg.String(), doc, p.Layout.FilterLayout(), split3}
	src, err := render(f.Template(), data)
	if err != nil {
		return Kernel{}, err
	}
	return Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src,
		Launch: Launch{Grid: [3]int{g.GridTiles, p.Shape.K / k.TileK, 1}, Block: [3]int{g.ThreadsPerBlock, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}

// precisionTag is a precision's name as it may appear in an identifier.
func precisionTag(p problem.Precision) string {
	if p == problem.TF32x3 {
		return "tf32x3"
	}
	return string(p)
}
