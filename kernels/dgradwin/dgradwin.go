// Package dgradwin is a data-gradient (dgrad) kernel family for strided
// layers on Hopper tensor cores whose A operand is never copied per tap: a
// block stages a window of dY in shared memory, a pixel's channels 16
// bytes at a time side by side, and each wgmma reads its A straight from
// that window through a matrix descriptor, the offset (dp, dq) of the
// folded GEMM an address offset. Rendered through package kernels/family
// from dgradwin.cu.tmpl.
package dgradwin

import (
	"embed"
	"fmt"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/dgradphase"
	"github.com/convgen/convgen/kernels/internal/gradmma"
	"github.com/convgen/convgen/kernels/internal/hopper"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed dgradwin.cu.tmpl
var templateFS embed.FS

// TileCols is the fold columns a block's tile spans: one m64 wgmma tile.
const TileCols = 64

// Family is the windowed folded dgrad family (dgradwin.cu.tmpl). It
// serves op=dgrad in tf32, 3xtf32 (each operand split into TF32 high and
// low parts in shared memory, three wgmmas a step), fp16 and bf16 (wgmma
// k16, FP32 accumulation), both layouts, groups=1, a stride above 1 whose
// every phase meets a filter tap, CF = stride_h·stride_w·C ≤ 256 folded
// columns, on sm_90a.
//
// The GEMM is wgmmaigemm's folded one with aligned phases (Fold=2;
// dgradphase.Taps.Aligned): phase pixel (n, m, j) and column (a, b, c) is
// dX pixel (a + stride_h·(m − ShiftH[a]), b + stride_w·(j − ShiftW[b]))
// channel c, the sum over offsets (dp, dq) and channels k of dY[n, k, m +
// dp, j + dq] times the tap phase (a, b) meets there: a stride-1
// correlation of dY with a folded filter of NDP × NDQ taps. wgmmaigemm
// copies A per reduction entry (each dY value NDP·NDQ times); here a block
// copies each dY value of its window once per chunk of KC channels, and
// the descriptors do the rest.
//
// Knobs:
//   - TM: fold rows per block (its tile: TM rows × 64 fold columns);
//   - WG: warpgroups, each TM/WG of the rows (one m64 × NB accumulator
//     tile a row);
//   - KC: dY channels per chunk (the window's and the folded filter's
//     depth in shared memory, two chunks in flight).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "dgradwin" }

// Template implements family.Family.
func (Family) Template() string { return "dgradwin.cu.tmpl" }

// Serves implements family.Family.
func (Family) Serves(p problem.Problem) error {
	if err := family.Gradient("dgradwin", problem.OpDgrad, p); err != nil {
		return err
	}
	if err := gradmma.Serves("dgradwin", p); err != nil { // tensor-core precisions, groups=1, 32-bit tensors
		return err
	}
	s := p.Shape
	if err := dgradphase.Strided("dgradwin", s); err != nil {
		return err
	}
	if s.StrideH*s.StrideW*s.C > 256 {
		return fmt.Errorf("dgradwin's folded columns stride_h·stride_w·C are one wgmma's N: at most 256, not %d", s.StrideH*s.StrideW*s.C)
	}
	if idle := dgradphase.Rows(s).Idle(); len(idle) > 0 {
		return fmt.Errorf("dgradwin needs every stride phase to meet a tap: row phases %v meet none (wgmmaigemm's Fold=1 stores their zeros)", idle)
	}
	if idle := dgradphase.Cols(s).Idle(); len(idle) > 0 {
		return fmt.Errorf("dgradwin needs every stride phase to meet a tap: column phases %v meet none (wgmmaigemm's Fold=1 stores their zeros)", idle)
	}
	return nil
}

// knobs are a configuration's knobs (see Family).
type knobs struct {
	TM, WG, KC int
}

// geometry holds a configuration's derived sizes; the template asserts
// each one it uses.
type geometry struct {
	// The fold with aligned phases (HP × WP, the offsets, the shifts).
	dgradphase.AlignedFold
	// CF folded columns, NB of them computed (CF rounded up to 8: wgmma's
	// N), NT = NDP·NDQ offsets.
	CF, NB, NT int
	// SUB fold rows a warpgroup; the window WR rows × WC columns; KCH
	// chunks of KC channels; elements of a chunk's window and folded
	// filter; copies (16 bytes, Vec elements, each) a thread makes of each
	// per chunk; KStep the channels of a wgmma k step (2·Vec).
	SUB, WR, WC, KCH         int
	Vec, KStep, ElemBytes    int
	WinElems, BElems         int
	WinCopies, BCopies       int
	Threads, Acc, TableBytes int
	SharedBytes              int
	// The wgmma's operand type and the kernel's precision in words
	// (gradmma.For), and Split3 (3xtf32): each chunk buffer holds the high
	// parts, then the low parts LoElems further; StageElems is a buffer's
	// elements.
	MMAType, Doc           string
	Split3                 bool
	LoElems, StageElems    int
	TilesM, TilesN         int // grid: fold row tiles, fold column tiles
	LBOA, LBOB, SBOA, SBOB int // descriptor byte offsets
	// RegsPrefetch is a thread's registers of copies in flight,
	// Accumulators its FP32 sums (SUB·Acc, twice that in 3xtf32: the
	// totals), RegsNeeded an estimate of all its registers.
	RegsPrefetch, Accumulators, RegsNeeded int
}

// geom is k's geometry for p (k passed check).
func geom(p problem.Problem, k knobs) geometry {
	s := p.Shape
	mm := gradmma.For(p, "dX")
	g := geometry{AlignedFold: dgradphase.NewAlignedFold(s)}
	g.CF = s.StrideH * s.StrideW * s.C
	g.NB = family.RoundUp(g.CF, 8)
	g.NT = g.NDP * g.NDQ
	g.SUB = k.TM / k.WG
	g.ElemBytes = p.Precision.ElementBytes()
	g.Vec = 16 / g.ElemBytes
	g.KStep = mm.KStep // two core matrices of Vec channels: 8 (tf32) or 16
	g.MMAType, g.Doc, g.Split3 = mm.TypeName, mm.Doc, mm.Split3
	g.WR = k.TM + g.NDP - 1
	g.WC = TileCols + g.NDQ - 1
	g.KCH = family.CeilDiv(s.K, k.KC)
	g.WinElems = k.KC * g.WR * g.WC
	g.BElems = g.NT * k.KC * g.NB
	g.Threads = 128 * k.WG
	g.WinCopies = family.CeilDiv(g.WinElems/g.Vec, g.Threads)
	g.BCopies = family.CeilDiv(g.BElems/g.Vec, g.Threads)
	g.Acc = g.NB / 2
	g.TableBytes = family.RoundUp(4*g.NT*g.NB, 16)
	g.LoElems = g.WinElems + g.BElems
	g.StageElems = g.LoElems
	if g.Split3 {
		g.StageElems *= 2
	}
	g.SharedBytes = 2*g.ElemBytes*g.StageElems + g.TableBytes
	g.TilesM = family.CeilDiv(g.HP, k.TM)
	g.TilesN = family.CeilDiv(g.WP, TileCols)
	g.LBOA, g.SBOA = 16*g.WR*g.WC, 128
	g.LBOB, g.SBOB = 16*g.NB, 128
	g.RegsPrefetch = 4 * (g.WinCopies + g.BCopies) // 16 bytes a copy
	g.Accumulators = g.SUB * g.Acc
	if g.Split3 {
		g.Accumulators *= 2 // the totals beside the chunk's sums
	}
	g.RegsNeeded = g.Accumulators + g.RegsPrefetch + 56 // addresses, indices and the copies' temporaries
	return g
}

// The knob values the space takes (KC: whole k steps, 8 channels in tf32
// and 3xtf32, 16 in fp16 and bf16; 64 in 16 bits only).
var (
	spaceTM = []int{2, 4, 8}
	spaceWG = []int{1, 2, 4}
	spaceKC = []int{8, 16, 32, 64}
)

// Space implements family.Family. Without Limits.SM90a every
// configuration is listed as rejected.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	var out []family.Candidate
	for _, tm := range spaceTM {
		for _, wg := range spaceWG {
			if wg > tm {
				continue
			}
			for _, kc := range spaceKC {
				k := knobs{TM: tm, WG: wg, KC: kc}
				out = append(out, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
			}
		}
	}
	return out
}

// check says what is wrong with a configuration's knobs, or "".
func check(k knobs) string {
	switch {
	case k.WG < 1 || k.WG > 4:
		return "WG 1 to 4 warpgroups"
	case k.TM < k.WG || k.TM%k.WG != 0 || k.TM/k.WG > 4:
		return "TM a multiple of WG, at most 4 rows a warpgroup"
	case k.KC < 8 || k.KC%8 != 0 || k.KC > 64:
		return "KC a multiple of 8 from 8 to 64"
	}
	return ""
}

// Unverified is the rule (family.Unverified) that keeps the family out of
// the search until its kernels have passed the GPU tests: a hard
// rejection (Enumerate admits a family's soft-rejected candidates where it
// keeps none), which the GPU tests look for (Rejection.Rule) to render
// the configurations that pass every other rule.
const Unverified = family.Unverified

// reject returns why a configuration is not worth compiling, or the zero
// Rejection.
func reject(p problem.Problem, k knobs, lim family.Limits) family.Rejection {
	if msg := check(k); msg != "" {
		return family.Hard("shape", "%s", msg)
	}
	if !lim.SM90a {
		return family.Hard("arch", "dgradwin needs wgmma (sm_90a with NVRTC 12 or newer)")
	}
	g := geom(p, k)
	s := p.Shape
	if msg := chunkRule(k, g); msg != "" {
		return family.Hard("shape", "%s", msg)
	}
	if r := hopper.ResourceReject(g.NB, g.Threads, g.Accumulators, lim); r.Rule != "" {
		return r
	}
	switch {
	case g.RegsNeeded > min(lim.MaxRegsPerThread, lim.RegistersPerSM/g.Threads):
		return family.Hard("registers", "about %d registers a thread (%d accumulators, %d in flight) in blocks of %d threads", g.RegsNeeded, g.Accumulators, g.RegsPrefetch, g.Threads)
	case lim.MaxSharedPerBlock > 0 && g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block (two chunks of window %d and folded filter %d elements, twice in 3xtf32, the table %d B) > %d", g.SharedBytes, g.WinElems, g.BElems, g.TableBytes, lim.MaxSharedPerBlock)
	case g.WR*g.WC >= 1<<14:
		return family.Hard("shape", "the window's channel-group pitch (%d × %d pixels) past the descriptor's 14-bit offset", g.WR, g.WC)
	case g.TilesM > 65535:
		return family.Hard("grid", "%d fold row tiles past CUDA's grid", g.TilesM)
	case k.KC > family.RoundUp(s.K, g.KStep):
		return family.Hard("waste", "KC=%d channels a chunk for K=%d", k.KC, s.K)
	}
	return family.Hard(Unverified, "dgradwin has not run on a GPU yet: autotune's TestDgradWin renders and measures it")
}

// chunkRule says why k's chunks do not fit its precision, or "": whole
// wgmma k steps (8 channels in tf32 and 3xtf32, 16 in fp16 and bf16), and
// KC=64 only in 16 bits (a tf32 chunk of 64 channels does not fit two
// buffers).
func chunkRule(k knobs, g geometry) string {
	switch {
	case k.KC%g.KStep != 0:
		return fmt.Sprintf("KC=%d channels a chunk: whole k steps of %d", k.KC, g.KStep)
	case k.KC == 64 && g.ElemBytes == 4:
		return "KC=64 is for 16-bit elements (a tf32 chunk of 64 channels does not fit two buffers)"
	}
	return ""
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	k, cfg, err := family.RenderKnobs(f.Name(), f.Serves, p, cfg, check)
	if err != nil {
		return family.Kernel{}, err
	}
	g := geom(p, k)
	if msg := chunkRule(k, g); msg != "" {
		return family.Kernel{}, fmt.Errorf("dgradwin: config %s: %s", cfg, msg)
	}
	if g.TilesM > 65535 {
		return family.Kernel{}, fmt.Errorf("dgradwin: config %s: %d fold row tiles past CUDA's grid", cfg, g.TilesM)
	}
	name := fmt.Sprintf("convgen_dgradwin_%s_%s", family.PrecisionTag(p.Precision), family.KernelSuffix(cfg))
	accOps, accCons := hopper.AccOperands(g.Acc)
	data := struct {
		family.ShapeData
		geometry
		knobs
		Name, Config                        string
		AccOperands, AccConstrs             string
		DescAOperand, DescBOperand, ScaleOp int
	}{family.NewShapeData(p), g, k, name, cfg.String(), accOps, accCons, g.Acc, g.Acc + 1, g.Acc + 2}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src, ArchSuffix: "a",
		Launch: family.Launch{Grid: [3]int{g.TilesN, g.TilesM, p.Shape.N}, Block: [3]int{g.Threads, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}
