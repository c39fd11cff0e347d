// Package dgradscatter is a data-gradient (dgrad) kernel family for
// strided layers with few input channels (a first layer's dX): a block
// holds a window of dY in shared memory, computes each dY pixel's products
// with a stride phase's filter taps, T[pixel][(c, r, s)] = Σ_k dY[pixel,
// k]·W[k, c, r, s], as a dense GEMM on tensor cores (mma.sync), and sums
// each dX element's products from shared memory (col2im). Rendered through
// package kernels/family from dgradscatter.cu.tmpl.
package dgradscatter

import (
	"embed"
	"fmt"
	"slices"
	"strings"

	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/kernels/internal/dgradphase"
	"github.com/convgen/convgen/kernels/internal/gradmma"
	"github.com/convgen/convgen/problem"
)

// templateFS holds the family's template.
//
//go:embed dgradscatter.cu.tmpl
var templateFS embed.FS

// MaxChannels is the most input channels C the family serves: the block
// keeps all C channels of its dX tile in shared memory.
const MaxChannels = 32

// MaxCols is the most columns of a phase's GEMM (C times its row taps
// times its column taps) the family serves: a warp's accumulators hold
// all of them.
const MaxCols = 128

// Family is the scatter-form tensor-core dgrad family
// (dgradscatter.cu.tmpl). It serves op=dgrad in tf32, 3xtf32, fp16 and
// bf16, both layouts, groups=1, C ≤ MaxChannels, a stride above 1 along
// some axis, any padding and dilation, on sm_80 and newer. Where the
// phase GEMMs of dgradmma and the folded GEMM of wgmmaigemm and igemm
// gather dY once per tap (and fold the phases at the price of zero filter
// entries), this family reads each dY value of its window once into
// shared memory and computes the forward's products (plus the window's
// halo).
//
// A block owns a dX tile of TP·stride_h rows by TQ·stride_w columns (all C
// channels) of one image; the dY pixels whose taps reach it, a window of
// PSpan × QSpan pixels (TP × TQ plus a halo), are the GEMM's rows. For
// each stride phase of the tile (dX rows ≡ a mod stride_h, columns ≡ b
// mod stride_w) the block computes the window's products with that
// phase's filter taps, all C channels (the columns, at most Cols of them),
// over K, into shared memory; each dX element of the phase then sums its
// taps' products (a fixed order: deterministic) into the block's rows of
// its row phase, stored (rounded once, along dX's contiguous axis) after
// the row phase's last column phase.
//
// Knobs:
//   - TP, TQ: the dY rows and columns whose dX pixels a block owns;
//   - WM: warps; the window's m16 row tiles are dealt to them in turn
//     (each computes every column).
type Family struct{}

// Name implements family.Family.
func (Family) Name() string { return "dgradscatter" }

// Template implements family.Family.
func (Family) Template() string { return "dgradscatter.cu.tmpl" }

// Serves implements family.Family.
func (Family) Serves(p problem.Problem) error {
	if err := family.Gradient("dgradscatter", problem.OpDgrad, p); err != nil {
		return err
	}
	if err := gradmma.Serves("dgradscatter", p); err != nil {
		return err
	}
	s := p.Shape
	if err := dgradphase.Strided("dgradscatter", s); err != nil {
		return err
	}
	switch {
	case s.C > MaxChannels:
		return fmt.Errorf("dgradscatter keeps a block's dX tile of every channel in shared memory: C ≤ %d (a first layer), not C=%d (dgradmma, igemm and wgmmaigemm serve it)", MaxChannels, s.C)
	case s.C*family.CeilDiv(s.R, s.StrideH)*family.CeilDiv(s.S, s.StrideW) > MaxCols:
		// A lower bound of the columns (some phase has at least
		// ⌈R/stride_h⌉ row taps), checked before the tap tables are built.
		return fmt.Errorf("dgradscatter computes a phase's products with all its taps at once: at most %d (C times a phase's taps), not at least %d", MaxCols, s.C*family.CeilDiv(s.R, s.StrideH)*family.CeilDiv(s.S, s.StrideW))
	}
	if cols := s.C * dgradphase.Rows(s).Most * dgradphase.Cols(s).Most; cols > MaxCols {
		return fmt.Errorf("dgradscatter computes a phase's products with all its taps at once: at most %d (C times a phase's taps), not %d", MaxCols, cols)
	}
	// The smallest tiles' shared memory: the window holds all K channels.
	small := geom(p, knobs{TP: slices.Min(tileSizes(s.P())), TQ: slices.Min(tileSizes(s.Q())), WM: spaceWarps[0]})
	if lim := family.DefaultLimits(90).MaxSharedPerBlock; small.Shared > lim {
		return fmt.Errorf("dgradscatter keeps the dY window's K channels in shared memory: K=%d needs %d B even for the smallest tiles, more than %d", s.K, small.Shared, lim)
	}
	return nil
}

// knobs are a configuration's knobs (see Family).
type knobs struct {
	TP, TQ, WM int
}

// axis is the tiling of one spatial axis of TP (or TQ) dY positions a
// tile: tile t's dX range starts at t·Tile − Shift; the dY positions whose
// taps reach it start at t·TP + Off and span Span positions; a product of
// the window's position i and tap r lands at the tile's position
// i·stride + r·dilation + Local; Tiles tiles cover the axis.
type axis struct {
	Tile, Shift, Off, Span, Local, Tiles int
	// Taps are the tile's stride phases: phase a's taps and the window
	// position each reads for the tile's a + stride·x: x + Taps.Off[a][u].
	Taps dgradphase.Taps
}

// floorDiv is ⌊a/b⌋ for b > 0.
func floorDiv(a, b int) int {
	if a >= 0 {
		return a / b
	}
	return -((-a + b - 1) / b)
}

// tileAxis tiles an axis of dX size x with t dY positions per tile at
// stride st, padding pad, r taps at dilation d: of the st shifts,
// the one with the fewest window positions over all tiles (then the
// narrowest window).
func tileAxis(x, t, st, pad, r, d int) axis {
	best := axis{}
	for shift := 0; shift < st; shift++ {
		tile := t * st
		off := -floorDiv(-(pad - shift - (r-1)*d), st) // ⌈(pad − shift − (r−1)d)/st⌉
		last := floorDiv(tile-1+pad-shift, st)
		a := axis{Tile: tile, Shift: shift, Off: off, Span: last - off + 1,
			Local: off*st - pad + shift, Tiles: family.CeilDiv(x+shift, tile)}
		// A product of window position i and tap r lands at i·st + r·d +
		// Local: tile position a + st·x takes tap r where a − Local − r·d
		// is a multiple of st, from window position x + (a − Local − r·d)/st.
		a.Taps = dgradphase.Axis(r, st, -a.Local, d)
		if best.Tile == 0 || a.Span*a.Tiles < best.Span*best.Tiles || (a.Span*a.Tiles == best.Span*best.Tiles && a.Span < best.Span) {
			best = a
		}
	}
	return best
}

// geometry holds a configuration's derived sizes; the template asserts
// each one it uses.
type geometry struct {
	Threads    int
	AH, AW     axis  // the row and column tilings
	Rows, MPad int   // window pixels, PSpan·QSpan, and rounded up to 16
	MT         int   // the window's m16 tiles, MPad/16, dealt to the warps in turn
	Cols, BN   int   // the most columns of a phase, C·(its row taps)·(its column taps), and rounded up to 8
	FM, FN     int   // a warp's fragments
	KPad, PK   int   // K rounded up to the mma's k, plus the row padding
	TPitch     int   // floats between two rows of the phase's products
	Phases     []int // the phases (a·stride_w + b) with taps, a-major
	PhaseEnd   []int // 1 where Phases[i] is its row phase's last
	ZeroRows   []int // the row phases without taps: their dX rows are zero
	SharedA    int   // bytes: the dY window
	SharedB    int   // bytes: two phases' filter taps
	SharedT    int   // bytes: a phase's FP32 products
	SharedO    int   // bytes: the phases' column offsets
	SharedX    int   // bytes: a row phase's FP32 dX rows
	Shared     int   // all five
}

func geom(p problem.Problem, k knobs) geometry {
	s := p.Shape
	mm := gradmma.For(p, "dX")
	var g geometry
	g.Threads = 32 * k.WM
	g.AH = tileAxis(s.H, k.TP, s.StrideH, s.PadH, s.R, s.DilationH)
	g.AW = tileAxis(s.W, k.TQ, s.StrideW, s.PadW, s.S, s.DilationW)
	g.Rows = g.AH.Span * g.AW.Span
	if k.WM > 0 {
		g.MPad = family.RoundUp(g.Rows, 16)
		g.MT = g.MPad / 16
		g.FM = family.CeilDiv(g.MT, k.WM)
	}
	g.Cols = s.C * g.AH.Taps.Most * g.AW.Taps.Most
	g.BN = family.RoundUp(g.Cols, 8)
	g.FN = g.BN / 8
	for a := range s.StrideH {
		for b := range s.StrideW {
			if len(g.AH.Taps.Tap[a]) > 0 && len(g.AW.Taps.Tap[b]) > 0 {
				g.Phases = append(g.Phases, a*s.StrideW+b)
				g.PhaseEnd = append(g.PhaseEnd, 0)
			}
		}
		if len(g.AH.Taps.Tap[a]) == 0 {
			g.ZeroRows = append(g.ZeroRows, a)
		} else {
			g.PhaseEnd[len(g.PhaseEnd)-1] = 1
		}
	}
	g.KPad = family.RoundUp(s.K, mm.KStep)
	g.PK = g.KPad + mm.Pad
	g.TPitch = g.BN + 3 // odd: conflict-free gathers down the rows; ≡ 3 mod 4: 2-way fragment stores
	e := p.Precision.ElementBytes()
	g.SharedA = g.MPad * g.PK * e
	g.SharedB = 2 * g.BN * g.PK * e
	g.SharedT = family.RoundUp(4*g.MPad*g.TPitch, 16)
	g.SharedO = family.RoundUp(4*len(g.Phases)*g.BN, 16)
	g.SharedX = 4 * s.C * k.TP * g.AW.Tile
	g.Shared = g.SharedA + g.SharedB + g.SharedT + g.SharedO + g.SharedX
	return g
}

// tileSizes are the tile extents the space tries along an axis of n dY
// positions: those that cut n into 1 to 8 near-equal tiles and a few
// small ones, between 2 and 32 (n itself where n < 2).
func tileSizes(n int) []int {
	var out []int
	seen := map[int]bool{}
	add := func(t int) {
		if t <= 32 && t <= n && t >= 2 && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for parts := 1; parts <= 8; parts++ {
		add(family.CeilDiv(n, parts))
	}
	for _, t := range []int{4, 6, 8, 12, 16} {
		add(t)
	}
	if len(out) == 0 {
		out = append(out, max(1, min(n, 32)))
	}
	return out
}

// spaceWarps are the warp counts the space takes.
var spaceWarps = []int{4, 8, 16}

// Space implements family.Family.
func (f Family) Space(p problem.Problem, lim family.Limits) []family.Candidate {
	var out []family.Candidate
	for _, tp := range tileSizes(p.Shape.P()) {
		for _, tq := range tileSizes(p.Shape.Q()) {
			for _, wm := range spaceWarps {
				k := knobs{TP: tp, TQ: tq, WM: wm}
				out = append(out, family.NewCandidate(f.Name(), k, reject(p, k, lim)))
			}
		}
	}
	return out
}

// check says what is wrong with a configuration's knobs, or "".
func check(k knobs) string {
	switch {
	case k.TP < 1 || k.TQ < 1:
		return "TP and TQ ≥ 1"
	case k.WM < 1 || k.WM > 16:
		return "WM 1 to 16 warps"
	}
	return ""
}

// reject returns why a configuration is not worth compiling, or the zero
// Rejection.
func reject(p problem.Problem, k knobs, lim family.Limits) family.Rejection {
	if msg := check(k); msg != "" {
		return family.Hard("shape", "%s", msg)
	}
	g := geom(p, k)
	s := p.Shape
	owned := k.TP * k.TQ
	blocks := g.AH.Tiles * g.AW.Tiles * s.N
	regs := lim.RegistersPerSM
	if regs == 0 {
		regs = 65536
	}
	switch {
	case lim.Arch != 0 && lim.Arch < 80:
		return family.Hard("arch", "dgradscatter needs mma.sync (sm_80), not sm_%d", lim.Arch)
	case g.FM*g.FN*4 > min(128, regs/g.Threads-40): // __launch_bounds__(THREADS) caps a thread at regs/THREADS
		return family.Hard("registers", "%d accumulators per thread in blocks of %d threads", g.FM*g.FN*4, g.Threads)
	case g.Threads > lim.MaxThreadsPerBlock:
		return family.Hard("threads", "%d per block > %d", g.Threads, lim.MaxThreadsPerBlock)
	case lim.MaxSharedPerBlock > 0 && g.Shared > lim.MaxSharedPerBlock:
		return family.Hard("shared memory", "%d B per block (dY window %d, filter taps %d, products %d, column offsets %d, dX rows %d) > %d", g.Shared, g.SharedA, g.SharedB, g.SharedT, g.SharedO, g.SharedX, lim.MaxSharedPerBlock)
	case g.AH.Tiles > 65535 || s.N > 65535:
		return family.Hard("grid", "%d × %d tiles by %d images is past CUDA's grid", g.AW.Tiles, g.AH.Tiles, s.N)
	case g.MPad > 320:
		return family.Soft("window", "a window of %d dY pixels (more than 320 rows)", g.Rows)
	case g.MPad < 96 && (k.TP < s.P() || k.TQ < s.Q()):
		return family.Soft("window", "a window of %d dY pixels (fewer than 96 rows) where the map has more", g.Rows)
	case g.FM*g.FN < 2:
		return family.Soft("warps", "%d fragments per warp", g.FM*g.FN)
	case g.MT < k.WM:
		return family.Soft("warps", "%d warps for %d m16 tiles", k.WM, g.MT)
	case 2*owned < g.Rows && owned < 64:
		return family.Soft("halo", "a %d-pixel window for %d owned pixels", g.Rows, owned)
	case lim.SMs > 0 && blocks < lim.SMs/2:
		return family.Soft("occupancy", "%d blocks for %d SMs", blocks, lim.SMs)
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
	if g.AH.Tiles > 65535 || s.N > 65535 {
		return family.Kernel{}, fmt.Errorf("dgradscatter: config %s: a grid of %d × %d tiles by %d images is past CUDA's limits", cfg, g.AW.Tiles, g.AH.Tiles, s.N)
	}
	mm := gradmma.For(p, "dX")
	name := fmt.Sprintf("convgen_dgradscatter_%s_%s", family.PrecisionTag(p.Precision), family.KernelSuffix(cfg))
	list := func(v []int) string {
		cells := make([]string, len(v))
		for i, x := range v {
			cells[i] = fmt.Sprint(x)
		}
		return strings.Join(cells, ", ")
	}
	data := struct {
		family.ShapeData
		geometry
		knobs
		Name, Config, PrecisionDoc, TypeName, MMAShape string
		Split3                                         bool
		MaxTR, MaxTS                                   int
		NTR, TRR, TRDI, NTS, TSS, TSDJ, PhaseList      string
		PhaseEndList, ZeroRowList                      string
		ColOff                                         string
	}{family.NewShapeData(p), g, k, name, cfg.String(), mm.Doc, mm.TypeName, mm.Shape, mm.Split3,
		g.AH.Taps.Most, g.AW.Taps.Most,
		g.AH.Taps.Count(), g.AH.Taps.Table(g.AH.Taps.Tap), g.AH.Taps.Table(g.AH.Taps.Off),
		g.AW.Taps.Count(), g.AW.Taps.Table(g.AW.Taps.Tap), g.AW.Taps.Table(g.AW.Taps.Off),
		list(g.Phases), list(g.PhaseEnd), list(g.ZeroRows), colOffsets(p, g)}
	src, err := family.Render(templateFS, f.Template(), data)
	if err != nil {
		return family.Kernel{}, err
	}
	return family.Kernel{Family: f.Name(), Config: cfg, Name: name, Source: src,
		Launch: family.Launch{Grid: [3]int{g.AW.Tiles, g.AH.Tiles, s.N}, Block: [3]int{g.Threads, 1, 1}, SharedBytes: g.Shared}}, nil
}

// colOffsets is the template's COLOFF initialiser: for each phase with
// taps (g.Phases) and each of its BN columns j = (c·NTR[a] + u)·NTS[b] +
// v, the offset of W[0, c, r, s] in the layout's filter for its taps r =
// Tap[a][u], s = Tap[b][v]; -1 past the phase's columns.
func colOffsets(p problem.Problem, g geometry) string {
	s := p.Shape
	var cells []string
	for _, ph := range g.Phases {
		rows, cols := g.AH.Taps.Tap[ph/s.StrideW], g.AW.Taps.Tap[ph%s.StrideW]
		for j := range g.BN {
			off := -1
			if j < s.C*len(rows)*len(cols) {
				c, u, v := j/(len(rows)*len(cols)), j/len(cols)%len(rows), j%len(cols)
				r, sc := rows[u], cols[v]
				if p.Layout == problem.NHWC {
					off = (r*s.S+sc)*s.C + c
				} else {
					off = (c*s.R+r)*s.S + sc
				}
			}
			cells = append(cells, fmt.Sprint(off))
		}
	}
	return strings.Join(cells, ", ")
}

// Cost implements family.CostModel: the padded tensor-core work of every
// block (window rows × a phase's columns × KPad, for each phase with taps)
// plus its window's copy, in waves of the blocks that fit an SM at once
// (shared memory, threads), slowed where fewer than 16 warps share an SM.
func (Family) Cost(p problem.Problem, cfg family.Config, lim family.Limits) float64 {
	k, err := family.ParseKnobs[knobs]("dgradscatter", cfg)
	if err != nil || check(k) != "" {
		return 1e30
	}
	g := geom(p, k)
	perSM := 1
	if g.Shared > 0 && lim.MaxSharedPerBlock > 0 {
		perSM = max(1, min((lim.MaxSharedPerBlock+1024)/(g.Shared+1024), 2048/g.Threads))
	}
	sms := max(lim.SMs, 1)
	blocks := g.AH.Tiles * g.AW.Tiles * p.Shape.N
	waves := family.CeilDiv(blocks, sms*perSM)
	work := float64(g.MPad)*float64(len(g.Phases)*g.BN)*float64(g.KPad) + 64*float64(g.Rows*g.KPad)
	warps := perSM * g.Threads / 32
	slow := 1.0
	if warps < 16 { // each phase's two barriers and its short GEMM leave few warps idle-free
		slow = 16 / float64(warps)
	}
	return float64(waves) * float64(perSM) * work * slow
}
