//go:build cuda

package convrttest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/convgen/convgen/convrt"
	"github.com/convgen/convgen/problem"
)

// Samples is how many random outputs each check compares with the
// reference, besides the corners.
const Samples = 4096

// Goroutines is how many goroutines, each with its own stream, Concurrent
// runs Forward from.
const Goroutines = 4

// Forward loads a kernel with load on GPU 0 and runs it twice on fresh random
// data (input uniform in [0,1), filter and bias in [-1,1), drawn as float32
// and rounded to the element type), checking each time that it writes every
// output (the output is filled with NaN before) and that the relative L2
// error against the float64 reference, over Samples random outputs and the
// corners, is at most bound. A kernel with an epilogue chain runs through
// ForwardEpilogue with the arrays its chain reads (scale in [0.5,1.5),
// shift and residual in [-1,1)), and the reference applies the chain
// (convrt.ReferenceEpilogue). A kernel whose output type differs from the
// input's (problem.Problem.OutPrecision) writes, and its residual holds,
// elements of the output's type, which the check reads as such
// (convrt.ReferenceOutput). Without a chain a third run plants a NaN and an
// infinity in the input and checks where they reach the output: a NaN
// where the sum reads the NaN, not finite where it reads the infinity,
// finite in the images without either (a zero-weight tap may carry them to
// nearby outputs of their own images).
func Forward(t *testing.T, load func() (*convrt.Kernel, error), bound float64) {
	withKernel(t, load, func(ctx cu.CUContext, k *convrt.Kernel) {
		switch k.Info().Problem.Precision.Storage() {
		case problem.StorageFP16:
			forwardIn(t, k, convrt.FP16Codec(), bound)
		case problem.StorageBF16:
			forwardIn(t, k, convrt.BF16Codec(), bound)
		default:
			forwardIn(t, k, convrt.Float32Codec(), bound)
		}
	})
}

// forwardIn is Forward for inputs of type E: it picks the output's type.
func forwardIn[E convrt.Element](t *testing.T, k *convrt.Kernel, in convrt.Codec[E], bound float64) {
	switch k.Info().Problem.Out() {
	case problem.StorageFP16:
		forward(t, k, in, convrt.FP16Codec(), bound)
	case problem.StorageBF16:
		forward(t, k, in, convrt.BF16Codec(), bound)
	default:
		forward(t, k, in, convrt.Float32Codec(), bound)
	}
}

// concurrentIn is concurrent for inputs of type E: it picks the output's
// type.
func concurrentIn[E convrt.Element](ctx cu.CUContext, k *convrt.Kernel, in convrt.Codec[E], bound float64) error {
	switch k.Info().Problem.Out() {
	case problem.StorageFP16:
		return concurrent(ctx, k, in, convrt.FP16Codec(), bound)
	case problem.StorageBF16:
		return concurrent(ctx, k, in, convrt.BF16Codec(), bound)
	}
	return concurrent(ctx, k, in, convrt.Float32Codec(), bound)
}

// Concurrent loads a kernel with load on GPU 0 and calls Forward on it from
// Goroutines goroutines at once, each on its own stream and thread with the
// context current, each with its own filter, bias and output, twice in a
// row, and checks every result against the reference with bound. Then it
// checks Close while idle, that Forward after Close fails with
// convrt.ErrClosed, and that a second Close does nothing.
func Concurrent(t *testing.T, load func() (*convrt.Kernel, error), bound float64) {
	withKernel(t, load, func(ctx cu.CUContext, k *convrt.Kernel) {
		var err error
		switch k.Info().Problem.Precision.Storage() {
		case problem.StorageFP16:
			err = concurrentIn(ctx, k, convrt.FP16Codec(), bound)
		case problem.StorageBF16:
			err = concurrentIn(ctx, k, convrt.BF16Codec(), bound)
		default:
			err = concurrentIn(ctx, k, convrt.Float32Codec(), bound)
		}
		if err != nil {
			t.Error(err)
		}
		if err := k.Close(); err != nil {
			t.Errorf("Close while idle: %v", err)
		}
		if err := k.Forward(0, 256, 256, 256, 256); !errors.Is(err, convrt.ErrClosed) {
			t.Errorf("Forward after Close: %v, want an error wrapping convrt.ErrClosed", err)
		}
		if err := k.Close(); err != nil {
			t.Errorf("second Close: %v, want nil", err)
		}
		if k.Info().Launch.Kernel == "" {
			t.Error("Info after Close lost the kernel's name")
		}
	})
}

// withKernel makes a context on GPU 0 current on the test's locked thread,
// loads the kernel, runs f, and closes the kernel and the context.
func withKernel(t *testing.T, load func() (*convrt.Kernel, error), f func(cu.CUContext, *convrt.Kernel)) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	devices, err := cu.NumDevices()
	if err != nil {
		t.Fatalf("count CUDA devices: %v", err)
	}
	if devices == 0 {
		t.Fatal("no CUDA device: this test needs a GPU")
	}
	dev, err := cu.GetDevice(0)
	if err != nil {
		t.Fatalf("device 0: %v", err)
	}
	ctx, err := dev.MakeContext(cu.SchedAuto)
	if err != nil {
		t.Fatalf("make a context on device 0: %v", err)
	}
	defer func() {
		if err := ctx.Destroy(); err != nil {
			t.Errorf("destroy context: %v", err)
		}
	}()
	k, err := load()
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	defer func() {
		if err := k.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	info := k.Info()
	t.Logf("%s: %s, kernel %s", info.Package, info.Image, info.Launch.Kernel)
	f(ctx, k)
}

// forward does Forward's work with input elements of type E and output
// (and residual) elements of type O.
func forward[E, O convrt.Element](t *testing.T, k *convrt.Kernel, codec convrt.Codec[E], outCodec convrt.Codec[O], bound float64) {
	p := k.Info().Problem
	if err := checkSizes[E, O](p); err != nil {
		t.Fatal(err)
	}
	nIn, nFilter, nBias, nOut := p.Shape.Elements()
	var mem memory
	defer func() {
		if err := mem.free(); err != nil {
			t.Error(err)
		}
	}()
	stream, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		t.Fatalf("make stream: %v", err)
	}
	defer func() {
		if err := stream.Destroy(); err != nil {
			t.Errorf("destroy stream: %v", err)
		}
	}()
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	filter, bias := random(rng, codec, nFilter, -1, 1), random(rng, codec, nBias, -1, 1)
	d, err := allocElems[E](&mem, nFilter, nBias, nIn)
	if err != nil {
		t.Fatal(err)
	}
	do, err := allocElems[O](&mem, nOut)
	if err != nil {
		t.Fatal(err)
	}
	dFilter, dBias, dIn, dOut := d[0], d[1], d[2], do[0]
	if err := errors.Join(toDevice(dFilter, filter), toDevice(dBias, bias)); err != nil {
		t.Fatal(err)
	}
	ep, dEp, err := epilogueArrays(&mem, rng, outCodec, p)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]O, nOut)
	// Two runs with fresh inputs: the output must follow the input.
	for run := 1; run <= 2; run++ {
		in := random(rng, codec, nIn, 0, 1)
		if err := toDevice(dIn, in); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if err := poison(dOut, outCodec, nOut); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		// The copies and the memset ran on the legacy default stream, which
		// a non-blocking stream does not wait for.
		if err := cu.Synchronize(); err != nil {
			t.Fatalf("run %d: synchronize before the launch: %v", run, err)
		}
		if err := k.ForwardEpilogue(convrt.StreamOf(stream), convrt.PtrOf(dOut), convrt.PtrOf(dIn), convrt.PtrOf(dFilter), convrt.PtrOf(dBias), dEp); err != nil {
			t.Fatalf("run %d: ForwardEpilogue: %v", run, err)
		}
		if err := stream.Synchronize(); err != nil {
			t.Fatalf("run %d: synchronize the stream: %v", run, err)
		}
		if err := fromDevice(out, dOut); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		rel, err := check(p, codec, outCodec, rng, Samples, bound, out, in, filter, bias, ep)
		t.Logf("run %d: relative L2 error %.3g (bound %g)", run, rel, bound)
		if err != nil {
			t.Errorf("run %d: %v", run, err)
		}
	}
	if len(p.Epilogue) > 0 {
		return // a chain's own handling of NaN and infinity is not PyTorch's to check here
	}
	// Run 3: a NaN with the bits GPU arithmetic gives one (0x7fffffff) at
	// one input element and +Inf at another propagate as in PyTorch's
	// convolution: an output whose sum reads the NaN is NaN, one that reads
	// only the infinity is not finite. Every other output of an image
	// without either is finite; in the images that hold them, the families
	// that pad their windows with zero-weight taps or transform whole tiles
	// (winograd) may also make outputs near them NaN (zero times infinity),
	// which are counted, not failed.
	s := p.Shape
	in := random(rng, codec, nIn, 0, 1)
	// Both in image 0, so that every other image must come out finite.
	nanAt, infAt := [4]int{0, 0, s.H / 2, s.W / 2}, [4]int{0, s.C - 1, s.H / 3, 2 * s.W / 3}
	nanWin, infWin := windowOf(p, nanAt[0], nanAt[1], nanAt[2], nanAt[3]), windowOf(p, infAt[0], infAt[1], infAt[2], infAt[3])
	nanOff, infOff := convrt.InputAt(p, nanAt[0], nanAt[1], nanAt[2], nanAt[3]), convrt.InputAt(p, infAt[0], infAt[1], infAt[2], infAt[3])
	if infOff == nanOff {
		infWin.n = -1 // one element: the NaN alone
	} else {
		in[infOff] = codec.Encode(float32(math.Inf(1)))
	}
	in[nanOff] = codec.Encode(math.Float32frombits(0x7fffffff))
	if err := errors.Join(toDevice(dIn, in), poison(dOut, outCodec, nOut), cu.Synchronize()); err != nil {
		t.Fatalf("run 3: %v", err)
	}
	if err := k.ForwardEpilogue(convrt.StreamOf(stream), convrt.PtrOf(dOut), convrt.PtrOf(dIn), convrt.PtrOf(dFilter), convrt.PtrOf(dBias), dEp); err != nil {
		t.Fatalf("run 3: ForwardEpilogue: %v", err)
	}
	if err := errors.Join(stream.Synchronize(), fromDevice(out, dOut)); err != nil {
		t.Fatalf("run 3: %v", err)
	}
	var nans, infs, finite, spread, bad int
	for a := range allOutputs(s) {
		v := outCodec.Decode(out[convrt.OutputAt(p, a)])
		var ok bool
		switch {
		case nanWin.holds(a):
			nans++
			ok = math.IsNaN(v)
		case infWin.holds(a):
			infs++
			ok = math.IsNaN(v) || math.IsInf(v, 0)
		case a.N == nanWin.n || a.N == infWin.n:
			finite++
			if math.IsNaN(v) || math.IsInf(v, 0) {
				spread++
			}
			ok = true
		default:
			finite++
			ok = !math.IsNaN(v) && !math.IsInf(v, 0)
		}
		if !ok {
			if bad < 5 {
				t.Errorf("run 3: out[n=%d][k=%d][p=%d][q=%d] = %v with a NaN at in%v and +Inf at in%v (reads the NaN: %v, the Inf: %v)",
					a.N, a.K, a.P, a.Q, v, nanAt, infAt, nanWin.holds(a), infWin.holds(a))
			}
			bad++
		}
	}
	t.Logf("run 3: %d outputs read the NaN, %d the infinity only, %d neither (%d of these not finite, in an image holding one); %d wrong", nans, infs, finite, spread, bad)
}

// concurrent does Concurrent's work with input elements of type E and
// output elements of type O; it returns what went wrong in any goroutine.
func concurrent[E, O convrt.Element](ctx cu.CUContext, k *convrt.Kernel, codec convrt.Codec[E], outCodec convrt.Codec[O], bound float64) error {
	p := k.Info().Problem
	if err := checkSizes[E, O](p); err != nil {
		return err
	}
	nIn, _, _, _ := p.Shape.Elements()
	var mem memory
	in := random(rand.New(rand.NewPCG(1, 2)), codec, nIn, 0, 1)
	dIn, err := mem.alloc(nIn * int(unsafe.Sizeof(in[0])))
	if err == nil {
		err = toDevice(dIn, in)
	}
	if err == nil {
		err = cu.Synchronize()
	}
	if err != nil {
		return errors.Join(err, mem.free())
	}
	start := make(chan struct{})
	errs := make([]error, Goroutines)
	var wg sync.WaitGroup
	for g := range Goroutines {
		wg.Go(func() {
			errs[g] = oneStream(ctx, k, codec, outCodec, bound, g, in, dIn, start)
			if errs[g] != nil {
				errs[g] = fmt.Errorf("goroutine %d: %w", g, errs[g])
			}
		})
	}
	close(start)
	wg.Wait()
	return errors.Join(errors.Join(errs...), mem.free())
}

// oneStream is goroutine g of concurrent: on its own locked thread with ctx
// current and its own stream, filter, bias and output, it waits for start,
// calls Forward twice and checks the output.
func oneStream[E, O convrt.Element](ctx cu.CUContext, k *convrt.Kernel, codec convrt.Codec[E], outCodec convrt.Codec[O], bound float64, g int, in []E, dIn cu.DevicePtr, start <-chan struct{}) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(ctx); err != nil {
		return fmt.Errorf("make the context current: %w", err)
	}
	p := k.Info().Problem
	_, nFilter, nBias, nOut := p.Shape.Elements()
	rng := rand.New(rand.NewPCG(uint64(g), 7))
	filter, bias := random(rng, codec, nFilter, -1, 1), random(rng, codec, nBias, -1, 1)
	var mem memory
	defer func() { err = errors.Join(err, mem.free()) }()
	d, err := allocElems[E](&mem, nFilter, nBias)
	if err != nil {
		return err
	}
	do, err := allocElems[O](&mem, nOut)
	if err != nil {
		return err
	}
	dFilter, dBias, dOut := d[0], d[1], do[0]
	stream, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return fmt.Errorf("make stream: %w", err)
	}
	defer func() {
		if derr := stream.Destroy(); derr != nil {
			err = errors.Join(err, fmt.Errorf("destroy stream: %w", derr))
		}
	}()
	ep, dEp, err := epilogueArrays(&mem, rng, outCodec, p)
	if err != nil {
		return err
	}
	if err := errors.Join(toDevice(dFilter, filter), toDevice(dBias, bias), poison(dOut, outCodec, nOut), cu.Synchronize()); err != nil {
		return err
	}
	<-start
	for i := range 2 {
		if err := k.ForwardEpilogue(convrt.StreamOf(stream), convrt.PtrOf(dOut), convrt.PtrOf(dIn), convrt.PtrOf(dFilter), convrt.PtrOf(dBias), dEp); err != nil {
			return fmt.Errorf("ForwardEpilogue %d: %w", i+1, err)
		}
	}
	if err := stream.Synchronize(); err != nil {
		return fmt.Errorf("synchronize the stream: %w", err)
	}
	out := make([]O, nOut)
	if err := fromDevice(out, dOut); err != nil {
		return err
	}
	_, err = check(p, codec, outCodec, rng, Samples/4, bound, out, in, filter, bias, ep)
	return err
}

// checkSizes checks that E is as large as p's input elements and O as
// its output's (problem.Problem.OutElementBytes).
func checkSizes[E, O convrt.Element](p problem.Problem) error {
	if err := checkSize[E](p); err != nil {
		return err
	}
	var o O
	if size := int(unsafe.Sizeof(o)); size != p.OutElementBytes() {
		return fmt.Errorf("output type %s has %d-byte elements, the host type %T %d", p.Out(), p.OutElementBytes(), o, size)
	}
	return nil
}

// checkSize checks that E is as large as p's elements.
func checkSize[E convrt.Element](p problem.Problem) error {
	var e E
	if size := int(unsafe.Sizeof(e)); size != p.Precision.ElementBytes() {
		return fmt.Errorf("precision %s has %d-byte elements, the host type %T %d", p.Precision, p.Precision.ElementBytes(), e, size)
	}
	return nil
}

// check fails when an output is not finite (a NaN left from the poison means
// the kernel skipped it) or when the relative L2 error over samples random
// outputs and the corners exceeds bound; it returns that error.
func check[E, O convrt.Element](p problem.Problem, codec convrt.Codec[E], outCodec convrt.Codec[O], rng *rand.Rand, samples int, bound float64, out []O, in, filter, bias []E, ep convrt.EpilogueHost[O]) (float64, error) {
	bad, first := 0, -1
	for i, e := range out {
		if v := outCodec.Decode(e); math.IsNaN(v) || math.IsInf(v, 0) {
			if bad == 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return math.NaN(), fmt.Errorf("%d of %d outputs are not finite, the first out[%d] = %v: the kernel left them unwritten or overflowed", bad, len(out), first, outCodec.Decode(out[first]))
	}
	s := p.Shape
	points := convrt.Corners(p)
	for range samples {
		points = append(points, convrt.At{N: rng.IntN(s.N), K: rng.IntN(s.K), P: rng.IntN(s.P()), Q: rng.IntN(s.Q())})
	}
	rel, w := convrt.RelErrorOutput(p, codec.Decode, outCodec.Decode, out, in, filter, bias, ep, points)
	// Written so that a NaN error fails too.
	if !(rel <= bound) {
		return rel, fmt.Errorf("relative L2 error %.3g over %d outputs exceeds %g; the worst output out[n=%d][k=%d][p=%d][q=%d] is %v, the reference %v",
			rel, len(points), bound, w.N, w.K, w.P, w.Q, outCodec.Decode(out[convrt.OutputAt(p, w)]), convrt.ReferenceOutput(p, codec.Decode, outCodec.Decode, in, filter, bias, ep, w))
	}
	return rel, nil
}

// random returns n elements drawn uniformly from [lo, hi) as float32s and
// rounded to elements.
func random[E convrt.Element](rng *rand.Rand, codec convrt.Codec[E], n int, lo, hi float64) []E {
	xs := make([]E, n)
	for i := range xs {
		xs[i] = codec.Encode(float32(lo + (hi-lo)*rng.Float64()))
	}
	return xs
}

// epilogueArrays makes the arrays p's epilogue chain reads, on the host (for
// the reference) and on the device (for ForwardEpilogue), each from rng:
// scale in [0.5, 1.5) and shift in [-1, 1), K float32 values each, and the
// residual, the output's elements (of E, the output's type), in [-1, 1).
// Those the chain does not
// read stay nil and 0.
func epilogueArrays[E convrt.Element](mem *memory, rng *rand.Rand, codec convrt.Codec[E], p problem.Problem) (convrt.EpilogueHost[E], convrt.Epilogue, error) {
	var host convrt.EpilogueHost[E]
	var dev convrt.Epilogue
	if p.Epilogue.NeedsScaleShift() {
		scale, shift := make([]float32, p.Shape.K), make([]float32, p.Shape.K)
		host.Scale, host.Shift = make([]float64, p.Shape.K), make([]float64, p.Shape.K)
		for i := range scale {
			scale[i], shift[i] = float32(0.5+rng.Float64()), float32(2*rng.Float64()-1)
			host.Scale[i], host.Shift[i] = float64(scale[i]), float64(shift[i])
		}
		d, err := allocElems[float32](mem, len(scale), len(shift))
		if err != nil {
			return host, dev, err
		}
		if err := errors.Join(toDevice(d[0], scale), toDevice(d[1], shift)); err != nil {
			return host, dev, err
		}
		dev.Scale, dev.Shift = convrt.PtrOf(d[0]), convrt.PtrOf(d[1])
	}
	if p.Epilogue.NeedsResidual() {
		_, _, _, nOut := p.Shape.Elements()
		host.Residual = random(rng, codec, nOut, -1, 1)
		d, err := allocElems[E](mem, nOut)
		if err != nil {
			return host, dev, err
		}
		if err := toDevice(d[0], host.Residual); err != nil {
			return host, dev, err
		}
		dev.Residual = convrt.PtrOf(d[0])
	}
	return host, dev, nil
}

// poison fills n elements at p with NaN.
func poison[E convrt.Element](p cu.DevicePtr, codec convrt.Codec[E], n int) error {
	var err error
	if unsafe.Sizeof(*new(E)) == 2 {
		err = cu.MemsetD16(p, uint16(codec.NaNBits), int64(n))
	} else {
		err = cu.MemsetD32(p, codec.NaNBits, int64(n))
	}
	if err != nil {
		return fmt.Errorf("fill the output with NaN: %w", err)
	}
	return nil
}

// toDevice copies xs to the device memory at p.
func toDevice[E convrt.Element](p cu.DevicePtr, xs []E) error {
	if len(xs) == 0 {
		return nil
	}
	if err := cu.MemcpyHtoD(p, unsafe.Pointer(&xs[0]), int64(len(xs))*int64(unsafe.Sizeof(xs[0]))); err != nil {
		return fmt.Errorf("copy %d elements to the device: %w", len(xs), err)
	}
	return nil
}

// fromDevice copies the device memory at p into xs.
func fromDevice[E convrt.Element](xs []E, p cu.DevicePtr) error {
	if err := cu.MemcpyDtoH(unsafe.Pointer(&xs[0]), p, int64(len(xs))*int64(unsafe.Sizeof(xs[0]))); err != nil {
		return fmt.Errorf("copy %d elements from the device: %w", len(xs), err)
	}
	return nil
}

// memory is device memory to free.
type memory []cu.DevicePtr

// alloc allocates bytes of device memory (none for 0 bytes: address 0).
func (m *memory) alloc(bytes int) (cu.DevicePtr, error) {
	if bytes == 0 {
		return 0, nil
	}
	p, err := cu.MemAlloc(int64(bytes))
	if err != nil {
		return 0, fmt.Errorf("allocate %d bytes: %w", bytes, err)
	}
	*m = append(*m, p)
	return p, nil
}

// allocElems allocates device memory for each count of elements of type E.
func allocElems[E convrt.Element](m *memory, counts ...int) ([]cu.DevicePtr, error) {
	ps := make([]cu.DevicePtr, len(counts))
	for i, n := range counts {
		p, err := m.alloc(n * int(unsafe.Sizeof(*new(E))))
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	return ps, nil
}

// free frees every allocation.
func (m *memory) free() error {
	var errs []error
	for _, p := range *m {
		if err := cu.MemFree(p); err != nil {
			errs = append(errs, fmt.Errorf("free device memory: %w", err))
		}
	}
	*m = nil
	return errors.Join(errs...)
}
