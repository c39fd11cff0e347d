package convrttest

import (
	"github.com/convgen/convgen/convrt"
	"github.com/convgen/convgen/problem"
)

// window is the set of outputs whose sum reads one input element: image n,
// output channels [k0, k1) (the element's channel group), and the output
// rows and columns marked in rows and cols.
type window struct {
	n, k0, k1  int
	rows, cols []bool
}

// windowOf returns the window of input element in[n][c][h][w] of p: output
// row pp reads input row h when pp·stride − pad + r·dilation = h for a tap
// r, and likewise for the columns.
func windowOf(p problem.Problem, n, c, h, w int) window {
	s := p.Shape
	kg := s.K / s.Groups
	g := c / (s.C / s.Groups)
	win := window{n: n, k0: g * kg, k1: (g + 1) * kg, rows: make([]bool, s.P()), cols: make([]bool, s.Q())}
	for pp := range win.rows {
		for r := range s.R {
			if pp*s.StrideH-s.PadH+r*s.DilationH == h {
				win.rows[pp] = true
			}
		}
	}
	for q := range win.cols {
		for t := range s.S {
			if q*s.StrideW-s.PadW+t*s.DilationW == w {
				win.cols[q] = true
			}
		}
	}
	return win
}

// holds reports whether output a reads the window's input element.
func (w window) holds(a convrt.At) bool {
	return a.N == w.n && a.K >= w.k0 && a.K < w.k1 && w.rows[a.P] && w.cols[a.Q]
}

// allOutputs yields every output position of s.
func allOutputs(s problem.Shape) func(func(convrt.At) bool) {
	return func(yield func(convrt.At) bool) {
		for n := range s.N {
			for k := range s.K {
				for p := range s.P() {
					for q := range s.Q() {
						if !yield(convrt.At{N: n, K: k, P: p, Q: q}) {
							return
						}
					}
				}
			}
		}
	}
}
