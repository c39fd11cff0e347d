package convrt

import (
	"fmt"

	"github.com/convgen/convgen/problem"
)

// Epilogue holds the device addresses that a kernel with an epilogue chain
// (problem.Problem.Epilogue, docs/epilogue.md) reads besides its
// convolution's: the per-channel Scale and Shift vectors (K float32 each)
// when the chain has scale_shift, the Residual tensor (the output's shape,
// layout and element type) when it has residual, in memory that does not
// overlap the output's (the kernel's pointers are __restrict__). An address
// the chain does not read must be 0.
type Epilogue struct {
	Scale, Shift, Residual DevicePtr
}

// CheckEpilogue returns an error naming the first address of e that the
// problem's chain reads but that is 0 or not Alignment-aligned, or that it
// does not read but is set; nil when e fits the chain. ForwardEpilogue (and
// Forward, with a zero Epilogue) call it before launching.
func CheckEpilogue(p problem.Problem, e Epilogue) error {
	for _, a := range []struct {
		name string
		p    DevicePtr
		need bool
	}{{"scale", e.Scale, p.Epilogue.NeedsScaleShift()}, {"shift", e.Shift, p.Epilogue.NeedsScaleShift()},
		{"residual", e.Residual, p.Epilogue.NeedsResidual()}} {
		switch {
		case a.need && a.p == 0:
			return fmt.Errorf("the epilogue %s reads %s, a null device address (Forward takes none: call ForwardEpilogue)", p.Epilogue, a.name)
		case a.need && a.p%Alignment != 0:
			return fmt.Errorf("%s (%#x) is not %d-byte aligned", a.name, uintptr(a.p), Alignment)
		case !a.need && a.p != 0:
			return fmt.Errorf("%s is set (%#x) but the kernel's epilogue %q does not read it", a.name, uintptr(a.p), p.Epilogue.String())
		}
	}
	return nil
}

// args are the kernel's extra parameters for e, in the order the kernel
// takes them after bias: scale and shift (scale_shift), then residual.
func (e Epilogue) args(p problem.Problem) []uint64 {
	var a []uint64
	if p.Epilogue.NeedsScaleShift() {
		a = append(a, uint64(e.Scale), uint64(e.Shift))
	}
	if p.Epilogue.NeedsResidual() {
		a = append(a, uint64(e.Residual))
	}
	return a
}
