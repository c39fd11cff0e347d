// Package wgmmaigemm is the Hopper implicit-GEMM kernel family for
// channel-heavy NHWC layers: wgmma on FP16, BF16 or TF32 operands that a
// multistage cp.async pipeline brings into shared memory, rendered through
// package kernels/family from wgmmaigemm.cu.tmpl.
package wgmmaigemm

import (
	"embed"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/dgradphase"
	"github.com/convgen/convgen/kernels/internal/hopper"
	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed wgmmaigemm.cu.tmpl
var templateFS embed.FS

// Family is the wgmma implicit-GEMM family (wgmmaigemm.cu.tmpl), for
// sm_90a: the convolution as a GEMM of M = N·P·Q output pixels by K output
// channels over the C·R·S taps in the KRSC filter's (r, s, c) order, so
// that both operands are K-major (taps contiguous) as TF32 wgmma requires.
// It serves NHWC, groups=1, in fp16, bf16 and tf32 (operands rounded to
// TF32 in shared memory or, A with ARegs, in registers) and 3xtf32
// (split3: each operand split in shared memory, three wgmmas a k step,
// step sums; its data gradient as tf32's but for PhaseFilter), with C a
// multiple of 8 (fp16, bf16) or 4 (tf32, 3xtf32) so that a 16-byte copy is 16 bytes of one tap; any N, H, W, K, R, S,
// stride, padding and dilation: pixels past M, channels past K and taps in
// the zero padding are zero-filled by the copies, stores are predicated.
//
// It also serves op=dgrad (problem.Op) at stride 1 in fp16 and bf16: the
// data gradient is the same GEMM with M = N·H·W dX pixels by C input
// channels over the K·R·S entries (r, s, k), k fastest. A gathers dY (K
// contiguous channels: K a multiple of 8) at (h + pad − r·dilation, w +
// pad − s·dilation), the forward's gather with the tap sign flipped; B is
// W[k][r][s][c], contiguous along c (C a multiple of 8), so it is copied
// as rows of the reduction into wgmma's MN-major 128-byte swizzle and read
// transposed (imm-trans-b), which only 16-bit wgmma can do. No bias,
// epilogue chain or other output type; Swizzle=1 only.
//
// In tf32, strided dgrad and NCHW dgrad are folded (Fold=1, as igemm's
// Fold): one GEMM of the N·HP·WP phase pixels (HP = ⌈H/stride_h⌉, WP
// likewise) by the stride_h·stride_w·C columns (a, b, c), dX pixel (a +
// stride_h·i, b + stride_w·j) channel c, over the union of the phases' dY
// offsets × K; B, the filter gathered with zeros where a phase meets no
// tap, is copied element by element, A (dY) by 16-byte copies in NHWC (K a
// multiple of 4) and element by element in NCHW. A channel-poor first
// layer (the flagship's C=3, stride 4) so fills the tile's columns. In
// fp16 and bf16, strided dgrad is folded the same way in NHWC with C a
// multiple of 8: 8 columns (a, b, c..c+7) are then 8 channels of one
// phase, contiguous in the KRSC filter, so B is copied 16 bytes at a time
// MN-major (BN a multiple of 64) and read transposed, and the stores write
// channel pairs.
//
// The NCHW forward is relayed out in fp16 and bf16 (always but PlaneA:
// 2-byte elements have no cp.async) and in tf32 with Relayout=1 (beside its
// element copies), and so is the 16-bit NCHW data gradient (but PlaneA): the input
// (dY) is copied to NHWC, its channels zero-padded to 16 bytes (only the
// pixels read where a 1×1 without padding has a stride), and the filter
// to KRSC, into module globals, by a prologue kernel in the same module
// (KERNEL_prologue, kernels/launch's convention, which convgen's launchers
// follow) or, where the kernel is launched alone, by its own blocks before
// their main loop: a block takes its tile and the launch's epoch from a
// ticket (the global KERNEL_count), claims the prologue's units of work
// one at a time until none is left (an atomic add on a global counter),
// copies them and waits until every unit is copied, which only
// running blocks owe. Launchers run such a kernel one launch at a time. The kernel is
// then the NHWC forward (or data gradient) on those copies and stores
// NCHW (StoreRows: along a channel's pixels). Any C is so served, at the
// price of the copies and of a module that holds them; split-K too (the
// tile from the grid, a cluster's ranks sharing it, the epoch from a
// ticket over every block, as FlipFilter's split does).
//
// Knobs:
//   - BM: output pixels per block, 64 per m64 sub-tile, Warpgroups × (1 or
//     2) sub-tiles (dgrad: dX pixels);
//   - BN: output channels per block, the wgmma's N (64, 128 or 256; dgrad:
//     input channels);
//   - BK: taps per pipeline stage (128 bytes of a pixel's channels; dgrad:
//     reduction entries, 128 bytes of a pixel's dY channels);
//   - Warpgroups: computing warpgroups (4 warps each), splitting BM; 3
//     (BM = 192: a grid of 33 pixel tiles for ResNet-50's 14² maps at
//     N=32, where 128 and 256 leave waves part-empty; B's copies split
//     unevenly over 384 threads, the last iteration guarded) only as
//     threeWarpgroupsRule says: NHWC, unfolded, no producer, relayout or
//     PlaneA; tf32 with ARegs, BN ≤ 128, a data gradient on its flipped
//     filter. The unsplit 16-bit ones are searched storing through shared
//     memory where StoreRows applies;
//   - Stages: shared-memory stages, Stages−2 k-tiles in flight ahead of the
//     one the tensor cores read;
//   - BlocksPerSM: blocks the kernel is built to run side by side on one SM
//     (__launch_bounds__; their shared memory must fit together);
//   - Swizzle: 0, operands in core matrices of 8 rows x 16 bytes side by
//     side (no swizzle); 1, rows of 128 bytes in wgmma's 128-byte swizzle
//     (needs 128-byte tile rows);
//   - Producer: 0, every thread copies and computes, a block barrier per
//     k-tile; 1, one more warpgroup only copies, handing stages over through
//     mbarriers (warp specialisation);
//   - SplitK: blocks of a thread-block cluster (grid z, __cluster_dims__)
//     that split the k-tiles of one output tile in contiguous, balanced
//     ranges and add their FP32 partial tiles up in distributed shared
//     memory, in rank order (deterministic, no workspace, no atomics): 2, 4
//     or 8 (a portable cluster), at least 2 k-tiles a block, Producer=0;
//     absent (or 1) for none. Searched (2 and 4) only where the unsplit
//     grid has fewer tiles than the device has SMs.
//   - ARegs (tf32, optional): 1, A's fragments go to wgmma from registers,
//     read with ldmatrix and rounded to TF32 there, so that only B is
//     rounded in shared memory; absent (or 0), both operands are rounded
//     in shared memory. Searched beside every tf32 configuration.
//   - VecCopy (FlipFilter or PhaseFilter, optional): 1, the flipped (or
//     the phases') filter is copied 16 bytes at a time both ways, in units
//     of 32 rows of the gradient's K by 8 vectors of its C (the element
//     copies' prologue took 12–13 µs on ResNet-50's 1×1s at N=32, this
//     one 5–7); searched in place of the element copies wherever C and K
//     are multiples of 16 bytes.
//   - TruncB (tf32, optional): 1, B is not rounded in the main loop: the
//     tensor cores read the top 19 bits of its FP32 elements (truncating),
//     A alone is rounded (a relative error of about 4.6e-4 against
//     float64 for random data, where rounding both gives 2.9e-4 and
//     truncating both 7.7e-4; TF32's bound is 1e-3); not with FlipFilter
//     or PhaseFilter, whose B is rounded by its copy. tf32 searches it
//     wherever it applies, in place of the rounding.
//   - StoreRows (optional): 1, the epilogue through shared memory: the
//     tile's FP32 rows over the stages, then 16-byte stores along a
//     pixel's channels, any epilogue chain applied on the way (NHWC, the
//     input's type, unsplit, unfolded or PhaseTiles, Producer=0; a relayed-out NCHW
//     tile is staged channel by channel and stored along the pixels, 16
//     bytes at a time where P·Q is a multiple of 16 bytes' pixels);
//     searched as a twin of every such tile in fp16 and bf16, and of every
//     relayed-out one in tf32 and 3xtf32.
//   - Relayout (tf32 NCHW forward, optional): 1, relayed out as above;
//     absent (or 0), A copied element by element (C·R·S a multiple of
//     4). Both are searched.
//   - PlaneA (16-bit NCHW 1x1 at stride 1, forward or data gradient;
//     optional): 1, A (the input; dY) read straight from its channel
//     planes into the MN-major swizzle and read transposed (planeA),
//     instead of relayed out.
//   - Fold (strided dgrad, tf32 NCHW dgrad; optional): 1, the folded data
//     gradient above, with BN (tf32) also the folded columns rounded up
//     to 8; required where the stride is above 1 or (tf32) the layout
//     NCHW, refused elsewhere. 2 (tf32 and 3xtf32, where every phase
//     meets a tap and it shortens the reduction): the same, each phase's
//     rows shifted so that the phases' offsets share their top
//     (dgradphase's Aligned): the reduction spans the widest phase's
//     offsets instead of their union (the flagship's 3 × 3 instead of 4 ×
//     4), the phase grid a row or column longer.
//   - FlipFilter (NHWC dgrad at stride 1; optional): 1, the data gradient
//     computed as the forward of dY by the filter flipped and transposed,
//     W'[c][R−1−r][S−1−s][k] (flipped), padded dilation·(R−1) − pad, which
//     a prologue kernel (or, launched alone, the kernel's blocks, as the
//     relayout's do) copies into a module global, rounded to TF32 in
//     tf32: B is then K-major and needs no rounding in the main loop, and
//     C may be any count; split-K too (the tile from the grid, the epoch
//     from a ticket over every block). A variant of the exploration (its
//     own group).
//   - PhaseTiles (folded NHWC dgrad, C a multiple of BN, K of BK;
//     optional): 1, each tile's columns are one stride phase's, and it
//     runs only the k-tiles of the offsets that phase meets (a 3×3 at
//     stride 2: 1, 2, 2 and 4 of the union's 4; the fold computes them
//     all, multiplying zeros), its count and offsets from constant tables;
//     also storing through shared memory (StoreRows: 16-byte runs of the
//     phase's channels at its dX pixels). A twin of every folded Producer=0
//     candidate it applies to.
//   - PhaseFilter (tf32 with PhaseTiles; optional): 1, B read from each
//     phase's filter, W'_ph[c][j][k] (its j-th offset's tap), which a
//     prologue (or the blocks) gathers and rounds to TF32 into a module
//     global: 16-byte copies, K-major, no rounding in the main loop,
//     instead of element copies.
//   - HeavyFirst (with PhaseTiles; optional): 1, the blocks, which start
//     in launch order, take the tiles of the phases that meet the most
//     offsets first (a 3×3 at stride 2: the 4-offset phase's tiles, then
//     the 2-offset ones', then the 1-offset one's), so that the light
//     tiles fill the last wave instead of the heavy ones; absent (or 0),
//     a pixel tile's columns of every phase side by side. Every PhaseTiles
//     candidate whose phases meet unequal numbers of offsets has it (it
//     was as fast or faster on every tile pinned); the others are searched
//     without it (their order would be the same).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "wgmmaigemm" }

// Template implements family.Family.
func (Family) Template() string { return "wgmmaigemm.cu.tmpl" }

// Serves implements family.Family: op fprop (NHWC; NCHW relayed out, or
// in tf32 by element copies where C·R·S is a multiple of 4), and op dgrad at stride 1 (NHWC; any C
// where FlipFilter applies), at any stride folded (fp16 and bf16 in NHWC
// with C a multiple of 8, tf32 in both layouts).
func (Family) Serves(p problem.Problem) error {
	s := p.Shape
	switch p.Op {
	case problem.OpFprop:
		if err := s.Validate(); err != nil {
			return err
		}
	case problem.OpDgrad:
		// Validate refuses a gradient's epilogue chain and output type.
		if err := p.Validate(); err != nil {
			return fmt.Errorf("wgmmaigemm dgrad: %w", err)
		}
		if err := dgradphase.Foldable(s); err != nil {
			return fmt.Errorf("wgmmaigemm dgrad: %w", err)
		}
		q := p
		if relayout(p, knobs{}) { // a 16-bit NCHW one, as relayed out
			if err := servesRelayout(p); err != nil {
				return err
			}
			q = view(p, knobs{})
		}
		if err := servesDgrad(q); err != nil {
			return err
		}
	default:
		return family.OtherOp("wgmmaigemm computes op=fprop and op=dgrad, not op=%s (the %s family serves it)", p.Op, p.Op)
	}
	if err := family.OneGroup("wgmmaigemm", s); err != nil {
		return err
	}
	if _, err := wideIndex(p); err != nil {
		return err
	}
	switch p.Precision {
	case problem.FP16, problem.BF16, problem.TF32:
	case problem.TF32x3:
	default:
		return fmt.Errorf("wgmmaigemm serves fp16, bf16, tf32 and 3xtf32, not %s", p.Precision)
	}
	if p.Layout != problem.NHWC {
		// NCHW: A copied element by element (4-byte cp.async), tf32
		// only; B's rows (the KCRS filter's) in 16-byte copies, or,
		// folded dgrad, element by element. The 16-bit forward is
		// relayed out to NHWC first (relayout).
		switch {
		case !tf32Like(p.Precision):
			return servesRelayout(p) // the forward and the data gradient
		case p.Op == problem.OpDgrad:
			return nil
		}
		// The tf32 forward: element copies or relayed out.
		if err := nchwCopies(p); err != nil {
			if rerr := servesRelayout(p); rerr != nil {
				return fmt.Errorf("%w; %w", err, rerr)
			}
		}
		return nil
	}
	if vec := 16 / p.Precision.ElementBytes(); s.C%vec != 0 && !folds(p) && flipRule(p) != "" {
		if p.Op == problem.OpDgrad {
			return fmt.Errorf("wgmmaigemm dgrad needs C divisible by %d (16-byte copies of a filter row's channels), not %d", vec, s.C)
		}
		return fmt.Errorf("wgmmaigemm needs C divisible by %d (16-byte copies of one tap's channels), not %d", vec, s.C)
	}
	return nil
}

// tf32Like says whether pr's operands are FP32 data on TF32 tensor cores:
// tf32, and 3xtf32 (split3), which the tf32 paths serve with each operand
// split in two.
func tf32Like(pr problem.Precision) bool {
	return pr == problem.TF32 || pr == problem.TF32x3
}

// split3 says whether p is computed in 3xTF32: every operand tile is
// split in shared memory into the part the tensor cores read (its top 19
// bits) and the rest (lo, which they truncate in turn), and each k step
// issues three wgmmas, A_lo·B, A·B_lo and A·B (A_lo·B_lo, about 2^-20 of
// a product, is left out): products accurate to a few units of FP32's
// last place, at three times tf32's tensor-core work and twice its shared
// memory per stage. The tensor cores sum each k-tile's products
// from zero (step sums) and FP32 adds, rounded to nearest, add them to the
// totals: their own accumulation truncates, a bias that grows with the
// steps (1.6–1.7e-5 over ResNet-50's 2304-entry reductions in one
// accumulator, H100; the bound is 1e-5). Twice the accumulator registers:
// at most 64 a set.
func split3(p problem.Problem) bool { return p.Precision == problem.TF32x3 }

// relayout says whether configuration c computes p relayed out: a
// 16-bit forward or data gradient in NCHW always (but PlaneA), a tf32
// forward with Relayout=1 (else its A is copied element by element). The
// blocks copy the input into an NHWC module global, its channels
// zero-padded to a multiple of 16 bytes, and the filter into KRSC (where
// R·S > 1 or the channels are padded); the kernel is then the NHWC
// forward of view(p, c) on those copies, storing NCHW.
func relayout(p problem.Problem, c knobs) bool {
	if p.Layout != problem.NCHW || c.PlaneA == 1 {
		return false
	}
	switch p.Op {
	case problem.OpFprop:
		return p.Precision.ElementBytes() == 2 || c.Relayout == 1
	case problem.OpDgrad:
		return p.Precision.ElementBytes() == 2 // dY copied to NHWC, dX stored NCHW
	}
	return false
}

// planeA says why the 16-bit NCHW forward or data gradient p cannot read
// its A (the input; dY) straight from the channel planes (PlaneA=1: 16
// bytes of 8 adjacent pixels of one channel, MN-major; 8 bytes of 4 where
// P·Q is a multiple of 4 only), or "": a 1x1 at stride 1 without padding,
// P·Q a multiple of 4 and C of 8 (whole, aligned runs of a plane inside
// one image; 16-byte copies of filter rows, K-major in the forward,
// MN-major in the data gradient), 32-bit offsets.
func planeA(p problem.Problem) string {
	s := p.Shape
	switch {
	case p.Op != problem.OpFprop && p.Op != problem.OpDgrad || p.Layout != problem.NCHW || p.Precision.ElementBytes() != 2:
		return fmt.Sprintf("PlaneA reads a 16-bit NCHW forward's or data gradient's planes, not %s op=%s %s", p.Precision, p.Op, p.Layout)
	case s.R != 1 || s.S != 1 || s.StrideH != 1 || s.StrideW != 1 || s.PadH != 0 || s.PadW != 0:
		return "PlaneA reads a 1x1 filter's pixels at stride 1 without padding"
	case (s.P()*s.Q())%4 != 0 || s.C%8 != 0:
		return fmt.Sprintf("PlaneA needs P·Q = %d a multiple of 4 and C = %d of 8 (8- or 16-byte runs of a plane, 16-byte runs of a filter row)", s.P()*s.Q(), s.C)
	case s.Needs64BitIndex():
		return "PlaneA keeps 32-bit offsets"
	}
	return ""
}

// nchwStores says whether configuration c stores p's output NCHW from an
// NHWC-like tile: relayed out, or PlaneA.
func nchwStores(p problem.Problem, c knobs) bool {
	return relayout(p, c) || c.PlaneA == 1 && p.Layout == problem.NCHW
}

// relayoutFilter says whether a relayed-out p copies its filter too: a
// 1x1 KCRS filter whose reduction channels (C; dgrad's K) need no padding
// is its own KRSC.
func relayoutFilter(p problem.Problem) bool {
	padded := p.Shape.C // the reduction's channels, padded in the copies
	if p.Op == problem.OpDgrad {
		padded = p.Shape.K
	}
	return p.Shape.R*p.Shape.S > 1 || padded%(16/p.Precision.ElementBytes()) != 0
}

// relayoutTapsMax is the most taps R·S of a relayed-out filter: one
// channel's taps fit the copies' buffer of 64 x 66 elements.
const relayoutTapsMax = 64 * 66

// view is the problem configuration c computes for p: p itself, or,
// relayed out, p in NHWC with C rounded up to a multiple of 16 bytes
// (the copies' zero channels add nothing).
func view(p problem.Problem, c knobs) problem.Problem {
	if c.FlipFilter == 1 && p.Op == problem.OpDgrad {
		return flipped(p)
	}
	if !relayout(p, c) {
		return p
	}
	q := p
	q.Layout = problem.NHWC
	vec := 16 / p.Precision.ElementBytes()
	if p.Op == problem.OpDgrad {
		// dY's K channels, the reduction, padded; dX's C are the columns.
		q.Shape.K = family.CeilDiv(p.Shape.K, vec) * vec
		return q
	}
	q.Shape.C = family.CeilDiv(p.Shape.C, vec) * vec
	if subsamples(p, c) {
		// The copy holds only the pixels read: a 1x1 at stride 1 on P x Q.
		q.Shape.H, q.Shape.W, q.Shape.StrideH, q.Shape.StrideW = p.Shape.P(), p.Shape.Q(), 1, 1
	}
	return q
}

// flipped is the forward problem whose output is data gradient p's dX
// (FlipFilter=1): dY (N x P x Q, K channels) convolved at stride 1 by the
// filter flipped and transposed, W'[c][R−1−r][S−1−s][k] = W[k][r][s][c]
// (C rows of K channels), padded dilation·(R−1) − pad, whose output is
// H x W: dX pixel h meets dY row h + pad − r·dilation, which is row h −
// pad' + (R−1−r)·dilation of the flipped filter's tap R−1−r. Its B (the
// flipped filter's rows, K contiguous) is K-major, as TF32 wgmma needs;
// the kernel's prologue (or its blocks) make the copy.
func flipped(p problem.Problem) problem.Problem {
	s := p.Shape
	q := p
	q.Op = problem.OpFprop
	q.Shape = problem.Shape{N: s.N, C: s.K, H: s.P(), W: s.Q(), K: s.C, R: s.R, S: s.S,
		StrideH: 1, StrideW: 1, PadH: s.DilationH*(s.R-1) - s.PadH, PadW: s.DilationW*(s.S-1) - s.PadW,
		DilationH: s.DilationH, DilationW: s.DilationW, Groups: 1}
	return q
}

// flipRule says why p cannot be computed as the forward on its flipped
// filter (FlipFilter=1), or "": an NHWC data gradient at stride 1 whose
// padding the filter reaches (pad ≤ dilation·(R−1) on each axis, so that
// the forward's padding is not negative), its filter indexed in 32 bits.
func flipRule(p problem.Problem) string {
	s := p.Shape
	switch {
	case p.Op != problem.OpDgrad || p.Layout != problem.NHWC:
		return fmt.Sprintf("FlipFilter computes an NHWC data gradient, not op=%s %s", p.Op, p.Layout)
	case s.StrideH != 1 || s.StrideW != 1:
		return fmt.Sprintf("FlipFilter computes a data gradient at stride 1, not %dx%d (a strided one is folded)", s.StrideH, s.StrideW)
	case s.PadH > s.DilationH*(s.R-1) || s.PadW > s.DilationW*(s.S-1):
		return fmt.Sprintf("FlipFilter needs the padding (%dx%d) within the filter's reach (%dx%d)", s.PadH, s.PadW, s.DilationH*(s.R-1), s.DilationW*(s.S-1))
	case float64(s.K)*float64(s.C)*float64(s.R)*float64(s.S) > math.MaxInt32:
		return "FlipFilter's copy of the filter keeps 32-bit offsets"
	}
	return ""
}

// vecCopyRule says why configuration c cannot copy data gradient p's
// flipped (or phases') filter 16 bytes at a time (VecCopy), or "": the filter's rows
// (C channels) and the copy's rows (K) must be whole 16-byte vectors.
func vecCopyRule(p problem.Problem, c knobs) string {
	if vec := 16 / p.Precision.ElementBytes(); c.VecCopy == 1 && (p.Shape.C%vec != 0 || p.Shape.K%vec != 0) {
		return fmt.Sprintf("VecCopy copies the flipped (or phases') filter in 16-byte vectors: C = %d and K = %d must be multiples of %d", p.Shape.C, p.Shape.K, vec)
	}
	return ""
}

// dgradCopiesC says why configuration c cannot copy NHWC data gradient
// p's filter rows (C contiguous) 16 bytes at a time, or nil: unfolded and
// not flipped, it needs C a multiple of 16 bytes.
func dgradCopiesC(p problem.Problem, c knobs) error {
	if vec := 16 / p.Precision.ElementBytes(); p.Op == problem.OpDgrad && p.Layout == problem.NHWC && c.FlipFilter == 0 && !folds(p) && p.Shape.C%vec != 0 {
		return fmt.Errorf("wgmmaigemm dgrad needs C divisible by %d (16-byte copies of a filter row's channels), not %d", vec, p.Shape.C)
	}
	return nil
}

// subsamples says whether a relayed-out p copies only every stride-th
// row and column of its input: a 1x1 filter without padding at a stride
// above 1 reads no other pixel.
func subsamples(p problem.Problem, c knobs) bool {
	s := p.Shape
	return relayout(p, c) && p.Op == problem.OpFprop && s.R == 1 && s.S == 1 && s.PadH == 0 && s.PadW == 0 && s.StrideH*s.StrideW > 1
}

// servesRelayout declines the NCHW problems the relayout cannot copy:
// offsets past 32 bits, more taps than its buffer holds, a data gradient
// whose dX channels are not whole 16-byte runs.
func servesRelayout(p problem.Problem) error {
	q := view(p, knobs{Relayout: 1})
	switch {
	case p.Op == problem.OpDgrad && p.Shape.C%(16/p.Precision.ElementBytes()) != 0:
		return fmt.Errorf("wgmmaigemm's relayout of an NCHW data gradient needs C divisible by %d (dX's channels, its columns), not %d (igemm and dgradmma serve it)", 16/p.Precision.ElementBytes(), p.Shape.C)
	case p.Shape.Needs64BitIndex() || q.Shape.Needs64BitIndex():
		return fmt.Errorf("wgmmaigemm's relayout of an NCHW forward keeps 32-bit offsets (a tensor of 2^31 elements or more: generic serves it)")
	case relayoutFilter(p) && q.Shape.R*q.Shape.S > relayoutTapsMax:
		return fmt.Errorf("wgmmaigemm's relayout copies a filter of at most %d taps, not %dx%d", relayoutTapsMax, q.Shape.R, q.Shape.S)
	}
	return nil
}

// nchwCopies says whether tf32 NCHW's element copies (Relayout=0) serve
// p: its B's 16-byte copies of KCRS filter rows need C·R·S divisible by 4.
func nchwCopies(p problem.Problem) error {
	if s := p.Shape; (s.C*s.R*s.S)%4 != 0 {
		return fmt.Errorf("wgmmaigemm's NCHW element copies need C·R·S divisible by 4 (16-byte copies of a filter row), not %d", s.C*s.R*s.S)
	}
	return nil
}

// wideIndex says whether p has a tensor of 2^31 elements or more, which
// the kernel serves with 64-bit image offsets (.Wide), and refuses p when
// even then a 32-bit offset would overflow: the GEMM's pixels, one image
// of the input or the output, or the filter.
func wideIndex(p problem.Problem) (bool, error) {
	s := p.Shape
	if !s.Needs64BitIndex() {
		return false, nil
	}
	pixels := float64(s.N) * float64(s.P()) * float64(s.Q())
	if p.Op == problem.OpDgrad {
		pixels = float64(s.N) * float64(s.H) * float64(s.W)
	}
	for _, m := range []struct {
		what  string
		elems float64
	}{
		{"pixels", pixels},
		{"one input image C·H·W", float64(s.C) * float64(s.H) * float64(s.W)},
		{"one output image K·P·Q", float64(s.K) * float64(s.P()) * float64(s.Q())},
		{"filter K·C·R·S", float64(s.K) * float64(s.C) * float64(s.R) * float64(s.S)},
	} {
		if m.elems > math.MaxInt32 {
			return true, fmt.Errorf("wgmmaigemm's 64-bit image offsets keep the %s in 32 bits (%.0f elements): generic serves it", m.what, m.elems)
		}
	}
	return true, nil
}

// servesDgrad declines the data gradients the dgrad kernel does not
// compute: strided 16-bit ones but folded in NHWC with C a multiple of 8
// (the fold's B copies 16 bytes of one phase's channels; igemm and
// dgradmma split the others into phases) and, in NHWC, K that 16-byte
// copies of dY's channels cannot cover. (TF32's B, the filter's channels,
// is MN-major, which wgmma reads for 16-bit types only: the TF32 kernel
// copies it element by element into K-major rows.)
func servesDgrad(p problem.Problem) error {
	s := p.Shape
	vec := 16 / p.Precision.ElementBytes()
	switch {
	case (s.StrideH != 1 || s.StrideW != 1) && !tf32Like(p.Precision) && (p.Layout != problem.NHWC || s.C%vec != 0):
		return fmt.Errorf("wgmmaigemm dgrad serves %s at a stride above 1 folded in NHWC with C divisible by %d, not %s with C=%d at %dx%d (igemm and dgradmma split a strided dX into phases)",
			p.Precision, vec, p.Layout, s.C, s.StrideH, s.StrideW)
	case p.Layout == problem.NHWC && s.K%vec != 0:
		return fmt.Errorf("wgmmaigemm dgrad needs K divisible by %d (16-byte copies of dY's channels), not %d", vec, s.K)
	}
	return nil
}

// aligns says why p's folded data gradient is not computed aligned
// (Fold=2), or "": tf32 and 3xtf32 whose every phase meets a tap and whose
// GEMM aligned is smaller — the phases' aligned offsets span fewer than
// their union, over a phase grid longer by the largest shift (on small
// maps the longer grid can outweigh the shorter reduction).
func aligns(p problem.Problem) string {
	s := p.Shape
	if !folds(p) || !tf32Like(p.Precision) {
		return fmt.Sprintf("aligned phases (Fold=2) are a folded tf32 data gradient's, not %s op=%s %s", p.Precision, p.Op, p.Layout)
	}
	if err := dgradphase.Foldable(s); err != nil { // before the phase tables: their size is the stride's
		return err.Error()
	}
	if _, idle := phases(s); len(idle) > 0 {
		return fmt.Sprintf("aligned phases (Fold=2) need every phase to meet a tap (%d meet none)", len(idle))
	}
	_, nr := dgradphase.Rows(s).OffsetSpan()
	_, nc := dgradphase.Cols(s).OffsetSpan()
	f := dgradphase.NewAlignedFold(s)
	hp, wp := family.CeilDiv(s.H, s.StrideH), family.CeilDiv(s.W, s.StrideW)
	switch {
	case f.NDP*f.NDQ >= nr*nc:
		return fmt.Sprintf("aligned phases (Fold=2) span %d×%d offsets, no fewer than the union's %d×%d", f.NDP, f.NDQ, nr, nc)
	case f.HP*f.WP*f.NDP*f.NDQ >= hp*wp*nr*nc:
		return fmt.Sprintf("aligned phases (Fold=2) shorten the reduction from %d×%d to %d×%d offsets but lengthen the %d×%d phase grid to %d×%d: no less work", nr, nc, f.NDP, f.NDQ, hp, wp, f.HP, f.WP)
	}
	return ""
}

// folds says whether p is computed folded (Fold=1): a tf32 data gradient
// at a stride above 1 or in NCHW, and a 16-bit one at a stride above 1
// (NHWC, C a multiple of 8: servesDgrad).
func folds(p problem.Problem) bool {
	s := p.Shape
	if p.Op != problem.OpDgrad {
		return false
	}
	if tf32Like(p.Precision) {
		return s.StrideH*s.StrideW > 1 || p.Layout == problem.NCHW
	}
	return s.StrideH*s.StrideW > 1
}

// knobs are a configuration's knobs (see Family). SplitK, ARegs and Fold
// are optional (0: no split, A read by wgmma from shared memory, not
// folded), so that the other configurations keep their IDs and kernels.
type knobs struct {
	BM, BN, BK, Warpgroups, Stages, BlocksPerSM, Producer, Swizzle int
	SplitK                                                         int `knob:",optional"`
	ARegs                                                          int `knob:",optional"`
	Fold                                                           int `knob:",optional"`
	StoreRows                                                      int `knob:",optional"`
	Relayout                                                       int `knob:",optional"`
	PlaneA                                                         int `knob:",optional"`
	FlipFilter                                                     int `knob:",optional"`
	PhaseTiles                                                     int `knob:",optional"`
	PhaseFilter                                                    int `knob:",optional"`
	HeavyFirst                                                     int `knob:",optional"`
	TruncB                                                         int `knob:",optional"`
	VecCopy                                                        int `knob:",optional"`
}

func parseConfig(cfg family.Config) (knobs, error) {
	c, err := family.ParseKnobs[knobs]("wgmmaigemm", cfg)
	if err != nil {
		return c, err
	}
	switch {
	case c.Warpgroups < 1 || c.Warpgroups > 4:
		return c, fmt.Errorf("wgmmaigemm: config %s: Warpgroups must be 1 to 4", cfg)
	case c.BM < 64 || c.BM%(64*c.Warpgroups) != 0 || c.BM/(64*c.Warpgroups) > 2:
		return c, fmt.Errorf("wgmmaigemm: config %s: BM must be 64 × Warpgroups × (1 or 2)", cfg)
	case c.Fold < 0 || c.Fold > 2:
		return c, fmt.Errorf("wgmmaigemm: config %s: Fold must be 0, 1 or 2", cfg)
	case c.Fold >= 1 && (c.BN < 8 || c.BN > 256 || c.BN%8 != 0):
		return c, fmt.Errorf("wgmmaigemm: config %s: a folded BN must be a multiple of 8 up to 256", cfg)
	case c.Fold == 0 && c.BN != 64 && c.BN != 128 && c.BN != 256:
		return c, fmt.Errorf("wgmmaigemm: config %s: BN must be 64, 128 or 256", cfg)
	case c.Fold >= 1 && c.SplitK > 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: Fold does not split K", cfg)
	case c.BK < 16 || c.BK%16 != 0:
		return c, fmt.Errorf("wgmmaigemm: config %s: BK must be a positive multiple of 16", cfg)
	case c.Stages < 3 || c.Stages > 8:
		return c, fmt.Errorf("wgmmaigemm: config %s: Stages must be 3 to 8", cfg)
	case c.Swizzle < 0 || c.Swizzle > 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: Swizzle must be 0 or 1", cfg)
	case c.Producer < 0 || c.Producer > 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: Producer must be 0 or 1", cfg)
	case c.BlocksPerSM < 1 || c.BlocksPerSM > 4:
		return c, fmt.Errorf("wgmmaigemm: config %s: BlocksPerSM must be 1 to 4", cfg)
	case c.SplitK != 0 && c.SplitK != 1 && c.SplitK != 2 && c.SplitK != 4 && c.SplitK != 8:
		return c, fmt.Errorf("wgmmaigemm: config %s: SplitK must be 1, 2, 4 or 8 (a portable cluster)", cfg)
	case c.SplitK > 1 && c.Producer != 0:
		return c, fmt.Errorf("wgmmaigemm: config %s: SplitK needs Producer=0", cfg)
	case c.StoreRows < 0 || c.StoreRows > 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: StoreRows must be 0 or 1", cfg)
	case c.StoreRows == 1 && (c.SplitK > 1 || c.Fold >= 1 && c.PhaseTiles == 0 || c.Producer != 0):
		return c, fmt.Errorf("wgmmaigemm: config %s: StoreRows stores an unsplit, unfolded tile (or a PhaseTiles one) with Producer=0", cfg)
	case c.Relayout < 0 || c.Relayout > 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: Relayout must be 0 or 1", cfg)
	case c.PlaneA < 0 || c.PlaneA > 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: PlaneA must be 0 or 1", cfg)
	case c.PlaneA == 1 && (c.Relayout == 1 || c.Swizzle != 1):
		return c, fmt.Errorf("wgmmaigemm: config %s: PlaneA reads the NCHW input in place (no Relayout) in the 128-byte swizzle (Swizzle=1)", cfg)
	case c.PhaseTiles < 0 || c.PhaseTiles > 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: PhaseTiles must be 0 or 1", cfg)
	case c.PhaseTiles == 1 && (c.Fold != 1 || c.Producer != 0):
		return c, fmt.Errorf("wgmmaigemm: config %s: PhaseTiles splits a folded data gradient's columns by phase (Fold=1, Producer=0)", cfg)
	case c.PhaseFilter < 0 || c.PhaseFilter > 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: PhaseFilter must be 0 or 1", cfg)
	case c.PhaseFilter == 1 && c.PhaseTiles != 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: PhaseFilter gathers the filter of a phase's tile (PhaseTiles=1)", cfg)
	case c.HeavyFirst < 0 || c.HeavyFirst > 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: HeavyFirst must be 0 or 1", cfg)
	case c.HeavyFirst == 1 && c.PhaseTiles != 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: HeavyFirst orders the tiles of a phase-tiled data gradient (PhaseTiles=1)", cfg)
	case c.FlipFilter < 0 || c.FlipFilter > 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: FlipFilter must be 0 or 1", cfg)
	case c.FlipFilter == 1 && (c.Relayout == 1 || c.PlaneA == 1 || c.Fold >= 1):
		return c, fmt.Errorf("wgmmaigemm: config %s: FlipFilter computes an NHWC data gradient at stride 1 as a forward (no Relayout, PlaneA or Fold)", cfg)
	case c.ARegs < 0 || c.ARegs > 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: ARegs must be 0 or 1", cfg)
	case c.ARegs == 1 && c.Swizzle != 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: ARegs needs Swizzle=1", cfg)
	case c.VecCopy < 0 || c.VecCopy > 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: VecCopy must be 0 or 1", cfg)
	case c.VecCopy == 1 && c.FlipFilter != 1 && c.PhaseFilter != 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: VecCopy copies FlipFilter's flipped filter or PhaseFilter's phase filters", cfg)
	case c.TruncB < 0 || c.TruncB > 1:
		return c, fmt.Errorf("wgmmaigemm: config %s: TruncB must be 0 or 1", cfg)
	case c.TruncB == 1 && (c.FlipFilter == 1 || c.PhaseFilter == 1):
		return c, fmt.Errorf("wgmmaigemm: config %s: TruncB leaves B unrounded in the main loop, where FlipFilter's and PhaseFilter's B is rounded by its copy", cfg)
	}
	if c.SplitK == 1 {
		c.SplitK = 0 // SplitK=1 is the unsplit kernel, under its ID
	}
	return c, nil
}

// geometry holds a configuration's derived sizes; the template asserts
// each one it uses. For dgrad, M counts dX pixels (N·H·W), KRed the K·R·S
// reduction entries and TilesN the tiles over the C input channels.
type geometry struct {
	M, KRed, KTiles, TilesM, TilesN int
	Threads, Subtiles, Acc          int // per block; m64 sub-tiles per warpgroup; accumulators per thread
	ElemBytes, Vec, Chunks          int // bytes per element, elements per 16-byte copy, copies per tile row
	StageBytes, SharedBytes         int
	KStep                           int // taps per wgmma (k16 or k8: 32 bytes)
	// Split-K: blocks per cluster (1: none), the fewest k-tiles a block
	// gets, the partial tile's row pitch in floats (BN + 8: conflict-free
	// fragment stores) and bytes (BM rows), its rows reduced per block.
	Split, RankKTiles, Pitch, PartBytes, RankRows int
	// Dgrad's B tile in the MN-major 128-byte swizzle: atoms of 8
	// reduction rows x 64 channels (1024 bytes), the BN/64 atoms of 8 rows
	// side by side. BLBO: bytes between the 64-channel atoms (the
	// descriptor's leading byte offset); BSBO: bytes between groups of 8
	// rows (its stride byte offset); BChunks: 16-byte copies per B row
	// (BN/Vec), BRowsPerIter: B rows the copying threads cover at once.
	BLBO, BSBO, BChunks, BRowsPerIter int
	// Fold: the phase grid HP x WP, the folded columns CF = NA·C (NA
	// the phases (a, b) that meet a tap, of SH·SW) and the union of the
	// phases' dY offsets, dp in [DPMin, DPMin+NDP), dq in [DQMin,
	// DQMin+NDQ).
	Folded                             bool
	HP, WP, CF, DPMin, NDP, DQMin, NDQ int
	// Aligned (Fold=2): the phases' rows shifted (dgradphase's Aligned):
	// ShiftH and ShiftW the shifts per row and column phase as C
	// initialisers, ShiftHMax and ShiftWMax the largest; HP and WP are
	// then the phase grid with the largest shift added.
	Aligned              bool
	ShiftH, ShiftW       string
	ShiftHMax, ShiftWMax int
	// Phases: where some phase meets no tap (a 1x1 at stride 2), the
	// columns hold only the NA phases that do (Active, in (a, b) order)
	// and the stores write zeros to the others' dX pixels (Idle); both
	// empty where every phase meets a tap (the columns are then all
	// SH·SW phases, as before this table existed).
	Active, Idle [][2]int
	// TableBytes is the folded kernel's table in shared memory (after the
	// stages and mbarriers): the filter offset of every (offset, column)
	// pair of the tile, NDP·NDQ·BN ints.
	TableBytes int
	// PhaseOffs (PhaseTiles): for each column phase (Active's order, or
	// (a, b) with b fastest), the offsets t = (dp − DPMin)·NDQ + (dq −
	// DQMin) at which it meets a tap, ascending: a tile of one phase's
	// columns runs only their k-tiles.
	PhaseOffs [][]int
	// RunA: folded NCHW with NDQ a multiple of 4, so that the 4 entries of
	// a 16-byte chunk are 4 adjacent dY columns of one row: a thread copies
	// a chunk's 4 elements (NHWC's A layout) instead of one element of 4
	// chunks.
	RunA bool
}

func geom(p problem.Problem, c knobs) geometry {
	s := p.Shape
	var g geometry
	g.M = s.N * s.P() * s.Q()
	g.KRed = s.C * s.R * s.S
	cols := s.K
	if p.Op == problem.OpDgrad {
		g.M, g.KRed, cols = s.N*s.H*s.W, s.K*s.R*s.S, s.C
	}
	if c.Fold >= 1 {
		g.Folded = true
		g.HP, g.WP = family.CeilDiv(s.H, s.StrideH), family.CeilDiv(s.W, s.StrideW)
		g.CF = s.StrideH * s.StrideW * s.C
		g.DPMin, g.NDP = dgradphase.Rows(s).OffsetSpan()
		g.DQMin, g.NDQ = dgradphase.Cols(s).OffsetSpan()
		if c.Fold == 2 {
			f := dgradphase.NewAlignedFold(s)
			g.Aligned, g.ShiftH, g.ShiftW, g.ShiftHMax, g.ShiftWMax = true, f.ShiftHInit, f.ShiftWInit, f.ShiftHMax, f.ShiftWMax
			g.HP, g.WP, g.DPMin, g.NDP, g.DQMin, g.NDQ = f.HP, f.WP, f.DPMin, f.NDP, f.DQMin, f.NDQ
		}
		if act, idle := phases(s); len(idle) > 0 {
			g.Active, g.Idle = act, idle
			g.CF = len(act) * s.C
		}
		g.M, g.KRed, cols = s.N*g.HP*g.WP, g.NDP*g.NDQ*s.K, g.CF
		g.RunA = p.Layout == problem.NCHW && g.NDQ%4 == 0
		if c.PhaseTiles == 1 {
			g.PhaseOffs = phaseOffsets(s, g)
		}
	}
	g.KTiles = family.CeilDiv(g.KRed, c.BK)
	g.TilesM, g.TilesN = family.CeilDiv(g.M, c.BM), family.CeilDiv(cols, c.BN)
	g.Threads = 128 * (c.Warpgroups + c.Producer)
	g.Subtiles = c.BM / (64 * c.Warpgroups)
	g.Acc = g.Subtiles * c.BN / 2
	g.ElemBytes = p.Precision.ElementBytes()
	g.Vec = 16 / g.ElemBytes
	g.Chunks = c.BK / g.Vec
	g.KStep = 32 / g.ElemBytes
	g.StageBytes = (c.BM + c.BN) * c.BK * g.ElemBytes
	if split3(p) {
		g.StageBytes *= 2 // the lo parts of A and B after the tiles (LO_OFF)
	}
	g.SharedBytes = c.Stages*g.StageBytes + c.Producer*16*c.Stages // + the full and empty mbarriers
	if g.Folded {
		g.TableBytes = g.NDP * g.NDQ * c.BN * 4
		g.SharedBytes += g.TableBytes
	}
	g.Split = max(1, c.SplitK)
	g.RankKTiles = g.KTiles / g.Split
	if g.Split > 1 || c.StoreRows == 1 {
		// The partial tile (or StoreRows' tile) reuses the stages once the
		// main loop is done.
		g.Pitch = c.BN + 8
		g.PartBytes = c.BM * g.Pitch * 4
		g.RankRows = c.BM / g.Split
		g.SharedBytes = max(g.SharedBytes, g.PartBytes)
	}
	if p.Op == problem.OpDgrad && g.ElemBytes == 2 {
		g.BLBO, g.BSBO = 1024, c.BN/64*1024
		g.BChunks = c.BN / g.Vec
		loaders := g.Threads // copying threads: all, or the producer warpgroup
		if c.Producer == 1 {
			loaders = 128
		}
		g.BRowsPerIter = loaders / g.BChunks
	}
	return g
}

// geomOf is the geometry of configuration c for problem orig (computed
// as view(orig)): a relayed-out StoreRows tile is staged channel by
// channel, BN rows of BM + 4 floats (the fragments' stores conflict-free).
func geomOf(orig problem.Problem, c knobs) geometry {
	g := geom(view(orig, c), c)
	if nchwStores(orig, c) && c.StoreRows == 1 {
		g.Pitch = c.BM + 4
		g.PartBytes = c.BN * g.Pitch * 4
		g.SharedBytes = max(c.Stages*g.StageBytes+c.Producer*16*c.Stages, g.PartBytes)
	}
	return g
}

// storeRowsRule says why StoreRows=1 (the epilogue through shared memory,
// 16-byte stores along a pixel's channels) does not apply to c for p, or
// "": it stores NHWC tiles of the input's type (an epilogue chain applied
// on the way, its residual read 16 bytes at a time), whose channel count
// is a whole number of 16-byte runs, over stages that hold the tile's FP32
// rows; or a relayed-out 16-bit NCHW forward's tile, channel by channel
// along the pixels (g from geomOf).
func storeRowsRule(p problem.Problem, c knobs, g geometry) string {
	if c.StoreRows != 1 {
		return ""
	}
	cols := p.Shape.K
	if p.Op == problem.OpDgrad {
		cols = p.Shape.C
	}
	switch {
	case p.Layout != problem.NHWC && !nchwStores(p, c):
		return "StoreRows stores NHWC rows, or a relayed-out (or PlaneA) 16-bit NCHW forward's channel planes"
	case p.OutDiffers():
		return "StoreRows stores the input's type"
	case nchwStores(p, c) && p.Op == problem.OpDgrad:
		return "StoreRows stores a relayed-out NCHW forward's planes, not a data gradient's"
	case nchwStores(p, c) && g.PartBytes > c.Stages*g.StageBytes:
		return fmt.Sprintf("StoreRows' tile (%d B, channel by channel) does not fit over the stages (%d B)", g.PartBytes, c.Stages*g.StageBytes)
	case nchwStores(p, c):
		// NCHW: 16-byte runs along a channel's pixels where PQ allows, else one pixel a thread.
	case cols%(16/g.ElemBytes) != 0:
		return fmt.Sprintf("StoreRows needs %d channels a whole number of 16-byte runs", cols)
	case g.PartBytes > c.Stages*g.StageBytes:
		return fmt.Sprintf("StoreRows' tile (%d B) does not fit over the stages (%d B)", g.PartBytes, c.Stages*g.StageBytes)
	}
	return ""
}

// phases splits s's stride phases (a, b) into those that meet a filter
// tap (every tap lands in exactly one phase per axis, so at least one
// does) and those that meet none, whose dX is zero.
func phases(s problem.Shape) (active, idle [][2]int) {
	rows, cols := dgradphase.Rows(s), dgradphase.Cols(s)
	for a := range s.StrideH {
		for b := range s.StrideW {
			if len(rows.Tap[a]) > 0 && len(cols.Tap[b]) > 0 {
				active = append(active, [2]int{a, b})
			} else {
				idle = append(idle, [2]int{a, b})
			}
		}
	}
	return active, idle
}

// phaseOffsets is geometry.PhaseOffs for s folded as g says.
func phaseOffsets(s problem.Shape, g geometry) [][]int {
	rows, cols := dgradphase.Rows(s), dgradphase.Cols(s)
	colPhases := g.Active
	if len(colPhases) == 0 {
		for a := range s.StrideH {
			for b := range s.StrideW {
				colPhases = append(colPhases, [2]int{a, b})
			}
		}
	}
	out := make([][]int, len(colPhases))
	for i, ab := range colPhases {
		for dp := range g.NDP {
			for dq := range g.NDQ {
				if slices.Contains(rows.Off[ab[0]], g.DPMin+dp) && slices.Contains(cols.Off[ab[1]], g.DQMin+dq) {
					out[i] = append(out[i], dp*g.NDQ+dq)
				}
			}
		}
	}
	return out
}

// phaseFilterTables are PhaseFilter's C initialisers for the phases' offsets
// in g: the (phase, position) pairs, each phase's filter's base offset
// (C·K per offset before it) and each offset's position in its phase's
// list (or -1).
func phaseFilterTables(s problem.Shape, g geometry) (t struct {
	entries       int
	pos, base, pj string
}) {
	var pos, base, pj []string
	at := 0
	for ph, offs := range g.PhaseOffs {
		base = append(base, fmt.Sprint(at*s.C*s.K))
		at += len(offs)
		row := make([]string, g.NDP*g.NDQ)
		for i := range row {
			row[i] = "-1"
		}
		for j, o := range offs {
			row[o] = fmt.Sprint(j)
			pj = append(pj, fmt.Sprintf("{%d, %d}", ph, j))
		}
		pos = append(pos, "{"+strings.Join(row, ", ")+"}")
	}
	t.entries, t.pos, t.base, t.pj = at, strings.Join(pos, ", "), strings.Join(base, ", "), strings.Join(pj, ", ")
	return t
}

// unevenPhases says whether the column phases of offs (PhaseOffs) meet
// unequal numbers of offsets, so that the order of their tiles matters
// (HeavyFirst).
func unevenPhases(offs [][]int) bool {
	for _, o := range offs {
		if len(o) != len(offs[0]) {
			return true
		}
	}
	return false
}

// heaviestFirst lists the column phases of offs (PhaseOffs) by the
// offsets each meets, most first (ties in phase order), as a C
// initialiser.
func heaviestFirst(offs [][]int) string {
	order := make([]int, len(offs))
	for ph := range order {
		order[ph] = ph
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(offs[b]) - len(offs[a]) })
	items := make([]string, len(order))
	for i, ph := range order {
		items[i] = fmt.Sprint(ph)
	}
	return strings.Join(items, ", ")
}

// threeWarpgroupsRule says why configuration c's three computing
// warpgroups (BM = 192: 384 threads, over which B's copies split
// unevenly) cannot serve problem orig, or "": the NHWC forward and
// stride-1 data gradient whose B copies (16 bytes each) and TF32 rounding
// the template guards: unfolded, without a producer, relayout or PlaneA
// (split-K's ranks sum 96 or 48 of the 192 rows); in tf32 with A rounded in registers (ARegs), BN at most 128
// (A's two register sets beside 128 accumulators would spill at 168
// registers a thread) and a data gradient only on its flipped filter
// (FlipFilter: tf32's own dgrad B is copied element by element).
func threeWarpgroupsRule(orig problem.Problem, c knobs) string {
	if c.Warpgroups != 3 {
		return ""
	}
	tf32 := tf32Like(orig.Precision)
	if orig.Layout != problem.NHWC || c.Fold >= 1 || c.Producer != 0 || c.Relayout == 1 || c.PlaneA == 1 ||
		tf32 && (c.ARegs != 1 || c.BN > 128 || orig.Op == problem.OpDgrad && c.FlipFilter != 1) {
		return fmt.Sprintf("three warpgroups (BM=%d) serve NHWC tiles, unfolded, every thread copying, B read in place (tf32: ARegs=1, BN ≤ 128, a data gradient FlipFilter=1), not %s %s op=%s with BN=%d Fold=%d Producer=%d Relayout=%d PlaneA=%d ARegs=%d FlipFilter=%d",
			c.BM, orig.Precision, orig.Layout, orig.Op, c.BN, c.Fold, c.Producer, c.Relayout, c.PlaneA, c.ARegs, c.FlipFilter)
	}
	return ""
}

// phaseTilesRule says why configuration c cannot tile folded data
// gradient p's columns by phase (PhaseTiles=1), or "": NHWC (the
// reduction's entries (dp, dq, k), k fastest), K a multiple of BK (a
// k-tile lies in one offset) and C of BN (a column tile in one phase).
func phaseTilesRule(p problem.Problem, c knobs) string {
	switch {
	case c.PhaseTiles != 1:
		return ""
	case !folds(p) || p.Layout != problem.NHWC:
		return fmt.Sprintf("PhaseTiles tiles a folded NHWC data gradient's columns by phase, not %s op=%s %s", p.Precision, p.Op, p.Layout)
	case p.Shape.K%c.BK != 0 || p.Shape.C%c.BN != 0:
		return fmt.Sprintf("PhaseTiles needs K = %d a multiple of BK = %d (a k-tile in one offset) and C = %d of BN = %d (a tile in one phase)", p.Shape.K, c.BK, p.Shape.C, c.BN)
	}
	return ""
}

// loaders is the threads that copy: all, or the producer warpgroup.
func (g geometry) loaders(c knobs) int {
	if c.Producer == 1 {
		return 128
	}
	return g.Threads
}

// nchwRows says whether NCHW's A element copies split evenly: each warp
// of the copying threads takes whole groups of 8 rows of BM.
func (g geometry) nchwRows(c knobs) bool {
	w := g.loaders(c) / 32
	return w > 0 && (c.BM/8)%w == 0
}

// The knob values the space takes: (BM, Warpgroups) pairs, BN and
// (BlocksPerSM, Stages) pairs, with 128-byte tile rows in the 128-byte
// swizzle and no producer warpgroup. Swizzle=0 (with 128- or 256-byte
// rows) and Producer=1 render (a pin) but are not searched: on an H100
// they were 1.5–2.5× and 1.01–1.04× slower (docs/performance.md); but
// tf32 also searches every configuration with A through registers
// (ARegs=1), and the producer warpgroup with it on
// spaceARegsProducerTiles.
var (
	spaceBMWarpgroups = [][2]int{{64, 1}, {128, 1}, {128, 2}, {256, 2}, {192, 3}}
	spaceBN           = []int{64, 128, 256}
	spaceOccupancy    = [][2]int{{1, 4}, {1, 6}, {2, 3}, {2, 4}}
	// 3xtf32's stages are twice as large (the lo parts): a 128 x 128
	// tile fits 3 of them.
	spaceOccupancySplit3 = [][2]int{{1, 3}, {1, 4}, {1, 6}, {2, 3}}
	// Split-K is searched for small grids and grids whose last wave
	// leaves SMs idle (splitWorth), on these tiles (BM, Warpgroups, BN,
	// BlocksPerSM, Stages): two warpgroups on 128 x 128 and 128 x 256,
	// one on 64 x 128 two blocks per SM, three on 192 x 128 and 192 x 256
	// (ResNet-50's 14² 3×3s at N=32: 33 × 2 tiles split in two, one wave).
	spaceSplitK = []int{2, 4}
	// tf32's A through registers with the producer warpgroup (its B
	// rounding pass off the computing threads' path), on these tiles
	// (BM, Warpgroups, BN, Stages; one block per SM).
	spaceARegsProducerTiles = [][4]int{{128, 2, 128, 4}, {128, 2, 256, 4}, {128, 1, 128, 4}}
	spaceSplitTiles         = [][5]int{{128, 2, 128, 1, 4}, {128, 2, 128, 2, 3}, {128, 2, 256, 1, 4}, {64, 1, 128, 2, 4}, {192, 3, 128, 1, 4}, {192, 3, 256, 1, 4}}
	// 3xtf32's split tiles: its stages are twice as large and its step
	// sums double the accumulators, which every tile above exceeds.
	spaceSplitTilesSplit3 = [][5]int{{128, 2, 64, 1, 3}, {128, 2, 128, 1, 3}, {64, 1, 128, 1, 3}, {64, 1, 64, 2, 3}}
)

// Space implements family.Family. Without Limits.SM90a every configuration
// is listed as rejected. Split-K candidates (spaceSplitTiles × spaceSplitK)
// are listed only where splitWorth says the tile's unsplit grid leaves SMs
// idle and the reduction has at least 4 k-tiles per block.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	orig := p // StoreRows' rule reads the layout stored
	var out []family.Candidate
	bk := 128 / p.Precision.ElementBytes()
	// How A and B are read, as (Relayout, PlaneA, FlipFilter): tf32 in
	// NCHW by element copies and relayed out (Relayout=1); a 16-bit NCHW
	// forward or data gradient relayed out and, a 1x1 at stride 1,
	// straight from the planes (PlaneA=1); an NHWC data gradient at
	// stride 1 as it is and as the forward on its flipped filter
	// (FlipFilter=1).
	modes := [][3]int{{0, 0, 0}}
	switch {
	case p.Op == problem.OpFprop && p.Layout == problem.NCHW && tf32Like(p.Precision) && servesRelayout(p) == nil:
		modes = append(modes, [3]int{1, 0, 0})
	case planeA(p) == "":
		modes = append(modes, [3]int{0, 1, 0})
	case flipRule(p) == "":
		modes = append(modes, [3]int{0, 0, 1})
	}
	aregs := []int{0}
	if p.Precision == problem.TF32 {
		aregs = []int{0, 1} // tf32: A through registers too (ARegs)
	}
	bns, fold := spaceBN, 0
	if folds(p) {
		// Folded: in tf32 also the folded columns, rounded up to 8, as one
		// tile (16-bit B tiles are whole 64-channel atoms: BN 64, 128, 256);
		// aligned where that shortens the reduction.
		fold = 1
		if aligns(p) == "" {
			fold = 2
		}
		act, _ := phases(p.Shape)
		if cf := family.CeilDiv(len(act)*p.Shape.C, 8) * 8; tf32Like(p.Precision) && (cf < 64 || (cf < 256 && cf%64 != 0)) {
			bns = append([]int{cf}, spaceBN...)
		}
	}
	// fp16 and bf16 in NHWC also store through shared memory (StoreRows),
	// a twin of every unsplit, unfolded tile where it applies (on ResNet-50
	// N=32 layers 5–32% faster; tf32 gained nothing).
	storeRows := []int{0}
	if twin := (knobs{BM: 64, BN: 64, BK: bk, Warpgroups: 1, BlocksPerSM: 1, Stages: 3, Swizzle: 1, StoreRows: 1}); p.Precision.ElementBytes() == 2 && fold == 0 &&
		storeRowsRule(orig, twin, geomOf(orig, twin)) == "" {
		storeRows = []int{0, 1}
	}
	occupancy := spaceOccupancy
	if split3(p) {
		occupancy = spaceOccupancySplit3
	}
	for _, mw := range spaceBMWarpgroups {
		for _, bn := range bns {
			for _, oc := range occupancy {
				for _, ar := range aregs {
					for _, sr := range storeRows {
						if mw[1] == 3 && sr == 0 && len(storeRows) == 2 {
							// Three warpgroups only store through shared memory
							// where they can: without it they were 10–90%
							// slower on every ResNet-50 layer pinned (H100).
							continue
						}
						for _, md := range modes {
							c := knobs{BM: mw[0], BN: bn, BK: bk, Warpgroups: mw[1], BlocksPerSM: oc[0], Stages: oc[1], Swizzle: 1, ARegs: ar, Fold: fold, StoreRows: sr, Relayout: md[0], PlaneA: md[1], FlipFilter: md[2]}
							out = append(out, family.NewCandidate(f.Name(), c, f.reject(orig, c, lim)))
							if tw := c; md[0] == 1 && tf32Like(p.Precision) {
								// tf32's relayed-out NCHW tile also stored through
								// shared memory along the channels' pixels (its
								// fragment stores are channel pairs of a pixel, a
								// plane apart in NCHW).
								if tw.StoreRows = 1; storeRowsRule(orig, tw, geomOf(orig, tw)) == "" {
									out = append(out, family.NewCandidate(f.Name(), tw, f.reject(orig, tw, lim)))
								}
							}
							if pt := c; fold >= 1 {
								pt.Fold = 1 // PhaseTiles runs only the offsets a phase meets: never aligned
								// Folded: also tiled by phase, where it applies.
								if pt.PhaseTiles = 1; phaseTilesRule(orig, pt) == "" {
									// tf32: its filter gathered per phase too (PhaseFilter);
									// each also storing its channel runs through shared
									// memory (StoreRows: the phase's dX pixels are
									// scattered, 16-byte runs of them pay in tf32 too).
									// Where the phases meet unequal numbers of offsets,
									// the heaviest phases' tiles first (HeavyFirst: as
									// fast or faster on every tile pinned, 5–25% on
									// ResNet-50's 3×3s at stride 2).
									if unevenPhases(geomOf(orig, pt).PhaseOffs) {
										pt.HeavyFirst = 1
									}
									twins := []knobs{pt}
									if pf := pt; p.Precision == problem.TF32 {
										pf.PhaseFilter = 1
										twins = append(twins, pf)
									}
									for _, tw := range twins {
										out = append(out, family.NewCandidate(f.Name(), tw, f.reject(orig, tw, lim)))
										sr := tw
										if sr.StoreRows = 1; storeRowsRule(orig, sr, geomOf(orig, sr)) == "" {
											out = append(out, family.NewCandidate(f.Name(), sr, f.reject(orig, sr, lim)))
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	if p.Precision == problem.TF32 {
		for _, t := range spaceARegsProducerTiles {
			for _, md := range modes {
				c := knobs{BM: t[0], Warpgroups: t[1], BN: t[2], BK: bk, BlocksPerSM: 1, Stages: t[3], Swizzle: 1, Producer: 1, ARegs: 1, Fold: fold, Relayout: md[0], PlaneA: md[1], FlipFilter: md[2]}
				out = append(out, family.NewCandidate(f.Name(), c, f.reject(orig, c, lim)))
			}
		}
	}
	splitTiles := spaceSplitTiles
	if split3(p) {
		splitTiles = spaceSplitTilesSplit3
	}
	for _, t := range splitTiles {
		for _, sk := range spaceSplitK {
			for _, ar := range aregs {
				for _, md := range modes {
					c := knobs{BM: t[0], Warpgroups: t[1], BN: t[2], BK: bk, BlocksPerSM: t[3], Stages: t[4], Swizzle: 1, SplitK: sk, ARegs: ar, Relayout: md[0], PlaneA: md[1], FlipFilter: md[2]}
					if g := geomOf(orig, c); fold >= 1 || !splitWorth(g.TilesM*g.TilesN, c.BlocksPerSM, lim) || g.KTiles < 4*sk {
						continue
					}
					out = append(out, family.NewCandidate(f.Name(), c, f.reject(orig, c, lim)))
				}
			}
		}
	}
	if p.Precision == problem.TF32 {
		// tf32: B is left to the tensor cores' truncation (TruncB) wherever
		// the main loop would round it: as fast or faster on every tile
		// pinned (ResNet-50 N=32 forward 3–14%, H100), at an error of about
		// 4.2e-4 against float64 where the rounding gave 2.5e-4 (cuDNN's:
		// 1.9–2.9e-4 on the same layers).
		for i, cand := range out {
			if c, err := parseConfig(cand.Config); err == nil && c.FlipFilter == 0 && c.PhaseFilter == 0 {
				c.TruncB = 1
				out[i] = family.NewCandidate(f.Name(), c, f.reject(orig, c, lim))
			}
		}
	}
	// The flipped filter copied 16 bytes at a time (VecCopy) wherever its
	// rows allow.
	for i, cand := range out {
		if c, err := parseConfig(cand.Config); err == nil && (c.FlipFilter == 1 || c.PhaseFilter == 1) {
			if c.VecCopy = 1; vecCopyRule(orig, c) == "" {
				out[i] = family.NewCandidate(f.Name(), c, f.reject(orig, c, lim))
			}
		}
	}
	return out
}

// splitWorth says whether an unsplit grid of tiles leaves enough of the
// device idle for split-K to be searched: fewer tiles than SMs, or waves
// (SMs × blocksPerSM slots) of which fewer than 90% of the slots do work
// (ResNet-50's 7² maps at N=256: 196 tiles of 256 × 128 or 128 × 256 for
// 132 SMs, two waves 74% full). Without the device's SM count, never.
func splitWorth(tiles, blocksPerSM int, lim family.Limits) bool {
	if lim.SMs <= 0 {
		return false
	}
	slots := lim.SMs * blocksPerSM
	waves := family.CeilDiv(tiles, slots)
	return tiles < lim.SMs || float64(tiles) < 0.9*float64(waves*slots)
}

// inputRule says why configuration c cannot read problem orig's input
// the way its knobs say (Relayout, PlaneA, or tf32 NCHW's element copies),
// as a rule name and a message, or "", "": reject's hard rules and
// Render's refusals alike.
func inputRule(orig problem.Problem, c knobs) (rule, msg string) {
	switch {
	case c.Relayout == 1 && (orig.Op != problem.OpFprop || orig.Layout != problem.NCHW || !tf32Like(orig.Precision)):
		return "relayout", fmt.Sprintf("Relayout=1 relays a tf32 NCHW forward out (a 16-bit NCHW forward always is), not %s op=%s %s", orig.Precision, orig.Op, orig.Layout)
	case relayout(orig, c) && servesRelayout(orig) != nil:
		return "relayout", servesRelayout(orig).Error()
	case c.PlaneA == 1 && planeA(orig) != "":
		return "plane a", planeA(orig)
	case c.FlipFilter == 1 && flipRule(orig) != "":
		return "flip filter", flipRule(orig)
	case phaseTilesRule(orig, c) != "":
		return "phase tiles", phaseTilesRule(orig, c)
	case c.PhaseFilter == 1 && orig.Precision != problem.TF32:
		return "phase filter", fmt.Sprintf("PhaseFilter copies tf32's B K-major (16-bit types read it MN-major), not %s", orig.Precision)
	case c.PhaseFilter == 1 && c.BN*c.BK/4%(128*(c.Warpgroups+c.Producer)) != 0:
		return "phase filter", fmt.Sprintf("PhaseFilter's %d 16-byte copies of B a k-tile (BN=%d) do not split over %d copying threads", c.BN*c.BK/4, c.BN, 128*(c.Warpgroups+c.Producer))
	case dgradCopiesC(orig, c) != nil:
		return "shape", dgradCopiesC(orig, c).Error() + " (FlipFilter=1 serves it)"
	case orig.Layout == problem.NCHW && orig.Op == problem.OpFprop && !relayout(orig, c) && c.PlaneA == 0 && nchwCopies(orig) != nil:
		return "shape", nchwCopies(orig).Error() + " (Relayout=1 serves it)"
	}
	return "", ""
}

// reject returns why a configuration is not worth compiling, or the zero
// Rejection.
func (Family) reject(p problem.Problem, c knobs, lim family.Limits) family.Rejection {
	orig := p // StoreRows' rule reads the layout stored
	p = view(p, c)
	g := geomOf(orig, c)
	if !lim.SM90a {
		return family.Hard("arch", "wgmmaigemm needs an sm_90 device and NVRTC 12 or newer (sm_90a)")
	}
	if rule, msg := inputRule(orig, c); rule != "" {
		return family.Hard(rule, "%s", msg)
	}
	if msg := threeWarpgroupsRule(orig, c); msg != "" {
		return family.Hard("warpgroups", "%s", msg)
	}
	accs := g.Acc
	if split3(p) {
		if g.Acc > 64 {
			return family.Hard("registers", "3xtf32 keeps step sums beside the totals: at most 64 accumulators a set, not %d", g.Acc)
		}
		accs *= 2 // the step sums beside the totals
	}
	if r := hopper.ResourceReject(c.BN, g.Threads, accs, lim); r.Rule != "" {
		return r
	}
	blocks := g.TilesM * g.TilesN * g.Split
	asFast := "" // a smaller split (or none) predicted as fast as this one
	if g.Split > 1 {
		asFast = splitNoFaster(p, c, lim)
	}
	switch {
	case c.Swizzle == 1 && c.BK*g.ElemBytes != 128:
		return family.Hard("swizzle", "the 128-byte swizzle needs 128-byte tile rows, not %d", c.BK*g.ElemBytes)
	case p.Layout == problem.NCHW && c.PlaneA == 0 && !g.RunA && !g.nchwRows(c):
		return family.Hard("shape", "NCHW: %d copying threads do not split BM=%d into whole 8-row groups per warp", g.loaders(c), c.BM)
	case g.TilesM > 65535 && g.TilesN > 65535:
		return family.Hard("grid", "%d pixel tiles and %d channel tiles: both past 65535 (gridDim.y)", g.TilesM, g.TilesN)
	case g.Split > 1 && g.RankKTiles < 2:
		return family.Hard("split", "SplitK=%d leaves a block %d of the %d k-tiles (at least 2)", g.Split, g.RankKTiles, g.KTiles)
	case g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block > %d", g.SharedBytes, lim.MaxSharedPerBlock)
	case c.BlocksPerSM*(g.SharedBytes+1024) > lim.MaxSharedPerBlock+1024:
		// An SM has the per-block maximum plus the 1 KiB each block reserves.
		return family.Hard("shared memory", "%d blocks × (%d + 1024) B > %d per SM", c.BlocksPerSM, g.SharedBytes, lim.MaxSharedPerBlock+1024)
	case c.BlocksPerSM*g.Threads*(accs+hopper.SpareRegs+8) > lim.RegistersPerSM:
		return family.Hard("registers", "%d blocks of %d threads with %d accumulators each exceed %d registers", c.BlocksPerSM, g.Threads, accs, lim.RegistersPerSM)
	case split3Rule(p, c) != "":
		return family.Hard("split3", "%s", split3Rule(p, c))
	case c.ARegs == 1 && g.ElemBytes != 4:
		return family.Hard("aregs", "ARegs rounds tf32's A in registers, not %s", p.Precision)
	case c.TruncB == 1 && g.ElemBytes != 4:
		return family.Hard("truncb", "TruncB leaves tf32's B unrounded, not %s", p.Precision)
	case vecCopyRule(orig, c) != "":
		return family.Hard("veccopy", "%s", vecCopyRule(orig, c))
	case storeRowsRule(orig, c, g) != "":
		return family.Hard("store rows", "%s", storeRowsRule(orig, c, g))
	case c.BK*g.ElemBytes > 128 && g.KTiles < 4:
		return family.Soft("waste", "BK=%d leaves %d k-tiles", c.BK, g.KTiles)
	case p.Op == problem.OpDgrad && c.Swizzle != 1:
		return family.Hard("swizzle", "dgrad's MN-major filter tile needs the 128-byte swizzle (Swizzle=1)")
	case g.Folded && c.BN*c.BK%g.loaders(c) != 0:
		return family.Hard("fold", "BN=%d x BK=%d filter elements do not split over %d copying threads", c.BN, c.BK, g.loaders(c))
	case c.Fold == 2 && aligns(p) != "":
		return family.Hard("fold", "%s", aligns(p))
	case c.Fold >= 1 && !folds(p):
		return family.Hard("fold", "Fold folds a data gradient at a stride above 1 (or tf32 in NCHW), not %s op=%s %s", p.Precision, p.Op, p.Layout)
	case c.Fold == 0 && folds(p):
		return family.Hard("fold", "a %s data gradient at stride %dx%d in %s is computed folded (Fold=1)", p.Precision, p.Shape.StrideH, p.Shape.StrideW, p.Layout)
	case p.Op == problem.OpDgrad && g.ElemBytes == 2 && c.BN%64 != 0:
		return family.Hard("shape", "a 16-bit dgrad's MN-major B tile is whole 64-channel atoms: BN=%d", c.BN)
	case c.Fold >= 1 && c.BN > 64 && 2*g.CF <= c.BN:
		return family.Soft("waste", "BN=%d is more than twice the %d folded columns", c.BN, g.CF)
	case c.Fold >= 1 && g.ElemBytes == 4 && c.BN == 64 && g.CF <= 56:
		// The flagship's 48 columns: BN=64 never won against BN=48 (H100).
		// (16-bit B tiles are whole 64-channel atoms: BN=64 is their least.)
		return family.Soft("waste", "BN=64 for %d folded columns: the tile of BN=%d holds them", g.CF, family.CeilDiv(g.CF, 8)*8)
	case p.Op == problem.OpDgrad && c.Fold == 0 && c.BN > 64 && 2*p.Shape.C <= c.BN:
		return family.Soft("waste", "BN=%d is more than twice C=%d", c.BN, p.Shape.C)
	case p.Op != problem.OpDgrad && c.BN > 64 && 2*p.Shape.K <= c.BN:
		return family.Soft("waste", "BN=%d is more than twice K=%d", c.BN, p.Shape.K)
	case c.BM > 64 && 2*g.M <= c.BM:
		return family.Soft("waste", "BM=%d is more than twice M=%d", c.BM, g.M)
	case c.Stages > 4 && g.RankKTiles < 2*c.Stages:
		return family.Soft("stages", "%d stages for %d k-tiles", c.Stages, g.RankKTiles)
	case lim.SMs > 0 && blocks < lim.SMs/2 && (c.BM > 64 || c.BN > 64):
		return family.Soft("occupancy", "%d blocks for %d SMs", blocks, lim.SMs)
	case g.Split > 1 && asFast != "":
		return family.Soft("split", "SplitK=%d: the cost model predicts it no faster than %s", g.Split, asFast)
	}
	return family.Rejection{}
}

// split3Rule says why configuration c cannot compute 3xtf32 problem p, or
// "": its operands are split in shared memory by the threads that copied
// them and read from there (no ARegs, TruncB or producer warpgroup).
func split3Rule(p problem.Problem, c knobs) string {
	if !split3(p) || c.ARegs == 0 && c.TruncB == 0 && c.Producer == 0 {
		return ""
	}
	return fmt.Sprintf("3xtf32 splits both operands in shared memory, every thread copying: not ARegs=%d, TruncB=%d, Producer=%d", c.ARegs, c.TruncB, c.Producer)
}

// splitNoFaster names a smaller split of split configuration c's tile
// (SplitK/2, SplitK/4, ..., or none: "the unsplit tile") that the cost
// model predicts at least as fast as c, or "" where c is predicted faster
// than every one: a split is searched only where the model says it
// shortens the waves. (Without the device's SM count the model assumes
// 132; such a device lists no split candidates, and a pin lifts the rule.)
func splitNoFaster(p problem.Problem, c knobs, lim family.Limits) string {
	mine := cost(p, c, lim)
	for s := c.SplitK / 2; ; s /= 2 {
		smaller := c
		smaller.SplitK = s
		if s <= 1 {
			smaller.SplitK = 0
		}
		if cost(p, smaller, lim) <= mine {
			if smaller.SplitK == 0 {
				return "the unsplit tile"
			}
			return fmt.Sprintf("SplitK=%d", s)
		}
		if s <= 1 {
			return ""
		}
	}
}

// Cost implements family.CostModel: a configuration's predicted time,
// waves x blocks per SM x one tile's work / its throughput. The waves are
// the grid's tiles (split-K ranks included) over SMs x BlocksPerSM slots
// (an SM's blocks share it, so each takes BlocksPerSM times as long); a
// tile's work is BM x BN x its rank's share of the reduction; its
// throughput grows with the tile's operand reuse, 1 / (1/BM + 1/BN),
// saturating at 96 (a 256 x 128 tile reaches 0.89 of it, a 128 x 128 one
// 0.67, a 64 x 64 one a third), less 10% for one warpgroup computing two
// sub-tiles, plus 5% for tf32's A through registers, plus 10% for the
// epilogue through shared memory (StoreRows; measured 5–32% faster in
// fp16, where alone it is searched), less a third for tf32's relayout
// (Relayout=1: ranked after the element copies, whose sweeps it has not
// joined; the tuner's refinement tries the best one's relayed-out twin, a
// one-knob neighbour); a split's time is 5% more for its reduction. Fitted by hand to full sweeps of ResNet-50
// layers (H100, tf32 NHWC and NCHW, fp16 NHWC, N=32 and 256;
// docs/performance.md, TestWGMMAIGEMMCostSweeps): the 13 cheapest held
// every sweep's winner, where 13 random candidates missed it by 6%
// (geomean).
func (Family) Cost(p problem.Problem, cfg family.Config, lim family.Limits) float64 {
	c, err := parseConfig(cfg)
	if err != nil {
		return math.Inf(1)
	}
	return cost(p, c, lim)
}

// cost is Cost for parsed knobs.
func cost(p problem.Problem, c knobs, lim family.Limits) float64 {
	relaid := relayout(p, c)
	p = view(p, c)
	g := geom(p, c)
	sms := lim.SMs
	if sms <= 0 {
		sms = 132 // an H100's or H200's
	}
	slots := sms * c.BlocksPerSM
	waves := family.CeilDiv(g.TilesM*g.TilesN*g.Split, slots)
	work := float64(c.BM*c.BN) * float64(family.CeilDiv(g.KTiles, g.Split)*c.BK)
	throughput := math.Min(1, 1/(1/float64(c.BM)+1/float64(c.BN))/96)
	if c.Warpgroups == 1 && c.BM >= 128 {
		throughput *= 0.9
	}
	if c.ARegs == 1 {
		throughput *= 1.05
	}
	if c.TruncB == 1 {
		throughput *= 1.08 // no rounding pass over B: 3–14% faster (ResNet-50 N=32 tf32 forward, H100); it also ranks an unflipped tf32 dgrad ahead of its flipped twin, whose prologue this model does not count
	}
	if c.StoreRows == 1 {
		throughput *= 1.1 // 16-byte stores: 5–32% faster on ResNet-50 N=32's fp16 layers (H100)
	}
	if len(g.PhaseOffs) > 0 {
		// PhaseTiles: a tile runs only its phase's offsets.
		met := 0
		for _, offs := range g.PhaseOffs {
			met += len(offs)
		}
		work *= float64(met) / float64(len(g.PhaseOffs)*g.NDP*g.NDQ)
	}
	if split3(p) {
		throughput /= 2.5 // three wgmmas a k step and the split pass, against tf32's one (ranks against other families' 3xtf32)
	}
	if c.PhaseFilter == 1 {
		throughput *= 1.2 // tf32's B in 16-byte copies of the gathered filter, not element copies
	}
	if relaid {
		throughput /= 1.5 // the relayout: after the element copies or PlaneA (the refinement tries the best's relayed-out twin)
	}
	t := float64(waves*c.BlocksPerSM) * work / throughput
	if g.Split > 1 {
		t *= 1.05
	}
	return t
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	if err := f.Serves(p); err != nil {
		return family.Kernel{}, err
	}
	c, err := parseConfig(cfg)
	if err != nil {
		return family.Kernel{}, err
	}
	cfg = family.KnobsConfig(c)
	orig := p // relayed out: the NCHW problem stored; p the NHWC one computed
	if rule, msg := inputRule(orig, c); rule != "" {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: %s", cfg, msg)
	}
	p = view(p, c)
	g := geomOf(orig, c)
	if split3(p) && g.Acc > 64 {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: 3xtf32 keeps step sums beside the totals: at most 64 accumulators a set, not %d", cfg, g.Acc)
	}
	if g.Threads > 1024 || g.Acc > 128 || c.BK*g.ElemBytes%128 != 0 {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: %d threads, %d accumulators and %d-byte tile rows (want ≤ 1024, ≤ 128, a multiple of 128)",
			cfg, g.Threads, g.Acc, c.BK*g.ElemBytes)
	}
	if g.Split > 1 && g.RankKTiles < 2 {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: SplitK=%d leaves a block %d of the %d k-tiles (at least 2)", cfg, g.Split, g.RankKTiles, g.KTiles)
	}
	if p.Op == problem.OpDgrad && c.Swizzle != 1 {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: dgrad's MN-major filter tile needs the 128-byte swizzle (Swizzle=1)", cfg)
	}
	if c.ARegs == 1 && g.ElemBytes != 4 {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: ARegs rounds tf32's A in registers, not %s", cfg, p.Precision)
	}
	if msg := split3Rule(p, c); msg != "" {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: %s", cfg, msg)
	}
	if msg := vecCopyRule(orig, c); msg != "" {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: %s", cfg, msg)
	}
	if c.TruncB == 1 && g.ElemBytes != 4 {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: TruncB leaves tf32's B unrounded, not %s", cfg, p.Precision)
	}
	if g.Folded && c.BN*c.BK%g.loaders(c) != 0 {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: BN=%d x BK=%d filter elements do not split over %d copying threads", cfg, c.BN, c.BK, g.loaders(c))
	}
	if c.Fold == 2 {
		if msg := aligns(p); msg != "" {
			return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: %s", cfg, msg)
		}
	}
	if (c.Fold >= 1) != folds(p) {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: Fold (1 or 2) is for, and only for, a data gradient at a stride above 1 or a tf32 one in NCHW (%s op=%s %s, stride %dx%d)",
			cfg, p.Precision, p.Op, p.Layout, p.Shape.StrideH, p.Shape.StrideW)
	}
	if p.Op == problem.OpDgrad && g.ElemBytes == 2 && c.BN%64 != 0 {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: a 16-bit dgrad's MN-major B tile is whole 64-channel atoms, not BN=%d", cfg, c.BN)
	}
	if msg := storeRowsRule(orig, c, g); msg != "" {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: %s", cfg, msg)
	}
	if msg := threeWarpgroupsRule(orig, c); msg != "" {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: %s", cfg, msg)
	}
	if p.Layout == problem.NCHW && c.PlaneA == 0 && !g.RunA && !g.nchwRows(c) {
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: NCHW: %d copying threads do not split BM=%d into whole 8-row groups per warp", cfg, g.loaders(c), c.BM)
	}
	if g.TilesM > 65535 && g.TilesN > 65535 {
		// The pixel tiles run along gridDim.y, or along x where there are
		// more than 65535 of them (PixelsOnX): with both past the limit a
		// launch would fail only on the GPU.
		return family.Kernel{}, fmt.Errorf("wgmmaigemm: config %s: %d pixel tiles of BM=%d and %d channel tiles: both past 65535 (gridDim.y)", cfg, g.TilesM, c.BM, g.TilesN)
	}
	var doc, typeName, kname string
	switch p.Precision {
	case problem.FP16:
		doc, typeName, kname = "FP16 operands and output, FP32 accumulation", "f16", "k16"
	case problem.BF16:
		doc, typeName, kname = "BF16 operands and output, FP32 accumulation", "bf16", "k16"
	case problem.TF32:
		doc, typeName, kname = "FP32 data rounded to TF32 operands, FP32 accumulation and output", "tf32", "k8"
		if c.TruncB == 1 {
			doc = "FP32 data as TF32 operands (A rounded, B truncated by the tensor cores), FP32 accumulation and output"
		}
	case problem.TF32x3:
		doc, typeName, kname = "FP32 data split into TF32 high and low parts (3xTF32: three products), FP32 accumulation and output", "tf32", "k8"
	}
	acc := c.BN / 2
	accOps, accCons := hopper.AccOperands(acc)
	name := fmt.Sprintf("convgen_wgmmaigemm_%s_%s", p.Precision, family.KernelSuffix(cfg))
	dgrad := p.Op == problem.OpDgrad
	wide, err := wideIndex(p)
	if err != nil {
		return family.Kernel{}, err
	}
	col, cols := "k", "K" // the output's column variable and count in the stores
	if dgrad {
		name = fmt.Sprintf("convgen_wgmmaigemm_dgrad_%s_%s", p.Precision, family.KernelSuffix(cfg))
		col, cols = "c", "C"
	}
	if c.FlipFilter == 1 { // the data gradient computed as a forward (its columns are K)
		name = fmt.Sprintf("convgen_wgmmaigemm_dgrad_%s_%s", p.Precision, family.KernelSuffix(cfg))
	}
	if g.Folded {
		cols = "CF"
	}
	pf := phaseFilterTables(p.Shape, g)
	// PhaseTiles' tables: the offsets each column phase meets, as
	// dgradphase writes a phase table (rows zero-padded to NDP·NDQ).
	pt := dgradphase.Taps{Tap: g.PhaseOffs, Most: g.NDP * g.NDQ}
	data := struct {
		family.ShapeData
		geometry
		knobs
		Name, Config, PrecisionDoc, FilterLayout string
		TypeName, KName, AccOperands, AccConstrs string
		SubAcc, DescAOperand, DescBOperand       int
		ScaleOperand                             int
		// Dgrad: the data gradient; BMN (fp16, bf16) its B MN-major in
		// shared memory, BT (tf32) its B copied transposed, K-major.
		// NCHWA: the forward or the folded dgrad in NCHW (A copied
		// element by element, one element of 4 chunks a thread); Folded
		// and RunA (in geometry): the folded dgrad, and its NCHW A
		// copied a chunk's 4 elements a thread.
		// Wide: 64-bit image offsets (wideIndex); PixelsOnX: the pixel
		// tiles along gridDim.x (more than 65535 of them).
		// ARegs: tf32's A fragments go to wgmma from registers, read
		// with ldmatrix and rounded there; ARegOperands, RSDescB and
		// RSScale are that wgmma's operand numbers.
		Dgrad, BMN, BT, NCHWA, Wide, PixelsOnX, ARegs bool
		Col, Cols, ARegOperands                       string
		RSDescB, RSScale                              int
		// Relayout: the NCHW problem relayed out (relayout); RelayoutFilter:
		// the filter copied too; CIn, KIn: the problem's C and K (the
		// shape's reduction channels are padded to 16 bytes). NCHWOut: the
		// stores write NCHW (NCHWA, Relayout or PlaneA).
		// PlaneA: A read straight from the NCHW planes, MN-major;
		// PlaneHalf: in 8-byte copies (P·Q a multiple of 4, not 8).
		Relayout, RelayoutFilter, NCHWOut, PlaneA, PlaneHalf bool
		CIn, KIn                                             int
		// Subsample: the relayout copies every SubH-th row and SubW-th
		// column of the HIn x WIn input (subsamples).
		Subsample                       bool
		HIn, WIn, SubH, SubW            int
		PrologueBlocks, PrologueThreads int // kernels/launch's convention
		// FlipFilter: data gradient orig computed as the forward p on its
		// flipped filter (flipped), copied by the prologue or the blocks.
		FlipFilter bool
		// PhaseTiles: a folded tile of one phase's columns runs the k-tiles
		// of the offsets that phase meets (PTCount and PTOff: geometry's
		// PhaseOffs as C initialisers, PTOff's rows padded to NDP·NDQ).
		PhaseTiles     bool
		PTCount, PTOff string
		// PhaseFilter: the filter gathered per phase (PTEntries (phase,
		// offset) pairs PTPJ, W'_ph at PTBase, offset t at position PTPos
		// of its phase's list; C initialisers).
		PhaseFilter         bool
		PTEntries           int
		PTPos, PTBase, PTPJ string
		// HeavyFirst: the tiles in launch order heaviest phase first
		// (PTOrder: the column phases by offsets met, most first; a C
		// initialiser).
		HeavyFirst bool
		PTOrder    string
		// UnevenB: three warpgroups' B copies do not split evenly over
		// their 384 threads: the count per thread is rounded up and the
		// last iteration guarded (the fold's B paths have their own
		// splits).
		UnevenB bool
		// TruncB: tf32's B is not rounded in the main loop (the tensor
		// cores truncate it), A alone is.
		TruncB bool
		// VecCopy: the flipped filter copied 16 bytes at a time both ways
		// (units of 32 rows by 8 vectors).
		VecCopy bool
		// Split3: 3xTF32 (split3): the stages hold the tiles' lo parts
		// after the tiles, three wgmmas a k step.
		Split3 bool
	}{shapeData(orig, p), g, c, name, cfg.String(), doc, orig.Layout.FilterLayout(),
		typeName, kname, accOps, accCons, acc, acc, acc + 1, acc + 2,
		dgrad, dgrad && g.ElemBytes == 2, dgrad && g.ElemBytes == 4 && c.PhaseFilter == 0, (!dgrad || (g.Folded && !g.RunA)) && p.Layout == problem.NCHW && c.PlaneA == 0, wide, g.TilesM > 65535, c.ARegs == 1, col, cols,
		fmt.Sprintf("{%%%d, %%%d, %%%d, %%%d}", acc, acc+1, acc+2, acc+3), acc + 4, acc + 5,
		relayout(orig, c), relayout(orig, c) && relayoutFilter(orig), relayout(orig, c) || ((!dgrad || (g.Folded && !g.RunA)) && p.Layout == problem.NCHW) || (c.PlaneA == 1 && p.Layout == problem.NCHW), c.PlaneA == 1, c.PlaneA == 1 && (orig.Shape.P()*orig.Shape.Q())%8 != 0, orig.Shape.C, orig.Shape.K,
		subsamples(orig, c), orig.Shape.H, orig.Shape.W, orig.Shape.StrideH, orig.Shape.StrideW,
		launch.PrologueBlocks, launch.PrologueThreads, c.FlipFilter == 1,
		c.PhaseTiles == 1, pt.Count(), pt.Table(pt.Tap),
		c.PhaseFilter == 1, pf.entries, pf.pos, pf.base, pf.pj,
		c.HeavyFirst == 1, heaviestFirst(g.PhaseOffs),
		c.Warpgroups == 3 && c.BN*g.Chunks%g.loaders(c) != 0, c.TruncB == 1, c.VecCopy == 1, split3(p)}
	grid := [3]int{g.TilesN, g.TilesM, g.Split}
	if data.PixelsOnX {
		grid = [3]int{g.TilesM, g.TilesN, g.Split}
	}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src, ArchSuffix: "a",
		Launch: family.Launch{Grid: grid, Block: [3]int{g.Threads, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}

// shapeData is the template's shape data for orig, computed as p
// (view(orig)): a relayed-out problem's sizes are p's (NHWC, C padded),
// its documented shape and layout orig's.
func shapeData(orig, p problem.Problem) family.ShapeData {
	d := family.NewShapeData(p)
	d.Shape, d.Layout = orig.Shape.String(), orig.Layout
	return d
}

// SupportsEpilogue implements family.EpilogueSupport: the template applies
// every chain at its forward store (family.Epilogue); a dgrad problem with
// a chain is refused by Serves (problem.ErrEpilogueOp).
func (Family) SupportsEpilogue(epilogue.Chain) error { return nil }

// SupportsOutPrecision implements family.OutPrecisionSupport: the forward
// epilogue stores every output type (family.Output), two channels at a
// time when K is even, as it stores the input's; dgrad stores dX in the
// input's type only.
func (Family) SupportsOutPrecision(p problem.Problem) error {
	if p.Op != problem.OpFprop {
		return fmt.Errorf("wgmmaigemm stores op=%s's output in the input's type only", p.Op)
	}
	return nil
}
