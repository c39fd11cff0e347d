// Package dgrad is the data-gradient kernel family (problem.OpDgrad): dX =
// conv^T(dY, W) in gather form, for every valid shape, precision and
// layout; its knobs, search space, static rules and template
// (dgrad.cu.tmpl), rendered through package kernels/family.
package dgrad

import (
	"embed"
	"fmt"
	"math"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

//go:embed dgrad.cu.tmpl
var templateFS embed.FS

// Family is the data-gradient family (dgrad.cu.tmpl): one thread per
// input-gradient element dX[n,c,h,w] (per step), which gathers
// dY[n,k,p,q]·W[k,c,r,s] over the output channels k of c's group and the
// taps (r,s) whose output position p = (h+pad_h−r·dilation_h)/stride_h
// (and q likewise) is whole and inside the output. Every shape (groups,
// depthwise, per-axis stride, pad and dilation, odd sizes), every
// precision (FP32 FFMA; TF32 and 3xTF32 computed in strict FP32, FP16 and
// BF16 widened to FP32 and rounded once) and both layouts; tensors of 2^31
// elements or more render 64-bit offsets.
//
// The kernel's parameters are (dX, dY, W, unused): problem.Op.
//
// Knobs:
//   - Threads: threads per block;
//   - Elems: dX elements per thread (at tid, tid+Threads, ... of the
//     block's range, so that every step stays coalesced).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "dgrad" }

// Template implements family.Family.
func (Family) Template() string { return "dgrad.cu.tmpl" }

// Serves implements family.Family: every valid problem of op dgrad.
func (Family) Serves(p problem.Problem) error {
	return family.Gradient("dgrad", problem.OpDgrad, p)
}

// The values the knobs take.
var (
	dgradThreads = []int{64, 128, 256, 512}
	dgradElems   = []int{1, 2, 4}
)

// knobs are a dgrad configuration's knobs (see Family).
type knobs struct {
	Threads, Elems int
}

// geometry holds a configuration's derived sizes.
type geometry struct {
	CG, KG       int   // input and output channels per group
	Total        int64 // dX elements, N·C·H·W
	PerBlock     int   // dX elements per block, Threads·Elems
	Blocks       int64 // blocks covering Total
	GridX        int   // Blocks capped at CUDA's 2^31−1 (the kernel strides over the rest)
	Index64      bool  // offsets in 64 bits
	OutputsPerSM int64 // blocks per SM, for the occupancy rule
}

// maxGridX is CUDA's limit on a grid's x dimension.
const maxGridX = math.MaxInt32

func geom(p problem.Problem, k knobs) geometry {
	s := p.Shape
	var g geometry
	g.CG, g.KG = s.C/s.Groups, s.K/s.Groups
	g.Total = int64(s.N) * int64(s.C) * int64(s.H) * int64(s.W)
	g.PerBlock = k.Threads * k.Elems
	if g.PerBlock > 0 {
		g.Blocks = (g.Total + int64(g.PerBlock) - 1) / int64(g.PerBlock)
	}
	g.GridX = int(min(g.Blocks, maxGridX))
	// 64-bit offsets where a tensor needs them, and where the last block's
	// element indices or the grid stride would pass 2^31−1.
	g.Index64 = s.Needs64BitIndex() || g.Total+int64(g.PerBlock) > math.MaxInt32 || 2*g.Blocks > math.MaxInt32
	return g
}

// Space implements family.Family.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	var out []family.Candidate
	for _, t := range dgradThreads {
		for _, e := range dgradElems {
			k := knobs{Threads: t, Elems: e}
			out = append(out, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
		}
	}
	return out
}

// reject returns why a configuration is not worth compiling, or the zero
// Rejection: the device's thread limit (hard), and configurations whose
// few blocks leave SMs idle where a smaller one would not (soft).
func reject(p problem.Problem, k knobs, lim family.Limits) family.Rejection {
	g := geom(p, k)
	switch {
	case k.Threads > lim.MaxThreadsPerBlock:
		return family.Hard("threads", "%d per block > %d", k.Threads, lim.MaxThreadsPerBlock)
	case g.PerBlock > 64 && g.Blocks < int64(2*lim.SMs):
		return family.Soft("occupancy", "%d blocks of %d elements leave some of the %d SMs idle; fewer elements per block make more", g.Blocks, g.PerBlock, lim.SMs)
	}
	return family.Rejection{}
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	k, cfg, err := family.RenderKnobs(f.Name(), f.Serves, p, cfg, func(k knobs) string {
		if k.Threads < 32 || k.Threads > 1024 || k.Threads%32 != 0 || k.Elems < 1 || k.Elems > 16 {
			return "Threads must be a multiple of 32 up to 1024 and Elems 1 to 16"
		}
		return ""
	})
	if err != nil {
		return family.Kernel{}, err
	}
	g := geom(p, k)
	name := "convgen_dgrad_" + family.KernelSuffix(cfg)
	data := struct {
		family.ShapeData
		geometry
		knobs
		Name, Config, Elem, PrecisionDoc, Idx, LL string
	}{family.NewShapeData(p), g, k, name, cfg.String(), elemType(p), precisionDoc(p), "int", ""}
	if g.Index64 {
		data.Idx, data.LL = "long long", "LL"
	}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src,
		Launch: family.Launch{Grid: [3]int{g.GridX, 1, 1}, Block: [3]int{k.Threads, 1, 1}}}, nil
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
		return "FP16 data widened to FP32, FP32 accumulation, dX rounded to FP16 once"
	case problem.BF16:
		return "BF16 data widened to FP32, FP32 accumulation, dX rounded to BF16 once"
	case problem.TF32, problem.TF32x3:
		return fmt.Sprintf("FP32 data computed in strict FP32 (FFMA), more accurate than %s needs", p.Precision)
	}
	return "FP32 data, FFMA"
}
