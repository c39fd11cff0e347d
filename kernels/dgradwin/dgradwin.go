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
	"slices"
	"strconv"
	"strings"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/dgradphase"
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
	s := p.Shape
	if err := dgradphase.Strided("dgradwin", s); err != nil {
		return err
	}
	switch {
	case p.Precision != problem.TF32 && p.Precision != problem.TF32x3 && p.Precision != problem.FP16 && p.Precision != problem.BF16:
		return fmt.Errorf("dgradwin is tf32, 3xtf32, fp16 and bf16, not %s", p.Precision)
	case s.Groups != 1:
		return fmt.Errorf("dgradwin serves groups=1, not groups=%d", s.Groups)
	case s.StrideH*s.StrideW*s.C > 256:
		return fmt.Errorf("dgradwin's folded columns stride_h·stride_w·C are one wgmma's N: at most 256, not %d", s.StrideH*s.StrideW*s.C)
	}
	for a, taps := range dgradphase.Rows(s).Tap {
		if len(taps) == 0 {
			return fmt.Errorf("dgradwin needs every stride phase to meet a tap: row phase %d meets none (wgmmaigemm's Fold=1 stores its zeros)", a)
		}
	}
	for b, taps := range dgradphase.Cols(s).Tap {
		if len(taps) == 0 {
			return fmt.Errorf("dgradwin needs every stride phase to meet a tap: column phase %d meets none (wgmmaigemm's Fold=1 stores its zeros)", b)
		}
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
	// The fold: phase grid HP × WP (the largest shifts added), folded
	// columns CF and NB (CF rounded up to 8: wgmma's N), offsets DPMin..
	// DPMin+NDP−1 and DQMin..DQMin+NDQ−1 (NT = NDP·NDQ of them), the
	// phases' shifts as C initialisers.
	HP, WP, CF, NB, DPMin, NDP, DQMin, NDQ, NT int
	ShiftH, ShiftW                             string
	ShiftHMax, ShiftWMax                       int
	// SUB fold rows a warpgroup; the window WR rows × WC columns; KCH
	// chunks of KC channels; elements of a chunk's window and folded
	// filter; copies (16 bytes, Vec elements, each) a thread makes of each
	// per chunk; KStep the channels of a wgmma k step (2·Vec), MMAType
	// wgmma's operand type.
	SUB, WR, WC, KCH         int
	Vec, KStep, ElemBytes    int
	MMAType                  string
	WinElems, BElems         int
	WinCopies, BCopies       int
	Threads, Acc, TableBytes int
	SharedBytes              int
	// Split3 (3xtf32): each chunk buffer holds the high parts, then the
	// low parts LoElems further; StageElems is a buffer's elements.
	Split3                    bool
	LoElems, StageElems       int
	TilesM, TilesN            int // grid: fold row tiles, fold column tiles
	LBOA, LBOB, SBOA, SBOB    int // descriptor byte offsets
	RegsPrefetch, RegsNeeded  int // the copies in flight and an estimate of a thread's registers
	Accumulators              int // a thread's: SUB·Acc, twice that in 3xtf32 (the totals)
	GridY                     int
	Aligned, UnalignedEntries int // reduction entries per channel aligned (NT) and as the union of offsets
}

func cInts(v []int) string {
	b := make([]string, len(v))
	for i, x := range v {
		b[i] = strconv.Itoa(x)
	}
	return strings.Join(b, ", ")
}

func geom(p problem.Problem, k knobs) geometry {
	s := p.Shape
	rows, cols := dgradphase.Rows(s), dgradphase.Cols(s)
	var g geometry
	var sh, sw []int
	sh, g.DPMin, g.NDP = rows.Aligned()
	sw, g.DQMin, g.NDQ = cols.Aligned()
	g.ShiftH, g.ShiftW = cInts(sh), cInts(sw)
	g.ShiftHMax, g.ShiftWMax = slices.Max(sh), slices.Max(sw)
	g.HP = family.CeilDiv(s.H, s.StrideH) + g.ShiftHMax
	g.WP = family.CeilDiv(s.W, s.StrideW) + g.ShiftWMax
	g.CF = s.StrideH * s.StrideW * s.C
	g.NB = family.RoundUp(g.CF, 8)
	g.NT = g.NDP * g.NDQ
	_, ur := rows.OffsetSpan()
	_, uc := cols.OffsetSpan()
	g.Aligned, g.UnalignedEntries = g.NT, ur*uc
	if k.WG > 0 {
		g.SUB = k.TM / k.WG
	}
	g.ElemBytes = p.Precision.ElementBytes()
	g.Vec = 16 / g.ElemBytes
	g.KStep = 2 * g.Vec
	g.MMAType = map[problem.Precision]string{problem.FP16: "f16", problem.BF16: "bf16"}[p.Precision]
	if g.MMAType == "" {
		g.MMAType = "tf32"
	}
	g.WR = k.TM + g.NDP - 1
	g.WC = TileCols + g.NDQ - 1
	if k.KC > 0 {
		g.KCH = family.CeilDiv(s.K, k.KC)
	}
	g.WinElems = k.KC * g.WR * g.WC
	g.BElems = g.NT * k.KC * g.NB
	g.Threads = 128 * k.WG
	if g.Threads > 0 {
		g.WinCopies = family.CeilDiv(g.WinElems/g.Vec, g.Threads)
		g.BCopies = family.CeilDiv(g.BElems/g.Vec, g.Threads)
	}
	g.Acc = g.NB / 2
	g.TableBytes = family.RoundUp(4*g.NT*g.NB, 16)
	g.Split3 = p.Precision == problem.TF32x3
	g.LoElems = g.WinElems + g.BElems
	g.StageElems = g.LoElems
	if g.Split3 {
		g.StageElems *= 2
	}
	g.SharedBytes = 2*g.ElemBytes*g.StageElems + g.TableBytes
	if k.TM > 0 {
		g.TilesM = family.CeilDiv(g.HP, k.TM)
	}
	g.TilesN = family.CeilDiv(g.WP, TileCols)
	g.GridY = g.TilesM
	g.LBOA, g.SBOA = 16*g.WR*g.WC, 128
	g.LBOB, g.SBOB = 16*g.NB, 128
	g.RegsPrefetch = 4 * (g.WinCopies + g.BCopies) // 16 bytes a copy
	g.Accumulators = g.SUB * g.Acc
	if p.Precision == problem.TF32x3 {
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
		return "KC a multiple of 8 from 8 to 64 (of 16 in fp16 and bf16)"
	}
	return ""
}

// Unverified is the rule that keeps the family out of the search until
// its kernels have passed the GPU tests: a hard rejection (a soft one
// would be admitted where the family keeps nothing else, and a pin lifts
// it), which the GPU tests look for (Rejection.Rule) to render the
// configurations that pass every other rule.
const Unverified = "unverified"

// reject returns why a configuration is not worth compiling, or the zero
// Rejection.
func reject(p problem.Problem, k knobs, lim family.Limits) family.Rejection {
	if msg := check(k); msg != "" {
		return family.Hard("shape", "%s", msg)
	}
	g := geom(p, k)
	s := p.Shape
	if r := hopper.ResourceReject(g.NB, g.Threads, g.Accumulators, lim); r.Rule != "" {
		return r
	}
	regs := lim.RegistersPerSM
	if regs == 0 {
		regs = 65536
	}
	switch {
	case !lim.SM90a:
		return family.Hard("arch", "dgradwin needs wgmma (sm_90a with NVRTC 12 or newer)")
	case k.KC%g.KStep != 0:
		return family.Hard("shape", "KC=%d channels a chunk: whole k steps of %d", k.KC, g.KStep)
	case k.KC == 64 && g.ElemBytes == 4:
		return family.Hard("shape", "KC=64 is for 16-bit elements (a tf32 chunk of 64 channels does not fit two buffers)")
	case g.RegsNeeded > min(255, regs/g.Threads):
		return family.Hard("registers", "about %d registers a thread (%d accumulators, %d in flight) in blocks of %d threads", g.RegsNeeded, g.Accumulators, g.RegsPrefetch, g.Threads)
	case lim.MaxSharedPerBlock > 0 && g.SharedBytes > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block (two chunks of window %d and folded filter %d elements, twice in 3xtf32, the table %d B) > %d", g.SharedBytes, g.WinElems, g.BElems, g.TableBytes, lim.MaxSharedPerBlock)
	case g.WR*g.WC >= 1<<14:
		return family.Hard("shape", "the window's channel-group pitch (%d × %d pixels) past the descriptor's 14-bit offset", g.WR, g.WC)
	case g.TilesM > 65535 || s.N > 65535:
		return family.Hard("grid", "%d fold row tiles by %d images is past CUDA's grid", g.TilesM, s.N)
	case k.KC > family.RoundUp(s.K, 8):
		return family.Hard("waste", "KC=%d channels a chunk for K=%d", k.KC, s.K)
	}
	return family.Hard(Unverified, "dgradwin has not run on a GPU yet: autotune's TestDgradWin renders and measures it")
}

// Render implements family.Family.
func (f Family) Render(p problem.Problem, cfg family.Config) (family.Kernel, error) {
	k, cfg, err := family.RenderKnobs(f.Name(), f.Serves, p, cfg, check)
	if err != nil {
		return family.Kernel{}, err
	}
	g := geom(p, k)
	s := p.Shape
	if g.TilesM > 65535 || s.N > 65535 {
		return family.Kernel{}, fmt.Errorf("dgradwin: config %s: a grid of %d fold row tiles by %d images is past CUDA's limits", cfg, g.TilesM, s.N)
	}
	if g.NB > 256 {
		return family.Kernel{}, fmt.Errorf("dgradwin: config %s: %d folded columns past wgmma's N of 256", cfg, g.CF)
	}
	name := fmt.Sprintf("convgen_dgradwin_%s_%s", family.PrecisionTag(p.Precision), family.KernelSuffix(cfg))
	doc := "FP32 data as TF32 operands (both rounded as they are staged), FP32 accumulation and output"
	switch {
	case g.Split3:
		doc = "FP32 data split into TF32 high and low parts as they are staged (3xTF32: three products a step), FP32 accumulation and output"
	case g.ElemBytes == 2:
		doc = fmt.Sprintf("%s data and operands, FP32 accumulation, the output rounded once", p.Precision)
	}
	accOps, accCons := hopper.AccOperands(g.Acc)
	data := struct {
		family.ShapeData
		geometry
		knobs
		Name, Config, Doc        string
		AccOperands, AccConstrs  string
		DescAOperand, ScaleOp    int
		DescBOperand, TileColsIn int
	}{family.NewShapeData(p), g, k, name, cfg.String(), doc, accOps, accCons, g.Acc, g.Acc + 2, g.Acc + 1, TileCols}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src, ArchSuffix: "a",
		Launch: family.Launch{Grid: [3]int{g.TilesN, g.TilesM, s.N}, Block: [3]int{g.Threads, 1, 1}, SharedBytes: g.SharedBytes}}, nil
}
