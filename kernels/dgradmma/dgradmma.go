// Package dgradmma is a data-gradient (dgrad) kernel family on tensor
// cores: the dX pixels split into stride phases, each a GEMM of its pixels
// by the C input channels over its valid taps times K, rendered through
// package kernels/family from dgradmma.cu.tmpl.
package dgradmma

import (
	"embed"
	"fmt"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/dgradphase"
	"github.com/convgen/convgen/kernels/internal/gradmma"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed dgradmma.cu.tmpl
var templateFS embed.FS

// Family is the tensor-core dgrad family (dgradmma.cu.tmpl). It serves
// op=dgrad in tf32 (operands rounded to TF32, m16n8k8), 3xtf32 (high and
// low TF32 parts, three products: FP32-accurate), fp16 and bf16 (m16n8k16,
// FP32 accumulation, dX rounded once), both layouts, groups=1, tensors
// below 2³¹ elements, on sm_80 and newer. Each dX element is written once
// by one thread.
//
// Knobs:
//   - BM: dX pixels of one stride phase per block (rows), BN: input
//     channels per block (columns);
//   - WM, WN: warps along the rows and the columns (warp tiles of whole
//     m16n8 fragments);
//   - Unroll: k steps whose fragments are loaded before their mma are
//     issued (Stage=0);
//   - Stage: 0, each warp loads its fragments straight from global memory;
//     1, the block stages chunks of 2 k steps of the tap's dY rows and of
//     W in shared memory (double-buffered, each value loaded once per
//     block) and the warps read their fragments from there.
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "dgradmma" }

// Template implements family.Family.
func (Family) Template() string { return "dgradmma.cu.tmpl" }

// Serves implements family.Family.
func (Family) Serves(p problem.Problem) error {
	if err := family.Gradient("dgradmma", problem.OpDgrad, p); err != nil {
		return err
	}
	if err := dgradphase.Foldable(p.Shape); err != nil {
		return fmt.Errorf("dgradmma: %w", err)
	}
	return gradmma.Serves("dgradmma", p)
}

// knobs are a configuration's knobs (see Family).
type knobs struct {
	BM, BN, WM, WN, Unroll, Stage int
}

// geometry holds a configuration's derived sizes; the template asserts
// each one it uses.
type geometry struct {
	Threads, HP, WP, MP, TilesM, TilesN, Acc int
	KStep, SharedBytes                       int             // channels per mma; the staging buffers' bytes (Stage=1)
	Staging                                  gradmma.Staging // Stage=1
}

func geom(p problem.Problem, k knobs) geometry {
	s := p.Shape
	var g geometry
	g.Threads = 32 * k.WM * k.WN
	g.HP, g.WP = family.CeilDiv(s.H, s.StrideH), family.CeilDiv(s.W, s.StrideW)
	g.MP = s.N * g.HP * g.WP
	if k.BM > 0 && k.BN > 0 {
		g.TilesM, g.TilesN = family.CeilDiv(g.MP, k.BM), family.CeilDiv(s.C, k.BN)
	}
	if k.WM > 0 && k.WN > 0 {
		g.Acc = k.BM / k.WM * k.BN / k.WN / 32
	}
	mm := gradmma.For(p, "dX")
	g.KStep = mm.KStep
	if k.Stage == 1 {
		g.Staging = gradmma.Stage(p, mm, k.BM, k.BN, g.Threads)
		g.SharedBytes = g.Staging.Bytes
	}
	return g
}

// The knob values the space takes.
var (
	spaceBM     = []int{32, 64, 128}
	spaceBN     = []int{8, 16, 32, 64}
	spaceWarps  = [][2]int{{1, 1}, {2, 1}, {4, 1}, {2, 2}, {4, 2}}
	spaceUnroll = []int{1, 2}
	spaceStage  = []int{0, 1}
)

// Space implements family.Family.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	var out []family.Candidate
	for _, bm := range spaceBM {
		for _, bn := range spaceBN {
			for _, w := range spaceWarps {
				for _, st := range spaceStage {
					for _, u := range spaceUnroll {
						if st == 1 && u > 1 {
							continue // Unroll applies to Stage=0
						}
						k := knobs{BM: bm, BN: bn, WM: w[0], WN: w[1], Unroll: u, Stage: st}
						out = append(out, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
					}
				}
			}
		}
	}
	return out
}

// check says what is wrong with a configuration's knobs, or "".
func check(k knobs) string {
	return gradmma.CheckTile(k.BM, k.BN, k.WM, k.WN, k.Unroll, k.Stage)
}

// reject returns why a configuration is not worth compiling, or the zero
// Rejection.
func reject(p problem.Problem, k knobs, lim family.Limits) family.Rejection {
	if msg := check(k); msg != "" {
		return family.Hard("shape", "%s", msg)
	}
	g := geom(p, k)
	s := p.Shape
	switch {
	case lim.Arch != 0 && lim.Arch < 80:
		return family.Hard("arch", "dgradmma needs mma.sync (sm_80), not sm_%d", lim.Arch)
	case g.Acc*k.Unroll > 96:
		return family.Hard("registers", "%d accumulators per thread with Unroll=%d", g.Acc, k.Unroll)
	case k.Stage == 1 && g.Staging.Reject(g.Acc, 2, 128).Rule != "": // each staged dY value with its row offset
		return g.Staging.Reject(g.Acc, 2, 128)
	case g.SharedBytes > 48*1024:
		return family.Hard("shared memory", "%d B per block > 48 KiB", g.SharedBytes)
	case g.Threads > lim.MaxThreadsPerBlock:
		return family.Hard("threads", "%d per block > %d", g.Threads, lim.MaxThreadsPerBlock)
	case g.TilesM > 65535:
		return family.Hard("grid", "%d pixel tiles > 65535 (gridDim.y)", g.TilesM)
	case s.StrideH*s.StrideW > 65535:
		return family.Hard("grid", "%d stride phases > 65535 (gridDim.z)", s.StrideH*s.StrideW)
	case k.BN > 8 && 2*s.C <= k.BN:
		return family.Soft("waste", "BN=%d is more than twice C=%d", k.BN, s.C)
	case k.BM > 32 && 2*g.MP <= k.BM:
		return family.Soft("waste", "BM=%d is more than twice the %d pixels of a phase", k.BM, g.MP)
	case lim.SMs > 0 && g.TilesM*g.TilesN*s.StrideH*s.StrideW < lim.SMs/2:
		return family.Soft("occupancy", "%d blocks for %d SMs", g.TilesM*g.TilesN*s.StrideH*s.StrideW, lim.SMs)
	}
	return family.Rejection{}
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	k, cfg, err := family.RenderKnobs(f.Name(), f.Serves, p, cfg, check)
	if err != nil {
		return family.Kernel{}, err
	}
	g := geom(p, k)
	s := p.Shape
	if g.SharedBytes > 48*1024 {
		return family.Kernel{}, fmt.Errorf("dgradmma: config %s: %d B of shared memory per block > 48 KiB (no opt-in)", cfg, g.SharedBytes)
	}
	if k.Stage == 1 && !g.Staging.Even {
		return family.Kernel{}, fmt.Errorf("dgradmma: config %s: %d threads do not split the staged chunk evenly", cfg, g.Threads)
	}
	if g.TilesM > 65535 || s.StrideH*s.StrideW > 65535 {
		return family.Kernel{}, fmt.Errorf("dgradmma: config %s: a grid of %d pixel tiles by %d phases is past CUDA's limits", cfg, g.TilesM, s.StrideH*s.StrideW)
	}
	mm := gradmma.For(p, "dX")
	name := fmt.Sprintf("convgen_dgradmma_%s_%s", family.PrecisionTag(p.Precision), family.KernelSuffix(cfg))
	data := struct {
		family.ShapeData
		geometry
		knobs
		Name, Config, PrecisionDoc, TypeName, MMAShape string
		Split3                                         bool
		// StepSums: 3xTF32 steps summed apart (mmaissue); dgradmma's
		// sums are short (K·R·S/stride² taps), so it keeps the tensor
		// core's accumulation.
		StepSums bool
		dgradphase.Tables
	}{family.NewShapeData(p), g, k, name, cfg.String(), mm.Doc, mm.TypeName, mm.Shape, mm.Split3, false, dgradphase.NewTables(s)}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src,
		Launch: family.Launch{Grid: [3]int{g.TilesN, g.TilesM, s.StrideH * s.StrideW}, Block: [3]int{g.Threads, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}
