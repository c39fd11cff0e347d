// Package wgrad is the filter-gradient kernel family (problem.OpWgrad):
// dW = sum over N·P·Q of dY ⊗ X, and dBias = sum dY, deterministic and
// without workspace, for every valid shape, precision and layout; its
// knobs, search space, static rules and template (wgrad.cu.tmpl), rendered
// through package kernels/family.
package wgrad

import (
	"embed"
	"fmt"
	"math"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/wgradmma"
	"github.com/convgen/convgen/problem"
)

//go:embed wgrad.cu.tmpl
var templateFS embed.FS

// Family is the filter-gradient family (wgrad.cu.tmpl): one block per Outs
// consecutive dW elements (in the filter layout's order), whose threads
// stride over the M = N·P·Q output pixels, each keeping Outs FP32 partial
// sums (summed 32 pixels at a time, then added to the thread's total),
// which the block adds in a fixed tree in shared memory. The
// reduction's order depends only on the configuration, never on timing:
// the result is deterministic, with no atomics and no workspace. With a
// bias, ceil(K/Outs) more blocks reduce dBias (FP32) the same way, in the
// same launch. Every shape, precision (FP32 FFMA; TF32 and 3xTF32 computed
// in strict FP32; FP16 and BF16 widened to FP32, dW rounded once, dBias
// FP32) and layout; tensors of 2^31 elements or more render 64-bit
// offsets.
//
// The kernel's parameters are (dW, X, dY, dBias): problem.Op.
//
// Knobs:
//   - Threads: threads per block, the ways the N·P·Q reduction is split;
//   - Outs: dW (or dBias) elements per block, which share their dY reads.
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "wgrad" }

// Template implements family.Family.
func (Family) Template() string { return "wgrad.cu.tmpl" }

// Serves implements family.Family: every valid problem of op wgrad.
func (Family) Serves(p problem.Problem) error {
	return family.Gradient("wgrad", problem.OpWgrad, p)
}

// The values the knobs take.
var (
	wgradThreads = []int{64, 128, 256, 512}
	wgradOuts    = []int{1, 2, 4, 8}
)

// knobs are a wgrad configuration's knobs (see Family).
type knobs struct {
	Threads, Outs int
}

// geometry holds a configuration's derived sizes.
type geometry struct {
	CG, KG      int   // input and output channels per group
	M           int64 // reduction length, N·P·Q
	DWTotal     int64 // dW elements, K·CG·R·S
	DWBlocks    int64 // blocks of dW
	BiasBlocks  int64 // blocks of dBias (0 without bias)
	Blocks      int64 // DWBlocks + BiasBlocks
	GridX       int   // Blocks capped at CUDA's 2^31−1 (the kernel strides over the rest)
	SharedBytes int   // the reduction tree, Outs × Threads floats
	Index64     bool  // offsets in 64 bits
}

// maxGridX is CUDA's limit on a grid's x dimension.
const maxGridX = math.MaxInt32

// chunk is how many of its pixels a thread sums before adding them to its
// running total (the template's CHUNK): FP32 rounding error then grows
// with √chunk + √(pixels/chunk) instead of √pixels, which keeps a long
// reduction (the flagship's 774,400 pixels over 64 threads) well inside
// strict FP32's bound.
const chunk = 32

func geom(p problem.Problem, k knobs) geometry {
	s := p.Shape
	var g geometry
	g.CG, g.KG = s.C/s.Groups, s.K/s.Groups
	g.M = int64(s.N) * int64(s.P()) * int64(s.Q())
	g.DWTotal = int64(s.K) * int64(g.CG) * int64(s.R) * int64(s.S)
	if k.Outs > 0 {
		g.DWBlocks = (g.DWTotal + int64(k.Outs) - 1) / int64(k.Outs)
		if s.Bias {
			g.BiasBlocks = int64((s.K + k.Outs - 1) / k.Outs)
		}
	}
	g.Blocks = g.DWBlocks + g.BiasBlocks
	g.GridX = int(min(g.Blocks, maxGridX))
	g.SharedBytes = 4 * k.Outs * k.Threads
	// 64-bit offsets where a tensor needs them, and where a thread's last
	// pixel, the last block's outputs or the grid stride would pass 2^31−1.
	g.Index64 = s.Needs64BitIndex() || g.M+int64(k.Threads)*chunk > math.MaxInt32 ||
		g.DWTotal+int64(k.Outs) > math.MaxInt32 || 2*g.Blocks > math.MaxInt32
	return g
}

// Space implements family.Family.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	var out []family.Candidate
	for _, t := range wgradThreads {
		for _, o := range wgradOuts {
			k := knobs{Threads: t, Outs: o}
			out = append(out, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
		}
	}
	return out
}

// reject returns why a configuration is not worth compiling, or the zero
// Rejection: device limits (hard); threads that would mostly idle on a
// short reduction, and blocks too few for the SMs where fewer outputs per
// block would make more (soft).
func reject(p problem.Problem, k knobs, lim family.Limits) family.Rejection {
	g := geom(p, k)
	switch {
	case k.Threads > lim.MaxThreadsPerBlock:
		return family.Hard("threads", "%d per block > %d", k.Threads, lim.MaxThreadsPerBlock)
	case g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
	case k.Threads > 64 && g.M < int64(k.Threads)*4:
		return family.Soft("waste", "%d threads for a reduction over %d pixels: most idle", k.Threads, g.M)
	case k.Outs > 1 && g.Blocks < int64(2*lim.SMs):
		return family.Soft("occupancy", "%d blocks leave some of the %d SMs idle; fewer outputs per block make more", g.Blocks, lim.SMs)
	case lim.Arch >= 90 && (wgradmma.Family{}).Serves(p) == nil && (k.Outs != 4 || k.Threads != 64):
		// On ResNet-50's 56² wgrad these ran 20–45 ms against wgradmma's
		// 0.15–0.5 and took most of a 15 s tune's measuring. One
		// configuration (the fastest there) stays as the fallback: a
		// family whose candidates were all soft-rejected would have them
		// all admitted again (family.AdmitSoft).
		return family.Soft("tensor cores", "wgradmma serves %s on sm_90, 10–100× faster than FFMA (Outs=4, Threads=64 is kept as the fallback)", p.Precision)
	}
	return family.Rejection{}
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	k, cfg, err := family.RenderKnobs(f.Name(), f.Serves, p, cfg, func(k knobs) string {
		if k.Threads < 32 || k.Threads > 1024 || k.Threads&(k.Threads-1) != 0 || k.Outs < 1 || k.Outs > 32 {
			return "Threads must be a power of two from 32 to 1024 and Outs 1 to 32"
		}
		return ""
	})
	if err != nil {
		return family.Kernel{}, err
	}
	g := geom(p, k)
	name := "convgen_wgrad_" + family.KernelSuffix(cfg)
	data := struct {
		family.ShapeData
		geometry
		knobs
		Chunk                                     int
		Name, Config, Elem, PrecisionDoc, Idx, LL string
	}{family.NewShapeData(p), g, k, chunk, name, cfg.String(), elemType(p), precisionDoc(p), "int", ""}
	if g.Index64 {
		data.Idx, data.LL = "long long", "LL"
	}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src,
		Launch: family.Launch{Grid: [3]int{g.GridX, 1, 1}, Block: [3]int{k.Threads, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}

// elemType is the C type of p's tensor elements.
func elemType(p problem.Problem) string {
	if family.HalfIO(p) {
		return "unsigned short"
	}
	return "float"
}

// precisionDoc says how the kernel computes in p's precision.
func precisionDoc(p problem.Problem) string {
	switch p.Precision {
	case problem.FP16:
		return "FP16 data widened to FP32, FP32 accumulation, dW rounded to FP16 once, dBias FP32"
	case problem.BF16:
		return "BF16 data widened to FP32, FP32 accumulation, dW rounded to BF16 once, dBias FP32"
	case problem.TF32, problem.TF32x3:
		return fmt.Sprintf("FP32 data computed in strict FP32 (FFMA), more accurate than %s needs", p.Precision)
	}
	return "FP32 data, FFMA"
}
