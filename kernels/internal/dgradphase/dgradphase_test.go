package dgradphase

import (
	"fmt"
	"slices"
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestAxis: for each stride phase the taps that land on output pixels and
// their output offsets, checked against the definition (h + pad - t*dil =
// p*stride) pixel by pixel.
func TestAxis(t *testing.T) {
	ts := Axis(11, 4, 2, 1) // the flagship's rows
	if got := fmt.Sprint(ts.Tap, ts.Off, ts.Most); got != "[[2 6 10] [3 7] [0 4 8] [1 5 9]] [[0 -1 -2] [0 -1] [1 0 -1] [1 0 -1]] 3" {
		t.Errorf("flagship taps %s", got)
	}
	for _, c := range []struct{ n, stride, pad, dil int }{{11, 4, 2, 1}, {3, 2, 1, 1}, {2, 4, 1, 4}, {5, 3, 4, 2}, {1, 1, 0, 1}, {3, 1, 1, 1}} {
		ts := Axis(c.n, c.stride, c.pad, c.dil)
		for h := range 40 {
			ph, i := h%c.stride, h/c.stride
			want := map[int]int{}
			for tap := range c.n {
				if d := h + c.pad - tap*c.dil; d%c.stride == 0 {
					want[tap] = d / c.stride
				}
			}
			got := map[int]int{}
			for j, tap := range ts.Tap[ph] {
				got[tap] = i + ts.Off[ph][j]
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%+v: pixel %d: taps→output %v, want %v", c, h, got, want)
			}
		}
	}
}

// TestTables: the C initialisers of the flagship's rows (11 taps, stride
// 4, pad 2) and of an unstrided axis, zero-padded to the widest phase.
func TestTables(t *testing.T) {
	s := problem.Shape{R: 11, S: 3, StrideH: 4, StrideW: 1, PadH: 2, PadW: 1, DilationH: 1, DilationW: 1}
	got := NewTables(s)
	want := Tables{MaxTR: 3, MaxTS: 3,
		NTR: "3, 2, 3, 3", TRR: "{2, 6, 10}, {3, 7, 0}, {0, 4, 8}, {1, 5, 9}", TRDP: "{0, -1, -2}, {0, -1, 0}, {1, 0, -1}, {1, 0, -1}",
		NTS: "3", TSS: "{0, 1, 2}", TSDQ: "{1, 0, -1}"}
	if got != want {
		t.Errorf("tables\n got %+v\nwant %+v", got, want)
	}
}

// TestFoldable: a data gradient folds up to MaxPhases stride phases.
func TestFoldable(t *testing.T) {
	for _, c := range []struct {
		sh, sw int
		ok     bool
	}{{1, 1, true}, {4, 4, true}, {8, 8, true}, {2, 33, false}, {536870911, 1, false}, {536870911, 536870911, false}} {
		err := Foldable(problem.Shape{StrideH: c.sh, StrideW: c.sw})
		if (err == nil) != c.ok {
			t.Errorf("stride %dx%d: %v, want ok %v", c.sh, c.sw, err, c.ok)
		}
	}
}

// TestAligned: the flagship's rows (11 taps, stride 4, padding 2) span 4
// offsets unaligned and 3 aligned, the phases with the higher top shifted
// by one; every phase's aligned offsets lie in the span; a 7×7 at stride 2
// (its phases' tops differ too: 1 and 2) gains nothing in span; a phase
// without taps shifts by 0.
func TestAligned(t *testing.T) {
	for _, c := range []struct {
		n, stride, pad, dil int
		shift               []int
		lo, span, union     int
	}{
		{11, 4, 2, 1, []int{0, 0, 1, 1}, -2, 3, 4},
		{7, 2, 3, 1, []int{0, 1}, -2, 4, 4},
		{1, 2, 0, 1, []int{0, 0}, 0, 1, 1},
		{3, 1, 1, 1, []int{0}, -1, 3, 3},
	} {
		ts := Axis(c.n, c.stride, c.pad, c.dil)
		shift, lo, span := ts.Aligned()
		_, union := ts.OffsetSpan()
		if !slices.Equal(shift, c.shift) || lo != c.lo || span != c.span || union != c.union {
			t.Errorf("n=%d stride=%d pad=%d: Aligned = %v, %d, %d (union %d), want %v, %d, %d (union %d)", c.n, c.stride, c.pad, shift, lo, span, union, c.shift, c.lo, c.span, c.union)
		}
		for ph, offs := range ts.Off {
			for _, o := range offs {
				if a := o - shift[ph]; a < lo || a >= lo+span {
					t.Errorf("n=%d stride=%d pad=%d: phase %d offset %d aligned to %d, outside [%d, %d)", c.n, c.stride, c.pad, ph, o, a, lo, lo+span)
				}
			}
		}
	}
}
