package convrt

import (
	"fmt"

	"github.com/convgen/convgen/problem"
)

// Grad is a loaded kernel of a gradient op (problem.OpDgrad or OpWgrad):
// *Kernel implements it, offering BackwardData for dgrad and
// BackwardFilter for wgrad (the other method, and Forward, return an error
// naming the kernel's op).
type Grad interface {
	// BackwardData enqueues dX = conv^T(dY, W) on stream; see
	// Kernel.BackwardData.
	BackwardData(stream Stream, dY, w, dX DevicePtr) error
	// BackwardFilter enqueues dW = Σ dY ⊗ X and dBias = Σ dY on stream;
	// see Kernel.BackwardFilter.
	BackwardFilter(stream Stream, x, dY, dW, dBias DevicePtr) error
	// Info describes the kernel and the problem it solves.
	Info() Info
	// Close unloads the kernel; see Kernel.Close.
	Close() error
}

// kernelArgs orders an op's device addresses as its kernel takes them
// (problem.Op: out, in, filter, bias), after checking that p's op is op
// (else the error names the method that runs p's op) and that every
// operand p has is a non-null, Alignment-aligned address; an operand p
// lacks (dgrad's fourth, a bias or dBias of a shape without bias) is
// passed as 0 whatever the caller gave.
func kernelArgs(p problem.Problem, op problem.Op, named map[string]DevicePtr) ([4]uint64, error) {
	var args [4]uint64
	if p.Op != op {
		return args, fmt.Errorf("the kernel computes op=%s, not op=%s: call %s", p.Op, op, methodOf(p.Op))
	}
	for i, o := range p.Operands() {
		if o.Name == "" || o.Elems == 0 {
			continue
		}
		ptr := named[o.Name]
		if ptr == 0 {
			return args, fmt.Errorf("%s is a null device address", o.Name)
		}
		if ptr%Alignment != 0 {
			return args, fmt.Errorf("%s (%#x) is not %d-byte aligned", o.Name, uintptr(ptr), Alignment)
		}
		args[i] = uint64(ptr)
	}
	return args, nil
}

// methodOf names the Kernel method that runs op.
func methodOf(op problem.Op) string {
	switch op {
	case problem.OpDgrad:
		return "BackwardData"
	case problem.OpWgrad:
		return "BackwardFilter"
	}
	return "Forward"
}

// CheckGradPtrs returns an error naming the first operand of p's gradient
// op that is 0 or not Alignment-aligned, or whose op is not p's; nil when
// BackwardData (dgrad: dY, W, dX) or BackwardFilter (wgrad: X, dY, dW, and
// dBias when the shape has a bias) may launch with them.
func CheckGradPtrs(p problem.Problem, op problem.Op, ptrs map[string]DevicePtr) error {
	_, err := kernelArgs(p, op, ptrs)
	return err
}

// ReferenceDgrad computes dX[n][c][h][w] of p in float64 from the elements
// as they are (dY in the output's layout, w the forward filter): the sum
// over the output channels k of c's group and the taps (r, s) for which
// h+PadH−r·DilationH and w+PadW−s·DilationW are whole multiples of the
// strides landing inside the output, of dY[n][k][p][q]·W[k][c mod C/G][r][s].
func ReferenceDgrad[E Element](p problem.Problem, decode func(E) float64, dY, w []E, n, c, h, x int) float64 {
	s := p.Shape
	cg, kg := s.C/s.Groups, s.K/s.Groups
	g := c / cg
	sum := 0.0
	for k := g * kg; k < (g+1)*kg; k++ {
		for r := range s.R {
			ph := h + s.PadH - r*s.DilationH
			if ph < 0 || ph%s.StrideH != 0 || ph/s.StrideH >= s.P() {
				continue
			}
			for t := range s.S {
				qw := x + s.PadW - t*s.DilationW
				if qw < 0 || qw%s.StrideW != 0 || qw/s.StrideW >= s.Q() {
					continue
				}
				sum += decode(dY[OutputAt(p, At{N: n, K: k, P: ph / s.StrideH, Q: qw / s.StrideW})]) * decode(w[FilterAt(p, k, c-g*cg, r, t)])
			}
		}
	}
	return sum
}

// ReferenceWgrad computes dW[k][c][r][s] of p in float64 (c counts within
// k's channel group) from the elements as they are: the sum over n, p and q
// of dY[n][k][p][q]·X[n][g·C/G+c][h][w], input positions in the padding
// adding nothing.
func ReferenceWgrad[E Element](p problem.Problem, decode func(E) float64, x, dY []E, k, c, r, t int) float64 {
	s := p.Shape
	cg := s.C / s.Groups
	xc := k/(s.K/s.Groups)*cg + c
	sum := 0.0
	for n := range s.N {
		for pp := range s.P() {
			h := pp*s.StrideH - s.PadH + r*s.DilationH
			if h < 0 || h >= s.H {
				continue
			}
			for q := range s.Q() {
				w := q*s.StrideW - s.PadW + t*s.DilationW
				if w < 0 || w >= s.W {
					continue
				}
				sum += decode(dY[OutputAt(p, At{N: n, K: k, P: pp, Q: q})]) * decode(x[InputAt(p, n, xc, h, w)])
			}
		}
	}
	return sum
}

// ReferenceBiasGrad computes dBias[k] of p in float64: the sum of dY over
// n, p and q.
func ReferenceBiasGrad[E Element](p problem.Problem, decode func(E) float64, dY []E, k int) float64 {
	s := p.Shape
	sum := 0.0
	for n := range s.N {
		for pp := range s.P() {
			for q := range s.Q() {
				sum += decode(dY[OutputAt(p, At{N: n, K: k, P: pp, Q: q})])
			}
		}
	}
	return sum
}
