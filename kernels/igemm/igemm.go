// Package igemm is the multistage mma.sync implicit-GEMM (FP16, BF16, TF32,
// 3xTF32) kernel family: its knobs, search space, static rules and template
// (igemm.cu.tmpl), rendered through package kernels/family.
package igemm

import (
	"embed"
	"fmt"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed igemm.cu.tmpl
var templateFS embed.FS

// Family is the multistage implicit-GEMM tensor-core family
// (igemm.cu.tmpl) for channel-heavy layers on sm_80 and newer:
// mma.sync m16n8k16 with FP16 or BF16 operands, or m16n8k8 with TF32
// operands (3xtf32: each operand split into a TF32 big part and a TF32
// residual, three products each), FP32 accumulation, both layouts, groups=1,
// and any C, K, stride, padding and dilation (every edge is zero-filled or
// predicated). Its PTX for sm_80 runs on every later GPU, so it is also the
// portable fallback for channel-heavy shapes.
//
// The GEMM has M = N·P·Q output pixels, N = K output channels and a
// reduction over C·R·S taps in the filter's order ((r, s, c) for KRSC,
// (c, r, s) for KCRS). Operands come through a Stages-deep cp.async pipeline:
// 16-byte copies where the channel count allows (NHWC with C·elemsize a
// multiple of 16; the filter with C·R·S·elemsize a multiple of 16), 8- or
// 4-byte copies otherwise, and element loads for 2-byte data where not even
// 4 bytes are contiguous.
//
// Knobs:
//   - BM, BN: output pixels and output channels per block tile;
//   - BK: taps per pipeline stage (k-tile);
//   - WarpsM, WarpsN: the block's warps along pixels and channels;
//   - Stages: k-tiles in flight (2 to 4).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "igemm" }

// Template implements family.Family.
func (Family) Template() string { return "igemm.cu.tmpl" }

// Serves implements family.Family: groups=1 in fp16, bf16, tf32 and 3xtf32.
func (Family) Serves(p problem.Problem) error {
	if err := family.Forward("igemm", p); err != nil {
		return err
	}
	if err := p.Shape.Validate(); err != nil {
		return err
	}
	if err := family.OneGroup("igemm", p.Shape); err != nil {
		return err
	}
	if err := family.Index32("igemm", p.Shape); err != nil {
		return err
	}
	switch p.Precision {
	case problem.FP16, problem.BF16, problem.TF32, problem.TF32x3:
	default:
		return fmt.Errorf("igemm serves fp16, bf16, tf32 and 3xtf32, not %s", p.Precision)
	}
	if _, err := problem.ParseLayout(string(p.Layout)); err != nil {
		return err
	}
	return nil
}

// igemmKnobs are an igemm configuration's knobs (see Family).
type igemmKnobs struct {
	BM, BN, BK, WarpsM, WarpsN, Stages int
}

func parseIGEMMConfig(cfg family.Config) (igemmKnobs, error) {
	c, err := family.ParseKnobs[igemmKnobs]("igemm", cfg)
	if err != nil {
		return c, err
	}
	switch {
	case c.WarpsM < 1 || c.WarpsN < 1 || c.BM < 16 || c.BN < 16:
		return c, fmt.Errorf("igemm: config %s: want positive warps and tiles of at least 16", cfg)
	case c.BM%c.WarpsM != 0 || c.BN%c.WarpsN != 0 || (c.BM/c.WarpsM)%32 != 0 || (c.BN/c.WarpsN)%16 != 0:
		return c, fmt.Errorf("igemm: config %s: warp tiles BM/WarpsM and BN/WarpsN must be multiples of 32 and 16", cfg)
	case c.BK < 16 || c.BK%16 != 0:
		return c, fmt.Errorf("igemm: config %s: BK must be a positive multiple of 16", cfg)
	case c.Stages < 2 || c.Stages > 8:
		return c, fmt.Errorf("igemm: config %s: Stages must be 2 to 8", cfg)
	}
	return c, nil
}

// igemmGeometry holds a configuration's derived sizes; the template asserts
// each one it uses.
type igemmGeometry struct {
	M, KRed, KTiles, TilesM, TilesN int
	Threads, WTM, WTN, ElemBytes    int
	Pitch, VecA, VecB               int // tile row in elements; taps per A and B load
	SharedBytes, Registers          int // per block; a per-thread estimate
	Split3                          bool
}

// igemmVec is the number of elements of one load: the widest of 16, 8 and 4
// bytes that divides run contiguous elements, else one element.
func igemmVec(run, elemBytes int) int {
	for _, bytes := range []int{16, 8, 4} {
		if v := bytes / elemBytes; v >= 1 && run%v == 0 {
			return v
		}
	}
	return 1
}

func igemmGeom(p problem.Problem, c igemmKnobs) igemmGeometry {
	s := p.Shape
	eb := p.Precision.ElementBytes()
	var g igemmGeometry
	g.M = s.N * s.P() * s.Q()
	g.KRed = s.C * s.R * s.S
	g.KTiles = family.CeilDiv(g.KRed, c.BK)
	g.TilesM, g.TilesN = family.CeilDiv(g.M, c.BM), family.CeilDiv(s.K, c.BN)
	g.Threads = 32 * c.WarpsM * c.WarpsN
	g.ElemBytes = eb
	g.WTM, g.WTN = c.BM/c.WarpsM, c.BN/c.WarpsN
	// 16 bytes of padding per row: 8 rows of a fragment load start in 8
	// different 16-byte bank groups (rows of 64 or 128 bytes + 16).
	g.Pitch = c.BK + 16/eb
	g.VecA = 1
	if p.Layout == problem.NHWC {
		g.VecA = igemmVec(s.C, eb)
	}
	g.VecB = igemmVec(g.KRed, eb)
	g.SharedBytes = c.Stages*(c.BM+c.BN)*g.Pitch*eb + 16*c.BM
	g.Split3 = p.Precision == problem.TF32x3
	fm, fn := g.WTM/16, g.WTN/8
	acc := fm * fn * 4
	frags := fm*4 + fn*2
	if g.Split3 {
		frags *= 2
	}
	g.Registers = acc + frags + 40
	return g
}

// The knob values the space takes: block tiles, warp grids, and (BK,
// Stages) pairs per element size.
var (
	igemmTiles  = [][2]int{{128, 128}, {128, 64}, {64, 128}, {64, 64}}
	igemmWarps  = [][2]int{{2, 2}, {4, 2}, {2, 4}, {4, 1}, {1, 4}}
	igemmStages = map[int][][2]int{ // element bytes → (BK, Stages)
		2: {{32, 2}, {32, 3}, {32, 4}},
		4: {{16, 3}, {16, 4}, {32, 2}, {32, 3}},
	}
)

// Space implements family.Family: warp tiles of 32 or 64 pixels by 32 or 64
// channels, 4 or 8 warps.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	var out []family.Candidate
	for _, tile := range igemmTiles {
		for _, wg := range igemmWarps {
			wtm, wtn := tile[0]/wg[0], tile[1]/wg[1]
			if (wtm != 32 && wtm != 64) || (wtn != 32 && wtn != 64) {
				continue
			}
			for _, ks := range igemmStages[p.Precision.ElementBytes()] {
				c := igemmKnobs{BM: tile[0], BN: tile[1], BK: ks[0], WarpsM: wg[0], WarpsN: wg[1], Stages: ks[1]}
				out = append(out, family.NewCandidate(f.Name(), c, f.reject(p, c, lim)))
			}
		}
	}
	return out
}

// reject returns why a configuration is not worth compiling, or the zero
// Rejection: the device's limits reject hard; tiles more than twice the
// problem's extent are pruned by a soft rule.
func (Family) reject(p problem.Problem, c igemmKnobs, lim family.Limits) family.Rejection {
	g := igemmGeom(p, c)
	switch {
	case lim.Arch > 0 && lim.Arch < 80:
		return family.Hard("arch", "mma.sync with FP16/BF16 m16n8k16 or TF32 operands, ldmatrix and cp.async need sm_80 or newer, not sm_%d", lim.Arch)
	case g.Threads > lim.MaxThreadsPerBlock:
		return family.Hard("threads", "%d per block > %d", g.Threads, lim.MaxThreadsPerBlock)
	case g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
	case g.Registers > lim.MaxRegsPerThread:
		return family.Hard("registers", "about %d per thread > %d", g.Registers, lim.MaxRegsPerThread)
	case g.Registers*g.Threads > lim.RegistersPerSM:
		return family.Hard("registers", "about %d per block > %d per SM", g.Registers*g.Threads, lim.RegistersPerSM)
	case c.BN > 64 && 2*p.Shape.K <= c.BN:
		return family.Soft("waste", "BN=%d is more than twice K=%d", c.BN, p.Shape.K)
	case c.BM > 64 && 2*g.M <= c.BM:
		return family.Soft("waste", "BM=%d is more than twice M=%d", c.BM, g.M)
	}
	return family.Rejection{}
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	if err := f.Serves(p); err != nil {
		return family.Kernel{}, err
	}
	c, err := parseIGEMMConfig(cfg)
	if err != nil {
		return family.Kernel{}, err
	}
	cfg = family.KnobsConfig(c)
	g := igemmGeom(p, c)
	if g.Threads > 1024 {
		return family.Kernel{}, fmt.Errorf("igemm: config %s: %d threads per block > 1024", cfg, g.Threads)
	}
	var doc string
	switch p.Precision {
	case problem.FP16:
		doc = "FP16 operands and output, FP32 accumulation"
	case problem.BF16:
		doc = "BF16 operands and output, FP32 accumulation"
	case problem.TF32:
		doc = "FP32 data rounded to TF32 operands, FP32 accumulation and output"
	case problem.TF32x3:
		doc = "3xTF32: FP32 data split into TF32 big and small parts, three products, FP32 accumulation and output"
	}
	name := fmt.Sprintf("convgen_igemm_%s_%s", p.Precision, family.KernelSuffix(cfg))
	data := struct {
		family.ShapeData
		igemmGeometry
		igemmKnobs
		Name, Config, PrecisionDoc, FilterLayout string
	}{family.NewShapeData(p), g, c, name, cfg.String(), doc, p.Layout.FilterLayout()}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src,
		Launch: family.Launch{Grid: [3]int{g.TilesM, g.TilesN, 1}, Block: [3]int{g.Threads, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}

// SupportsEpilogue implements family.EpilogueSupport: the template applies
// every chain at its store (family.Epilogue).
func (Family) SupportsEpilogue(epilogue.Chain) error { return nil }

// SupportsOutPrecision implements family.OutPrecisionSupport: the
// epilogue stores every output type (family.Output), two channels at a
// time in NHWC when K is even, as it stores the input's.
func (Family) SupportsOutPrecision(problem.Problem) error { return nil }
