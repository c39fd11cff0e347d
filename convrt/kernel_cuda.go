//go:build cuda

package convrt

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/problem"
)

// CUStream is gorgonia.org/cu's Stream, which StreamOf converts. (In builds
// without the cuda tag, which cannot import gorgonia.org/cu, it is an empty
// stand-in.)
type CUStream = cu.Stream

// CUDevicePtr is gorgonia.org/cu's DevicePtr, which PtrOf converts.
type CUDevicePtr = cu.DevicePtr

// Stream and cu.Stream convert into each other through unsafe, which relies
// on cu.Stream being one CUstream handle (gorgonia.org/cu v0.9.6). This line
// fails to compile when the sizes differ.
var _ [0]struct{} = [unsafe.Sizeof(cu.Stream{}) - unsafe.Sizeof(Stream(0))]struct{}{}

// StreamOf converts a gorgonia.org/cu stream to the Stream that Forward
// takes.
func StreamOf(s CUStream) Stream {
	return *(*Stream)(unsafe.Pointer(&s))
}

// cuStream converts a Stream back to the gorgonia.org/cu stream it came from.
func cuStream(s Stream) cu.Stream {
	return *(*cu.Stream)(unsafe.Pointer(&s))
}

// PtrOf converts a gorgonia.org/cu device pointer to a DevicePtr.
func PtrOf(p CUDevicePtr) DevicePtr {
	return DevicePtr(p)
}

// Kernel is a loaded kernel, ready to launch in the context that was current
// when Load ran. It is safe for concurrent use (see the package
// documentation).
type Kernel struct {
	info Info
	mu   sync.RWMutex // held for reading by Forward, for writing by Close
	mod  cu.Module
	fn   cu.Function
	open bool // until Close

	// pre is the kernel's prologue, launched before it with the same
	// parameters where hasPre (kernels/launch.PrologueSuffix: a 16-bit
	// NCHW forward's relayout into workspaces of the module).
	pre    cu.Function
	hasPre bool

	// serial is set for a kernel whose module keeps a workspace in its
	// global memory (a wgrad reduction across clusters: the global
	// KERNEL_count; a prologue's copies): its launches must not overlap, so each one waits,
	// whatever its stream, for the one before (the event last, recorded
	// after every launch, under order).
	serial  bool
	order   sync.Mutex
	last    cu.Event
	started bool // last has been recorded
}

// workspaceSuffix names the global through which a module's kernel says
// it keeps a workspace (kernels/wgradmma's Clusters > 1).
const workspaceSuffix = "_count"

// Load loads s's kernel into the CUDA context current on the calling OS
// thread: call runtime.LockOSThread and make a context current first. On a
// GPU of s.TunedArch it loads the CUBIN; on any other of compute capability
// s.PTX.CC or more it loads the PTX (LoadPTX), as on every GPU when the
// package has no CUBIN (an untuned one); below, or without PTX, it
// returns an error that says so. An invalid s (Spec.Validate) is an error
// before anything is loaded.
func Load(s *Spec) (*Kernel, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	dev, err := cu.CurrentDevice()
	if err != nil {
		return nil, fmt.Errorf("%s: load: no CUDA context current on this thread (lock the OS thread and make one current first): %w", s.Package, err)
	}
	major, err := dev.Attribute(cu.ComputeCapabilityMajor)
	if err != nil {
		return nil, fmt.Errorf("%s: load: compute capability: %w", s.Package, err)
	}
	minor, err := dev.Attribute(cu.ComputeCapabilityMinor)
	if err != nil {
		return nil, fmt.Errorf("%s: load: compute capability: %w", s.Package, err)
	}
	if cc := major*10 + minor; cc == s.CUBIN.CC && s.CUBIN.Code != "" { // an untuned package has no CUBIN
		return load(s, s.CUBIN, s.TunedArch+" CUBIN")
	} else if s.PTX.Code == "" {
		return nil, fmt.Errorf("%s: load: the device is sm_%d%d, the CUBIN is for %s and no PTX is embedded", s.Package, major, minor, s.TunedArch)
	} else if cc < s.PTX.CC {
		return nil, fmt.Errorf("%s: load: the device is sm_%d%d, the CUBIN is for %s and the embedded PTX needs compute capability %d.%d or more", s.Package, major, minor, s.TunedArch, s.PTX.CC/10, s.PTX.CC%10)
	}
	return LoadPTX(s)
}

// LoadPTX loads the kernel of s's PTX, which the driver compiles for the
// current GPU, whatever the GPU (to run it on a TunedArch GPU too, as the
// generated tests do), into the context current on the calling OS thread.
// An invalid s (Spec.Validate) is an error before anything is loaded.
func LoadPTX(s *Spec) (*Kernel, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("load PTX: %w", err)
	}
	if s.PTX.Code == "" {
		return nil, fmt.Errorf("%s: load PTX: the package embeds none (its kernel is for %s only)", s.Package, s.TunedArch)
	}
	return load(s, s.PTX, fmt.Sprintf("PTX (compute_%d)", s.PTX.CC))
}

// load loads img, named what in errors and in Info.
func load(s *Spec, img Image, what string) (*Kernel, error) {
	if img.Code == "" {
		return nil, fmt.Errorf("%s: load %s: no image embedded", s.Package, what)
	}
	mod, err := cu.LoadData(img.Code)
	if err != nil {
		return nil, fmt.Errorf("%s: load %s: %w", s.Package, what, err)
	}
	fn, err := mod.Function(img.Kernel)
	if err != nil {
		return nil, unload(mod, fmt.Errorf("%s: load %s: kernel function %s: %w", s.Package, what, img.Kernel, err))
	}
	// More than 48 KiB of dynamic shared memory needs an opt-in.
	if img.SharedBytes > defaultSharedLimit {
		if err := setMaxDynamicShared(fn, img.SharedBytes); err != nil {
			return nil, unload(mod, fmt.Errorf("%s: load %s: %w", s.Package, what, err))
		}
	}
	k := &Kernel{
		info: Info{Package: s.Package, Problem: s.Problem, TunedArch: s.TunedArch, Image: what, Launch: img.Launch},
		mod:  mod,
		fn:   fn,
		open: true,
	}
	if pre, err := mod.Function(img.Kernel + launch.PrologueSuffix); err == nil {
		k.pre, k.hasPre = pre, true
	}
	if _, _, err := mod.Global(img.Kernel + workspaceSuffix); err == nil || k.hasPre {
		k.serial = true
		if k.last, err = cu.MakeEvent(cu.DisableTiming); err != nil {
			return nil, unload(mod, fmt.Errorf("%s: load %s: the event that orders its launches: %w", s.Package, what, err))
		}
	}
	return k, nil
}

// launch launches k's kernel on stream with params; a serial kernel's
// launch first waits (on the GPU) for the previous launch, on any stream.
func (k *Kernel) launch(stream Stream, params []unsafe.Pointer) error {
	l := k.info.Launch
	cs := cuStream(stream)
	run := func() error {
		if k.hasPre {
			p := launch.PrologueLaunch()
			if err := k.pre.Launch(p.Grid[0], p.Grid[1], p.Grid[2], p.Block[0], p.Block[1], p.Block[2], p.SharedBytes, cs, params); err != nil {
				return fmt.Errorf("launch the prologue %s%s: %w", l.Kernel, launch.PrologueSuffix, err)
			}
		}
		return k.fn.Launch(l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2], l.SharedBytes, cs, params)
	}
	if !k.serial {
		return run()
	}
	k.order.Lock()
	defer k.order.Unlock()
	if k.started {
		if err := cs.Wait(k.last, 0); err != nil {
			return fmt.Errorf("wait for the previous launch (the kernel's workspace is shared): %w", err)
		}
	}
	if err := run(); err != nil {
		if k.hasPre {
			// The prologue may have been queued before the kernel's launch
			// failed: order the next launch after it all the same.
			if rerr := k.last.Record(cs); rerr == nil {
				k.started = true
			} else if serr := cs.Synchronize(); serr != nil {
				return errors.Join(err, rerr, serr)
			}
		}
		return err
	}
	if err := k.last.Record(cs); err != nil {
		// The next launch would wait on the event of an earlier one: wait
		// for this one on the host instead, so that none overlaps it.
		if serr := cs.Synchronize(); serr != nil {
			k.started = false
			return errors.Join(fmt.Errorf("record the launch's event: %w", err), serr)
		}
		return fmt.Errorf("record the launch's event (the launch completed): %w", err)
	}
	k.started = true
	return nil
}

// defaultSharedLimit is the dynamic shared memory a block may use without
// opting in through CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
const defaultSharedLimit = 48 * 1024

// unload unloads mod after a failed load; err says why the load failed.
func unload(mod cu.Module, err error) error {
	if uerr := mod.Unload(); uerr != nil {
		return errors.Join(err, fmt.Errorf("unload after failed load: %w", uerr))
	}
	return err
}

// Forward enqueues the convolution on stream (0: the legacy default stream)
// and returns without waiting: out = conv(in, filter) + bias, all device
// addresses of dense arrays in the layout's order, each Alignment-aligned
// (else an error, before anything is launched); without a bias in the
// problem, bias is ignored (pass 0). A kernel with an epilogue chain that
// needs no extra arrays (relu, gelu, ...) applies it here too; one whose
// chain reads scale, shift or a residual needs ForwardEpilogue, and Forward
// returns an error. The context that was current at Load must be current
// on the calling thread. Concurrent calls are safe; after Close, Forward
// returns an error wrapping ErrClosed.
func (k *Kernel) Forward(stream Stream, out, in, filter, bias DevicePtr) error {
	return k.ForwardEpilogue(stream, out, in, filter, bias, Epilogue{})
}

// BackwardData enqueues, for a kernel of op dgrad, the input gradient
// dX = conv^T(dY, W) on stream (0: the legacy default stream) and returns
// without waiting: dY (N×K×P×Q) and dX (N×C×H×W) in the layout's order, W
// the forward filter in its filter layout, all of the element type, device
// addresses each Alignment-aligned (else an error, before anything is
// launched). Every dX element is written (no accumulation into dX). On a
// kernel of another op it returns an error naming the method to call.
// Concurrency and Close are as for Forward.
func (k *Kernel) BackwardData(stream Stream, dY, w, dX DevicePtr) error {
	return k.launchGrad(stream, "backward data", problem.OpDgrad, map[string]DevicePtr{"dY": dY, "W": w, "dX": dX})
}

// BackwardFilter enqueues, for a kernel of op wgrad, the filter gradient
// dW = Σ over N, P, Q of dY ⊗ X and, when the shape has a bias, the bias
// gradient dBias = Σ dY on stream (0: the legacy default stream) and
// returns without waiting: X (N×C×H×W) and dY (N×K×P×Q) in the layout's
// order and dW in the filter layout, of the element type, and dBias K
// float32 values whatever the precision (pass 0 without a bias: it is
// ignored), each Alignment-aligned. Every dW and dBias element is written
// (no accumulation), deterministically: the same inputs give the same bits.
// On a kernel of another op it returns an error naming the method to call.
// Concurrency and Close are as for Forward.
func (k *Kernel) BackwardFilter(stream Stream, x, dY, dW, dBias DevicePtr) error {
	return k.launchGrad(stream, "backward filter", problem.OpWgrad, map[string]DevicePtr{"X": x, "dY": dY, "dW": dW, "dBias": dBias})
}

// launchGrad checks and launches a gradient kernel of op with the named
// operands; what names the call in errors.
func (k *Kernel) launchGrad(stream Stream, what string, op problem.Op, named map[string]DevicePtr) error {
	if k == nil {
		return fmt.Errorf("convrt: %s: nil Kernel (call Load)", what)
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	if !k.open {
		return fmt.Errorf("%s: %s: %w", k.info.Package, what, ErrClosed)
	}
	args, err := kernelArgs(k.info.Problem, op, named)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", k.info.Package, what, err)
	}
	var params [4]unsafe.Pointer
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	if err := k.launch(stream, params[:]); err != nil {
		return fmt.Errorf("%s: launch %s: %w", k.info.Package, k.info.Launch.Kernel, err)
	}
	return nil
}

// ForwardEpilogue is Forward for a kernel whose epilogue chain reads extra
// arrays: out = chain(conv(in, filter) + bias), with ep's Scale and Shift
// (K float32 each, for scale_shift) and Residual (for residual: the
// output's shape, layout and element type), each Alignment-aligned; the
// addresses the chain does not read must be 0 (CheckEpilogue).
func (k *Kernel) ForwardEpilogue(stream Stream, out, in, filter, bias DevicePtr, ep Epilogue) error {
	if k == nil {
		return errors.New("convrt: forward: nil Kernel (call Load)")
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	if !k.open {
		return fmt.Errorf("%s: forward: %w", k.info.Package, ErrClosed)
	}
	if op := k.info.Problem.Op; op != problem.OpFprop {
		return fmt.Errorf("%s: forward: the kernel computes op=%s: call %s", k.info.Package, op, methodOf(op))
	}
	if err := CheckPtrs(k.info.Problem, out, in, filter, bias); err != nil {
		return fmt.Errorf("%s: forward: %w", k.info.Package, err)
	}
	if err := CheckEpilogue(k.info.Problem, ep); err != nil {
		return fmt.Errorf("%s: forward: %w", k.info.Package, err)
	}
	if !k.info.Problem.Shape.Bias {
		bias = 0
	}
	// One 8-byte slot per kernel parameter (out, in, filter, bias, then
	// the epilogue's), local to this call: cu copies 8 bytes from each
	// pointer, and concurrent calls share nothing.
	args := append([]uint64{uint64(out), uint64(in), uint64(filter), uint64(bias)}, ep.args(k.info.Problem)...)
	params := make([]unsafe.Pointer, len(args))
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	if err := k.launch(stream, params); err != nil {
		return fmt.Errorf("%s: launch %s: %w", k.info.Package, k.info.Launch.Kernel, err)
	}
	return nil
}

// Info describes the kernel and the problem it solves.
func (k *Kernel) Info() Info {
	if k == nil {
		return Info{}
	}
	return k.info
}

// Close unloads the kernel's module; the context it was loaded in must be
// current on the calling thread. It waits for Forward calls in progress,
// not for the launches they enqueued: synchronize the streams first.
// Closing twice does nothing. If unloading fails (say, another context is
// current), the kernel stays open and Close may be called again.
func (k *Kernel) Close() error {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.open {
		return nil
	}
	if err := k.mod.Unload(); err != nil {
		return fmt.Errorf("%s: close: unload module: %w", k.info.Package, err)
	}
	var eventErr error
	if k.serial {
		if err := cu.DestroyEvent(&k.last); err != nil {
			eventErr = fmt.Errorf("%s: close: destroy the launch-order event: %w", k.info.Package, err)
		}
		k.serial = false
	}
	k.open = false
	k.mod, k.fn, k.pre, k.hasPre = cu.Module{}, cu.Function{}, cu.Function{}, false
	return eventErr
}
