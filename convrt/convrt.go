package convrt

import (
	"errors"
	"fmt"
	"math"

	"github.com/convgen/convgen/problem"
)

// SupportVersion1 is the generation of generated packages this runtime
// supports: each generated package refers to it (const _ =
// convrt.SupportVersion1), so that it fails to compile against a runtime
// without it.
const SupportVersion1 = 1

// DevicePtr is a device memory address. PtrOf converts a gorgonia.org/cu
// DevicePtr, as does DevicePtr(p).
type DevicePtr uintptr

// Stream is a raw CUstream handle; 0 is the legacy default stream. StreamOf
// converts a gorgonia.org/cu Stream.
type Stream uintptr

// Alignment is the byte alignment Forward requires of every device address
// (the kernels load and store up to 16 bytes at a time; cuMemAlloc returns
// 256-byte aligned memory).
const Alignment = 16

// ErrNoCUDA is wrapped by the errors of Load, LoadPTX, Forward and Close in
// builds without the cuda build tag.
var ErrNoCUDA = errors.New("built without the cuda build tag; rebuild with -tags cuda to run the kernel")

// ErrClosed is wrapped by the error of Forward on a closed Kernel.
var ErrClosed = errors.New("the kernel was closed")

// Conv is a loaded convolution kernel of any generated package: *Kernel
// implements it.
type Conv interface {
	// Forward enqueues out = conv(in, filter) + bias on stream and returns
	// without waiting; see Kernel.Forward.
	Forward(stream Stream, out, in, filter, bias DevicePtr) error
	// Info describes the kernel and the problem it solves.
	Info() Info
	// Close unloads the kernel; see Kernel.Close.
	Close() error
}

// Info describes a loaded kernel.
type Info struct {
	// Package is the generated package the kernel comes from.
	Package string
	// Problem is the convolution: shape, precision and layout.
	Problem problem.Problem
	// TunedArch is the architecture of the package's CUBIN, e.g. sm_90a.
	TunedArch string
	// Image names what was loaded: "sm_90a CUBIN" or "PTX (compute_80)".
	Image string
	// Launch is the loaded kernel's name and launch geometry.
	Launch Launch
}

// Launch is a kernel's __global__ function name and launch geometry.
type Launch struct {
	Kernel      string // __global__ function name (extern "C")
	Grid, Block [3]int // blocks and threads per block along x, y, z
	SharedBytes int    // dynamic shared memory per block, in bytes
}

// Image is one embedded kernel image and how to launch its kernel.
type Image struct {
	// Code is the CUBIN or PTX; empty when the package embeds none (also in
	// builds without the cuda tag, which embed no images).
	Code string
	// CC is the compute capability as major*10 + minor: for a CUBIN the
	// one it was built for (sm_90a: 90), for PTX the least it runs on.
	CC int
	Launch
}

// Spec is what a generated package hands to Load and LoadPTX.
type Spec struct {
	Package   string          // the generated package's name, in front of its errors
	Problem   problem.Problem // the convolution
	TunedArch string          // the CUBIN's architecture, e.g. sm_90 or sm_90a
	CUBIN     Image           // the kernel tuned for TunedArch
	PTX       Image           // the portable kernel for other GPUs, Code "" when none
}

// Validate checks the parts of s that do not depend on the build: the
// problem and both launch geometries. A generated package's shape test calls
// it.
func (s *Spec) Validate() error {
	if s == nil {
		return errors.New("convrt: nil spec")
	}
	if s.Package == "" {
		return errors.New("convrt: spec without a package name")
	}
	if err := s.Problem.Shape.Validate(); err != nil {
		return fmt.Errorf("%s: %w", s.Package, err)
	}
	if s.Problem.Precision.ElementBytes() != 2 && s.Problem.Precision.ElementBytes() != 4 {
		return fmt.Errorf("%s: precision %q", s.Package, s.Problem.Precision)
	}
	if s.Problem.Layout != problem.NCHW && s.Problem.Layout != problem.NHWC {
		return fmt.Errorf("%s: layout %q: must be nchw or nhwc", s.Package, s.Problem.Layout)
	}
	if err := s.Problem.Epilogue.Validate(); err != nil {
		return fmt.Errorf("%s: epilogue: %w", s.Package, err)
	}
	if !s.Problem.Op.Valid() || (s.Problem.Op != problem.OpFprop && len(s.Problem.Epilogue) > 0) {
		return fmt.Errorf("%s: op %s with epilogue %q: %w", s.Package, s.Problem.Op, s.Problem.Epilogue, problem.ErrEpilogueOp)
	}
	if o := s.Problem.OutPrecision; o != "" && (!o.Valid() || !s.Problem.OutDiffers()) {
		return fmt.Errorf("%s: output precision %q: must be fp32, fp16 or bf16, and not the precision's own type (%s)", s.Package, o, s.Problem.Precision)
	}
	if s.Problem.Op != problem.OpFprop && s.Problem.OutDiffers() {
		return fmt.Errorf("%s: op %s with output precision %s: %w", s.Package, s.Problem.Op, s.Problem.OutPrecision, problem.ErrOutPrecisionOp)
	}
	if err := s.CUBIN.Launch.check(); err != nil {
		return fmt.Errorf("%s: CUBIN: %w", s.Package, err)
	}
	if s.CUBIN.CC < 10 {
		return fmt.Errorf("%s: CUBIN: compute capability %d", s.Package, s.CUBIN.CC)
	}
	if s.PTX.Kernel != "" {
		if err := s.PTX.Launch.check(); err != nil {
			return fmt.Errorf("%s: PTX: %w", s.Package, err)
		}
		if s.PTX.CC < 10 {
			return fmt.Errorf("%s: PTX: compute capability %d", s.Package, s.PTX.CC)
		}
	}
	return nil
}

// The CUDA launch limits of every GPU since compute capability 3.0: blocks
// per grid along x, y and z, and threads per block along x, y and z and in
// all.
var (
	maxGrid  = [3]int{1<<31 - 1, 65535, 65535}
	maxBlock = [3]int{1024, 1024, 64}
)

const maxThreads = 1024

// check checks a launch geometry against the CUDA launch limits, each
// dimension before their product, so that no product overflows.
func (l Launch) check() error {
	if l.Kernel == "" {
		return errors.New("no kernel name")
	}
	threads := 1
	for i := range 3 {
		if l.Grid[i] < 1 || l.Block[i] < 1 {
			return fmt.Errorf("kernel %s: grid %v, block %v: every dimension must be positive", l.Kernel, l.Grid, l.Block)
		}
		if l.Grid[i] > maxGrid[i] || l.Block[i] > maxBlock[i] {
			return fmt.Errorf("kernel %s: grid %v, block %v: at most grid %v and block %v", l.Kernel, l.Grid, l.Block, maxGrid, maxBlock)
		}
		threads *= l.Block[i]
	}
	if threads > maxThreads {
		return fmt.Errorf("kernel %s: block %v has %d threads: at most %d", l.Kernel, l.Block, threads, maxThreads)
	}
	if l.SharedBytes < 0 || l.SharedBytes > math.MaxInt32 {
		return fmt.Errorf("kernel %s: %d bytes of shared memory", l.Kernel, l.SharedBytes)
	}
	return nil
}

// CheckPtrs returns an error naming the first of out, in, filter and bias
// (bias only when the problem has one) that is 0 or not Alignment-aligned,
// or nil. Forward calls it before launching.
func CheckPtrs(p problem.Problem, out, in, filter, bias DevicePtr) error {
	ptrs := []struct {
		name string
		p    DevicePtr
	}{{"out", out}, {"in", in}, {"filter", filter}, {"bias", bias}}
	if !p.Shape.Bias {
		ptrs = ptrs[:3]
	}
	for _, a := range ptrs {
		if a.p == 0 {
			return fmt.Errorf("%s is a null device address", a.name)
		}
		if a.p%Alignment != 0 {
			return fmt.Errorf("%s (%#x) is not %d-byte aligned", a.name, uintptr(a.p), Alignment)
		}
	}
	return nil
}
