package family

import (
	"fmt"
	"strings"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/problem"
)

// Epilogue is the epilogue chain's part of every template's data
// (ShapeData.Epilogue): the one mechanism by which every family applies
// the chain. For the empty chain each of its methods renders nothing (or,
// Apply, the value unchanged), so a kernel without an epilogue renders to
// the same source as before chains existed.
//
// A family's template applies a chain in four places:
//
//	{{.Epilogue.Defs}}       before the kernel (and before helpers that store):
//	                         the chain's device function, convgen_ep
//	...bias{{.Epilogue.Params}})    the __global__ function's extra parameters,
//	                         after bias: ep_scale, ep_shift (K floats each) when
//	                         the chain has scale_shift, ep_residual (the output's
//	                         element type and layout) when it has residual
//	helper(...{{.Epilogue.Params}}), helper(...{{.Epilogue.Args}})
//	                         the same pointers passed on to __device__ helpers
//	                         that store outputs
//	{{.Epilogue.Apply "v" "k" "off"}}  at the store: the value v (FP32, bias
//	                         included) with the chain applied, k its output
//	                         channel, off its element offset in the output
//	                         (or ApplyLoaded "v" "k" "z", with the residual
//	                         element z read by the template beforehand)
type Epilogue struct {
	// Chain is the chain to apply; empty for none.
	Chain epilogue.Chain
	// Half and BF16 give the residual's element type (the output's, which
	// -out-precision may make other than the input's): float, or 2-byte
	// FP16 or BF16 bits.
	Half, BF16 bool
	// OutDiffers says that the output's (and so the residual's) type is
	// not the input's: the checking kernels then read the residual with
	// out_to_double (Output.Defs) rather than the input's to_double.
	OutDiffers bool
}

// NewEpilogue is p's Epilogue.
func NewEpilogue(p problem.Problem) Epilogue {
	out := p.Out()
	return Epilogue{Chain: p.Epilogue, Half: out.Half(), BF16: out == problem.StorageBF16, OutDiffers: p.OutDiffers()}
}

// On reports whether there is a chain to apply.
func (e Epilogue) On() bool { return len(e.Chain) > 0 }

// residualType is the C type of the residual tensor's elements.
func (e Epilogue) residualType() string {
	if e.Half {
		return "unsigned short"
	}
	return "float"
}

// Params is the list of extra kernel parameters, each preceded by ", ":
// "" for the empty chain.
func (e Epilogue) Params() string {
	var b strings.Builder
	if e.Chain.NeedsScaleShift() {
		b.WriteString(", const float* __restrict__ ep_scale, const float* __restrict__ ep_shift")
	}
	if e.Chain.NeedsResidual() {
		fmt.Fprintf(&b, ", const %s* __restrict__ ep_residual", e.residualType())
	}
	return b.String()
}

// Args is the list of the extra parameters' names, each preceded by ", ",
// to pass them on to a helper declared with Params: "" for the empty chain.
func (e Epilogue) Args() string {
	var b strings.Builder
	if e.Chain.NeedsScaleShift() {
		b.WriteString(", ep_scale, ep_shift")
	}
	if e.Chain.NeedsResidual() {
		b.WriteString(", ep_residual")
	}
	return b.String()
}

// Apply is the expression of the float value v with the chain applied,
// k (an int expression) its output channel and off (an integer expression)
// its element offset in the output: v itself for the empty chain.
func (e Epilogue) Apply(v, k, off string) string {
	if !e.On() {
		return v
	}
	return fmt.Sprintf("convgen_ep(%s, %s, %s%s)", v, k, off, e.Args())
}

// ApplyLoaded is Apply for a template that has read the residual element
// itself (early, to hide the load's latency): the chain applied to the
// float value v at channel k, with z (a float expression) the residual
// element at v's output offset. z is not evaluated by a chain without
// residual (0 is passed in its place). v itself for the empty chain.
func (e Epilogue) ApplyLoaded(v, k, z string) string {
	if !e.On() {
		return v
	}
	if !e.Chain.NeedsResidual() {
		z = "0.0f"
	}
	scale, shift := "nullptr", "nullptr"
	if e.Chain.NeedsScaleShift() {
		scale, shift = "ep_scale", "ep_shift"
	}
	return fmt.Sprintf("%s(%s, %s, %s, %s, %s)", epilogue.FuncName, v, k, scale, shift, z)
}

// Defs is the chain's device code, to render before the kernel and the
// helpers that call Apply: epilogue.CUDA's convgen_epilogue and the
// wrapper convgen_ep that reads the residual at an output offset. "" for
// the empty chain.
func (e Epilogue) Defs() string {
	if !e.On() {
		return ""
	}
	var b strings.Builder
	b.WriteString(epilogue.CUDA(e.Chain))
	b.WriteString("// convgen_ep applies the chain to y, the output at channel k and element offset i.\n")
	fmt.Fprintf(&b, "__device__ __forceinline__ float convgen_ep(float y, int k, long long i%s)\n{\n", e.Params())
	z := "0.0f"
	if e.Chain.NeedsResidual() {
		switch {
		case !e.Half:
			z = "ep_residual[i]"
		case e.BF16:
			z = "__uint_as_float(((unsigned int)ep_residual[i]) << 16)"
		default:
			b.WriteString("    float z; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(z) : \"h\"(ep_residual[i]));\n")
			z = "z"
		}
	} else {
		b.WriteString("    (void)i;\n")
	}
	scale, shift := "nullptr", "nullptr"
	if e.Chain.NeedsScaleShift() {
		scale, shift = "ep_scale", "ep_shift"
	}
	fmt.Fprintf(&b, "    return %s(y, k, %s, %s, %s);\n}\n", epilogue.FuncName, scale, shift, z)
	return b.String()
}

// Defs64 is the chain in double precision for the checking kernels'
// reference, convgen_ep64(y, k, i) over the same parameters (Params): ""
// for the empty chain.
func (e Epilogue) Defs64() string {
	if !e.On() {
		return ""
	}
	var b strings.Builder
	b.WriteString(epilogue.CUDA64(e.Chain))
	fmt.Fprintf(&b, "__device__ __forceinline__ double convgen_ep64(double y, int k, long long i%s)\n{\n", e.Params())
	z := "0.0"
	if e.Chain.NeedsResidual() {
		z = "to_double(ep_residual[i])"
		if e.OutDiffers {
			z = "out_to_double(ep_residual[i])"
		}
	} else {
		b.WriteString("    (void)i;\n")
	}
	scale, shift := "nullptr", "nullptr"
	if e.Chain.NeedsScaleShift() {
		scale, shift = "ep_scale", "ep_shift"
	}
	fmt.Fprintf(&b, "    return %s(y, k, %s, %s, %s);\n}\n", epilogue.FuncName64, scale, shift, z)
	return b.String()
}

// Apply64 is Apply for the reference: convgen_ep64.
func (e Epilogue) Apply64(v, k, off string) string {
	if !e.On() {
		return v
	}
	return fmt.Sprintf("convgen_ep64(%s, %s, %s%s)", v, k, off, e.Args())
}

// EpilogueSupport is implemented by the families that apply epilogue
// chains. package kernels offers a problem with a non-empty chain only to
// families that implement it and accept the chain, so that a family that
// does not know of chains is never asked to compute a wrong answer.
type EpilogueSupport interface {
	// SupportsEpilogue returns nil when the family's kernels apply c, or
	// why not.
	SupportsEpilogue(c epilogue.Chain) error
}
