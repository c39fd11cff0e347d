package dgradmma

import (
	"fmt"
	"testing"
)

// TestPhaseTaps: for each stride phase the taps that land on output pixels
// and their output offsets, checked against the definition (h + pad -
// t*dil = p*stride) pixel by pixel.
func TestPhaseTaps(t *testing.T) {
	ts := phaseTaps(11, 4, 2, 1) // the flagship's rows
	if got := fmt.Sprint(ts.tap, ts.off, ts.most); got != "[[2 6 10] [3 7] [0 4 8] [1 5 9]] [[0 -1 -2] [0 -1] [1 0 -1] [1 0 -1]] 3" {
		t.Errorf("flagship taps %s", got)
	}
	for _, c := range []struct{ n, stride, pad, dil int }{{11, 4, 2, 1}, {3, 2, 1, 1}, {2, 4, 1, 4}, {5, 3, 4, 2}, {1, 1, 0, 1}, {3, 1, 1, 1}} {
		ts := phaseTaps(c.n, c.stride, c.pad, c.dil)
		for h := range 40 {
			ph, i := h%c.stride, h/c.stride
			want := map[int]int{}
			for tap := range c.n {
				if d := h + c.pad - tap*c.dil; d%c.stride == 0 {
					want[tap] = d / c.stride
				}
			}
			got := map[int]int{}
			for j, tap := range ts.tap[ph] {
				got[tap] = i + ts.off[ph][j]
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%+v: pixel %d: taps→output %v, want %v", c, h, got, want)
			}
		}
	}
}
