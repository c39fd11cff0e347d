//go:build cuda

package gpu

// #include <cuda.h>
// #include <string.h>
// #cgo LDFLAGS: -lcuda
//
// static CUresult convgen_set_max_dynamic_shared(CUfunction fn, int bytes) {
//     return cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
// }
//
// // convgen_max_active_clusters asks the driver how many clusters of fn,
// // launched with this grid, block and dynamic shared memory, can run at
// // once (fn's cluster dimensions are compiled in). The entry point is found
// // at run time: CUDA 11.8's driver stub, which builds link against, lacks it.
// typedef CUresult (*convgen_max_clusters_fn)(int *, CUfunction, const CUlaunchConfig *);
// static CUresult convgen_max_active_clusters(CUfunction fn, unsigned gx, unsigned gy, unsigned gz,
//                                             unsigned bx, unsigned by, unsigned bz, unsigned shared, int *out) {
//     void *p = 0;
//     CUresult r = cuGetProcAddress("cuOccupancyMaxActiveClusters", &p, 11080, CU_GET_PROC_ADDRESS_DEFAULT);
//     if (r != CUDA_SUCCESS) return r;
//     if (!p) return CUDA_ERROR_NOT_FOUND;
//     CUlaunchConfig cfg;
//     memset(&cfg, 0, sizeof cfg);
//     cfg.gridDimX = gx; cfg.gridDimY = gy; cfg.gridDimZ = gz;
//     cfg.blockDimX = bx; cfg.blockDimY = by; cfg.blockDimZ = bz;
//     cfg.sharedMemBytes = shared;
//     return ((convgen_max_clusters_fn)p)(out, fn, &cfg);
// }
import "C"

import (
	"bytes"
	"fmt"
	"runtime"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/convgen/convgen/kernels/launch"
)

// Available reports whether this build can drive a GPU.
func Available() bool { return true }

// Device is a context on one GPU, bound to the calling goroutine's OS thread,
// with a non-blocking stream for timing.
type Device struct {
	Info   Info
	dev    cu.Device
	ctx    cu.CUContext
	Stream cu.Stream
}

// maxSharedOptinAttr is CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
// which gorgonia.org/cu v0.9.6 does not name.
const maxSharedOptinAttr = cu.DeviceAttribute(C.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)

// Open creates a context on device ordinal. It locks the calling goroutine to
// its OS thread (CUDA contexts are per thread); call Close from the same
// goroutine.
func Open(ordinal int) (*Device, error) {
	runtime.LockOSThread()
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("count devices: %w", err)
	}
	if ordinal >= n {
		return nil, fmt.Errorf("device %d requested, %d present", ordinal, n)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return nil, fmt.Errorf("get device %d: %w", ordinal, err)
	}
	ctx, err := dev.MakeContext(cu.SchedAuto)
	if err != nil {
		return nil, fmt.Errorf("create context on device %d: %w", ordinal, err)
	}
	d := &Device{dev: dev, ctx: ctx}
	if d.Stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return nil, fmt.Errorf("create stream: %w", err)
	}
	if d.Info, err = info(dev); err != nil {
		return nil, err
	}
	return d, nil
}

func info(dev cu.Device) (Info, error) {
	var in Info
	var err error
	if in.Name, err = dev.Name(); err != nil {
		return in, fmt.Errorf("device name: %w", err)
	}
	attrs, err := dev.Attributes(cu.ComputeCapabilityMajor, cu.ComputeCapabilityMinor, cu.MultiprocessorCount,
		cu.ClockRate, maxSharedOptinAttr, cu.L2CacheSize)
	if err != nil {
		return in, fmt.Errorf("device attributes: %w", err)
	}
	in.ComputeCapability = fmt.Sprintf("%d.%d", attrs[0], attrs[1])
	in.Arch = fmt.Sprintf("sm_%d%d", attrs[0], attrs[1])
	in.SMs, in.ClockMHz, in.SharedOptin, in.L2Bytes = attrs[2], attrs[3]/1000, attrs[4], attrs[5]
	v := cu.Version()
	in.Driver = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	return in, nil
}

// Function is a loaded kernel, with its prologue where its module has one
// (kernels/launch.PrologueSuffix): Launch launches that first.
type Function struct {
	fn     cu.Function
	mod    cu.Module
	pre    cu.Function
	hasPre bool
}

// Load loads a cubin (or PTX) image and finds the kernel name in it; shared
// is the dynamic shared memory the kernel will launch with, opted into when
// above 48 KB.
func (d *Device) Load(image []byte, name string, shared int) (Function, error) {
	mod, err := cu.LoadData(string(image))
	if err != nil {
		return Function{}, fmt.Errorf("load module: %w", err)
	}
	fn, err := mod.Function(name)
	if err != nil {
		mod.Unload()
		return Function{}, fmt.Errorf("find kernel %s: %w", name, err)
	}
	if shared > 48*1024 {
		// cu.Function holds exactly one CUfunction in v0.9.6 (pinned in go.mod).
		raw := *(*C.CUfunction)(unsafe.Pointer(&fn))
		if r := C.convgen_set_max_dynamic_shared(raw, C.int(shared)); r != C.CUDA_SUCCESS {
			mod.Unload()
			return Function{}, fmt.Errorf("opt in to %d B of dynamic shared memory: CUresult %d", shared, int(r))
		}
	}
	f := Function{fn: fn, mod: mod}
	// Only an image that names the prologue is asked for it: a lookup that
	// fails is a driver API error, which compute-sanitizer reports.
	if prologue := name + launch.PrologueSuffix; bytes.Contains(image, []byte(prologue)) {
		if pre, err := mod.Function(prologue); err == nil {
			f.pre, f.hasPre = pre, true
		}
	}
	return f, nil
}

// Alone returns f without its prologue: Launch then launches the kernel
// alone, as a launcher that knows no prologue would (a relayed-out
// kernel's blocks then make their copies themselves).
func (f Function) Alone() Function {
	f.hasPre = false
	return f
}

// Unload releases the function's module.
func (f Function) Unload() error { return f.mod.Unload() }

// Attributes returns the kernel's registers per thread and local memory
// (stack and spills) per thread in bytes.
func (f Function) Attributes() (registers, localBytes int, err error) {
	if registers, err = f.fn.Attribute(cu.NumRegs); err != nil {
		return 0, 0, fmt.Errorf("register count: %w", err)
	}
	if localBytes, err = f.fn.Attribute(cu.LocalSizeBytes); err != nil {
		return 0, 0, fmt.Errorf("local memory size: %w", err)
	}
	return registers, localBytes, nil
}

// MaxActiveClusters returns how many clusters of f (a kernel compiled with
// cluster dimensions), launched with this grid, block and dynamic shared
// memory, the driver says can run on the device at once
// (cuOccupancyMaxActiveClusters): a launch of more takes waves. Kernels
// without compiled cluster dimensions return an error.
func (f Function) MaxActiveClusters(grid, block [3]int, shared int) (int, error) {
	raw := *(*C.CUfunction)(unsafe.Pointer(&f.fn))
	var n C.int
	r := C.convgen_max_active_clusters(raw, C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(block[0]), C.uint(block[1]), C.uint(block[2]), C.uint(shared), &n)
	if r != C.CUDA_SUCCESS {
		return 0, fmt.Errorf("max active clusters: CUresult %d", int(r))
	}
	return int(n), nil
}

// Launch launches f on the device's stream, after its prologue where it
// has one (with the same arguments). Each argument is copied into its
// own 8-byte slot, as gorgonia.org/cu requires.
func (d *Device) Launch(f Function, grid, block [3]int, shared int, args ...uint64) error {
	slots := make([]uint64, len(args))
	copy(slots, args)
	params := make([]unsafe.Pointer, len(slots))
	for i := range slots {
		params[i] = unsafe.Pointer(&slots[i])
	}
	if f.hasPre {
		l := launch.PrologueLaunch()
		if err := f.pre.Launch(l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2], l.SharedBytes, d.Stream, params); err != nil {
			return fmt.Errorf("launch the prologue: %w", err)
		}
	}
	if err := f.fn.Launch(grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, d.Stream, params); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	return nil
}

// Sync waits for the device's stream.
func (d *Device) Sync() error {
	if err := d.Stream.Synchronize(); err != nil {
		return fmt.Errorf("synchronize: %w", err)
	}
	return nil
}

// Alloc allocates bytes of device memory.
func (d *Device) Alloc(bytes int64) (cu.DevicePtr, error) {
	p, err := cu.MemAlloc(bytes)
	if err != nil {
		return 0, fmt.Errorf("allocate %d B: %w", bytes, err)
	}
	return p, nil
}

// Close destroys the context.
func (d *Device) Close() error {
	defer runtime.UnlockOSThread()
	return d.ctx.Destroy()
}
