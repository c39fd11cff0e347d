// Package gradmma holds what the tensor-core gradient families (dgradmma,
// wgradmma) share: their tile knobs' checks, the mma each precision uses
// and the rules of their shared-memory staging. Their templates share
// kernels/family's MMAPartial.
package gradmma

import (
	"fmt"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// CheckTile says what is wrong with a block tile of bm rows by bn columns
// on wm × wn warps (whole m16n8 fragments, at most 16 warps), an Unroll
// and a Stage (0 or 1; Unroll applies to Stage=0 only), or "".
func CheckTile(bm, bn, wm, wn, unroll, stage int) string {
	switch {
	case wm < 1 || wn < 1 || bm < 16 || bn < 8:
		return "BM ≥ 16, BN ≥ 8, WM and WN ≥ 1"
	case bm%(16*wm) != 0 || bn%(8*wn) != 0:
		return "warp tiles of whole m16n8 fragments: BM a multiple of 16·WM, BN of 8·WN"
	case 32*wm*wn > 512:
		return "at most 16 warps"
	case unroll < 1 || unroll > 4:
		return "Unroll 1 to 4"
	case stage < 0 || stage > 1:
		return "Stage 0 or 1"
	case stage == 1 && unroll != 1:
		return "Unroll=1 with Stage=1"
	}
	return ""
}

// MMA is a precision's mma.sync and the facts the templates need.
type MMA struct {
	// Doc says how the precision computes, for the kernel's header; out
	// names the output ("dX", "dW").
	Doc string
	// TypeName is the mma's operand type ("tf32", "f16", "bf16"), Shape
	// the instruction's shape ("m16n8k8", "m16n8k16").
	TypeName, Shape string
	// KStep is the reduction length of one mma, Pad the elements a staged
	// row is padded by (conflict-free fragment reads).
	KStep, Pad int
	// Split3 says 3xTF32: high and low parts, three products.
	Split3 bool
}

// For is p's MMA; out names the output in Doc.
func For(p problem.Problem, out string) MMA {
	switch p.Precision {
	case problem.TF32x3:
		return MMA{Doc: fmt.Sprintf("FP32 data split into TF32 high and low parts (3 products: FP32-accurate), FP32 accumulation, %s FP32", out),
			TypeName: "tf32", Shape: "m16n8k8", KStep: 8, Pad: 4, Split3: true}
	case problem.FP16:
		return MMA{Doc: fmt.Sprintf("FP16 operands, FP32 accumulation, %s rounded to FP16 once", out), TypeName: "f16", Shape: "m16n8k16", KStep: 16, Pad: 8}
	case problem.BF16:
		return MMA{Doc: fmt.Sprintf("BF16 operands, FP32 accumulation, %s rounded to BF16 once", out), TypeName: "bf16", Shape: "m16n8k16", KStep: 16, Pad: 8}
	}
	return MMA{Doc: fmt.Sprintf("FP32 data rounded to TF32 operands, FP32 accumulation, %s FP32", out), TypeName: "tf32", Shape: "m16n8k8", KStep: 8, Pad: 4}
}

// Serves checks what both families need of a problem of their op: a
// tensor-core precision, groups=1, 32-bit offsets; name is the family's.
func Serves(name string, p problem.Problem) error {
	s := p.Shape
	switch {
	case p.Precision == problem.FP32:
		return fmt.Errorf("%s serves tf32, 3xtf32, fp16 and bf16, not strict fp32 (FFMA: %s)", name, p.Op)
	case s.Groups != 1:
		return fmt.Errorf("%s serves groups=1, not groups=%d", name, s.Groups)
	case s.Needs64BitIndex() || int64(s.N)*int64(s.P())*int64(s.Q())*int64(s.K) >= 1<<31-1:
		return fmt.Errorf("%s indexes with 32-bit integers: tensors of 2^31 elements or more are served by %s", name, p.Op)
	}
	return nil
}

// Staging is a Stage=1 block's shared-memory staging of chunks of two k
// steps: rows of A (bm) and B (bn) values, split over threads.
type Staging struct {
	// Share is the values a thread stages per chunk, Bytes the two
	// buffers' size.
	Share, Bytes int
	// Even says the threads split the chunk evenly.
	Even bool
}

// Stage is the staging of a bm × bn tile on threads threads for m.
func Stage(p problem.Problem, m MMA, bm, bn, threads int) Staging {
	chunk := 2 * m.KStep
	st := Staging{Bytes: 2 * (bm + bn) * (chunk + m.Pad) * p.Precision.ElementBytes()}
	if threads > 0 {
		st.Share = (bm + bn) * chunk / threads
		st.Even = (bm*chunk)%threads == 0 && (bn*chunk)%threads == 0
	}
	return st
}

// Reject applies the staging's hard rules: an even split, and at most
// maxRegs accumulators plus staged values (and their per-value facts,
// perValue registers each) per thread.
func (st Staging) Reject(acc, perValue, maxRegs int) family.Rejection {
	switch {
	case !st.Even:
		return family.Hard("threads", "the threads do not split the staged chunk evenly")
	case acc+perValue*st.Share > maxRegs:
		return family.Hard("registers", "%d accumulators and %d staged values per thread", acc, st.Share)
	}
	return family.Rejection{}
}
