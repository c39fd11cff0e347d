// Package dgradphase holds the stride-phase tap tables of the data
// gradient (dgrad), shared by the families that split dX into stride
// phases (dgradmma, dgradscatter, igemm's op=dgrad) or fold them into the
// GEMM's columns (igemm's and wgmmaigemm's Fold, dgradwin). Along an axis of stride s, the dX
// indices of one phase ph (index ≡ ph mod s) all meet the same filter taps:
// those t with ph + pad − t·dil divisible by s. A phase is then a GEMM over
// its valid taps only, which never visits a stride hole; the templates read
// the taps and their output offsets from constant-memory tables that Go
// computes here.
package dgradphase

import (
	"fmt"
	"slices"
	"strings"

	"github.com/convgen/convgen/problem"
)

// Taps are one axis's stride phases: for phase ph (dX index ≡ ph mod the
// stride), Tap[ph] lists the filter taps t that land on an output index,
// and Off[ph] the offset each adds to the index within the phase: dX index
// ph + stride·i meets output index i + Off[ph][j] through tap Tap[ph][j].
type Taps struct {
	Tap, Off [][]int
	// Most is the most taps of a phase, at least 1 (the tables' width).
	Most int
}

// Axis lists, for each of stride phases, the taps t < n with
// ph + pad − t·dil divisible by stride, and (ph + pad − t·dil) / stride
// (exact) as their offsets.
func Axis(n, stride, pad, dil int) Taps {
	ts := Taps{Most: 1}
	for ph := range stride {
		var tap, off []int
		for t := range n {
			if d := ph + pad - t*dil; d%stride == 0 {
				tap, off = append(tap, t), append(off, d/stride)
			}
		}
		ts.Tap, ts.Off = append(ts.Tap, tap), append(ts.Off, off)
		ts.Most = max(ts.Most, len(tap))
	}
	return ts
}

// MaxPhases is the most stride phases (stride_h · stride_w) a folded data
// gradient takes: its tables and folded columns grow with them (a 1×1 at
// stride 2^29 would list 2^29 phases), and the generic family serves any
// stride.
const MaxPhases = 64

// Foldable says why s's data gradient is not folded into its stride
// phases, or nil.
func Foldable(s problem.Shape) error {
	if n := s.StrideH * s.StrideW; n > MaxPhases {
		return fmt.Errorf("a data gradient at stride %dx%d has %d stride phases, more than the %d a folded one takes", s.StrideH, s.StrideW, n, MaxPhases)
	}
	return nil
}

// Strided says why family fam, which computes a data gradient by its
// stride phases with an image a grid layer, does not serve s: a stride of
// 1 (one phase: nothing to split), more than MaxPhases phases, or more
// than 65535 images (gridDim.z); nil where it may.
func Strided(fam string, s problem.Shape) error {
	switch {
	case s.StrideH*s.StrideW == 1:
		return fmt.Errorf("%s serves strided data gradients (at stride 1 there is one phase: dgradmma, igemm and wgmmaigemm serve it)", fam)
	case s.StrideH*s.StrideW > MaxPhases:
		return fmt.Errorf("%s takes at most %d stride phases, not %d", fam, MaxPhases, s.StrideH*s.StrideW)
	case s.N > 65535:
		return fmt.Errorf("%s takes an image a grid layer (gridDim.z ≤ 65535), not N=%d", fam, s.N)
	}
	return nil
}

// Rows are s's filter rows' phases (R, stride, pad and dilation along H).
func Rows(s problem.Shape) Taps { return Axis(s.R, s.StrideH, s.PadH, s.DilationH) }

// Cols are s's filter columns' phases (S, stride, pad and dilation along
// W).
func Cols(s problem.Shape) Taps { return Axis(s.S, s.StrideW, s.PadW, s.DilationW) }

// OffsetSpan is the smallest range [lo, lo+n) holding every phase's
// output offsets along the axis (n ≥ 1; lo 0 when no phase has a tap).
func (ts Taps) OffsetSpan() (lo, n int) {
	first, hi := true, 0
	for _, offs := range ts.Off {
		for _, o := range offs {
			if first || o < lo {
				lo = o
			}
			if first || o > hi {
				hi = o
			}
			first = false
		}
	}
	if first {
		return 0, 1
	}
	return lo, hi - lo + 1
}

// Aligned shifts each phase's rows of the fold so that the phases'
// offsets share their top: phase ph's dX index ph + stride·(m − Shift[ph])
// sits on fold row m, and meets output index m + o − Shift[ph] for each of
// its offsets o, so that the offsets as the fold sees them (o − Shift[ph])
// span [Lo, Lo+N), N the widest phase's span rather than the union's (the
// flagship's 11-tap rows at stride 4 and padding 2: 3 instead of 4). The
// shifts are at least 0, the smallest 0; a phase without taps gets 0.
func (ts Taps) Aligned() (shift []int, lo, n int) {
	tops := make([]int, len(ts.Off))
	least, found := 0, false
	for ph, offs := range ts.Off {
		if len(offs) == 0 {
			continue
		}
		tops[ph] = slices.Max(offs)
		if !found || tops[ph] < least {
			least = tops[ph]
		}
		found = true
	}
	if !found {
		return make([]int, len(ts.Off)), 0, 1
	}
	shift = make([]int, len(ts.Off))
	lo = least
	for ph, offs := range ts.Off {
		if len(offs) == 0 {
			continue
		}
		shift[ph] = tops[ph] - least
		lo = min(lo, slices.Min(offs)-shift[ph])
	}
	return shift, lo, least - lo + 1
}

// Idle lists the phases that meet no tap (their dX is zero).
func (ts Taps) Idle() []int {
	var idle []int
	for ph, taps := range ts.Tap {
		if len(taps) == 0 {
			idle = append(idle, ph)
		}
	}
	return idle
}

// AlignedFold is a shape's folded data gradient with aligned phases
// (Taps.Aligned along both axes): the phase grid HP × WP (⌈H/stride_h⌉ and
// ⌈W/stride_w⌉ plus the largest shift), the aligned offsets DPMin ..
// DPMin+NDP−1 and DQMin .. DQMin+NDQ−1, and the shifts, also as C
// initialisers (SHIFT_H, SHIFT_W) with their largest values.
type AlignedFold struct {
	HP, WP, DPMin, NDP, DQMin, NDQ int
	ShiftH, ShiftW                 []int
	ShiftHMax, ShiftWMax           int
	ShiftHInit, ShiftWInit         string
}

// NewAlignedFold is s's AlignedFold.
func NewAlignedFold(s problem.Shape) AlignedFold {
	var f AlignedFold
	f.ShiftH, f.DPMin, f.NDP = Rows(s).Aligned()
	f.ShiftW, f.DQMin, f.NDQ = Cols(s).Aligned()
	f.ShiftHMax, f.ShiftWMax = slices.Max(f.ShiftH), slices.Max(f.ShiftW)
	f.HP = (s.H+s.StrideH-1)/s.StrideH + f.ShiftHMax
	f.WP = (s.W+s.StrideW-1)/s.StrideW + f.ShiftWMax
	f.ShiftHInit, f.ShiftWInit = CInts(f.ShiftH), CInts(f.ShiftW)
	return f
}

// CInts is v as a C initialiser's elements ("0, 0, 1, 1").
func CInts(v []int) string {
	b := make([]string, len(v))
	for i, x := range v {
		b[i] = fmt.Sprint(x)
	}
	return strings.Join(b, ", ")
}

// Count is the C initialiser of the taps per phase ("3, 2, 3, 3").
func (ts Taps) Count() string {
	b := make([]string, len(ts.Tap))
	for i, t := range ts.Tap {
		b[i] = fmt.Sprint(len(t))
	}
	return strings.Join(b, ", ")
}

// Table is the C initialiser of a [phases][Most] table of v (Tap or Off),
// each row zero-padded to Most ("{2, 6, 10}, {3, 7, 0}").
func (ts Taps) Table(v [][]int) string {
	rows := make([]string, len(v))
	for i, row := range v {
		cells := make([]string, ts.Most)
		for j := range cells {
			cells[j] = "0"
			if j < len(row) {
				cells[j] = fmt.Sprint(row[j])
			}
		}
		rows[i] = "{" + strings.Join(cells, ", ") + "}"
	}
	return strings.Join(rows, ", ")
}

// Tables are a shape's tap tables as the templates' constant-memory
// initialisers (embedded in their data, so a field is {{.NTR}}): per row
// phase NTR taps r = TRR[ph][i] with output row offset TRDP[ph][i], per
// column phase NTS taps s = TSS[pw][j] with output column offset
// TSDQ[pw][j]; MaxTR and MaxTS are the tables' widths.
type Tables struct {
	MaxTR, MaxTS                   int
	NTR, TRR, TRDP, NTS, TSS, TSDQ string
}

// NewTables are s's tap tables.
func NewTables(s problem.Shape) Tables {
	rows, cols := Rows(s), Cols(s)
	return Tables{MaxTR: rows.Most, MaxTS: cols.Most,
		NTR: rows.Count(), TRR: rows.Table(rows.Tap), TRDP: rows.Table(rows.Off),
		NTS: cols.Count(), TSS: cols.Table(cols.Tap), TSDQ: cols.Table(cols.Off)}
}
