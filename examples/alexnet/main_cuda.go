//go:build cuda

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/convgen/convgen/examples/alexnet/bf16nhwc"
	"github.com/convgen/convgen/examples/alexnet/fp16nhwc"
	"github.com/convgen/convgen/examples/alexnet/fp32"
	"github.com/convgen/convgen/examples/alexnet/tf32"
	"github.com/convgen/convgen/examples/alexnet/tf32nhwc"
	"github.com/convgen/convgen/examples/alexnet/tf32x3"
)

// variants are the generated kernels the example runs, in this order. To add
// one, generate its package (a go:generate line in doc.go), import it and add
// its entry here; a precision whose elements are not float32 also needs a
// codec, chosen in run.
var variants = []variant{
	{"fp32", bind(fp32.Load, fp32.StreamOf, fp32.PtrOf), consts{fp32.Precision, fp32.Layout, fp32.KernelName, fp32.TunedArch, fp32.FLOPs,
		fp32.N, fp32.C, fp32.H, fp32.W, fp32.K, fp32.R, fp32.S, fp32.P, fp32.Q, fp32.StrideH, fp32.StrideW, fp32.PadH, fp32.PadW, fp32.DilationH, fp32.DilationW, fp32.Groups, fp32.HasBias,
		fp32.InputElems, fp32.FilterElems, fp32.BiasElems, fp32.OutputElems, fp32.ElementBytes}},
	{"tf32", bind(tf32.Load, tf32.StreamOf, tf32.PtrOf), consts{tf32.Precision, tf32.Layout, tf32.KernelName, tf32.TunedArch, tf32.FLOPs,
		tf32.N, tf32.C, tf32.H, tf32.W, tf32.K, tf32.R, tf32.S, tf32.P, tf32.Q, tf32.StrideH, tf32.StrideW, tf32.PadH, tf32.PadW, tf32.DilationH, tf32.DilationW, tf32.Groups, tf32.HasBias,
		tf32.InputElems, tf32.FilterElems, tf32.BiasElems, tf32.OutputElems, tf32.ElementBytes}},
	{"tf32nhwc", bind(tf32nhwc.Load, tf32nhwc.StreamOf, tf32nhwc.PtrOf), consts{tf32nhwc.Precision, tf32nhwc.Layout, tf32nhwc.KernelName, tf32nhwc.TunedArch, tf32nhwc.FLOPs,
		tf32nhwc.N, tf32nhwc.C, tf32nhwc.H, tf32nhwc.W, tf32nhwc.K, tf32nhwc.R, tf32nhwc.S, tf32nhwc.P, tf32nhwc.Q, tf32nhwc.StrideH, tf32nhwc.StrideW, tf32nhwc.PadH, tf32nhwc.PadW, tf32nhwc.DilationH, tf32nhwc.DilationW, tf32nhwc.Groups, tf32nhwc.HasBias,
		tf32nhwc.InputElems, tf32nhwc.FilterElems, tf32nhwc.BiasElems, tf32nhwc.OutputElems, tf32nhwc.ElementBytes}},
	{"tf32x3", bind(tf32x3.Load, tf32x3.StreamOf, tf32x3.PtrOf), consts{tf32x3.Precision, tf32x3.Layout, tf32x3.KernelName, tf32x3.TunedArch, tf32x3.FLOPs,
		tf32x3.N, tf32x3.C, tf32x3.H, tf32x3.W, tf32x3.K, tf32x3.R, tf32x3.S, tf32x3.P, tf32x3.Q, tf32x3.StrideH, tf32x3.StrideW, tf32x3.PadH, tf32x3.PadW, tf32x3.DilationH, tf32x3.DilationW, tf32x3.Groups, tf32x3.HasBias,
		tf32x3.InputElems, tf32x3.FilterElems, tf32x3.BiasElems, tf32x3.OutputElems, tf32x3.ElementBytes}},
	{"fp16nhwc", bind(fp16nhwc.Load, fp16nhwc.StreamOf, fp16nhwc.PtrOf), consts{fp16nhwc.Precision, fp16nhwc.Layout, fp16nhwc.KernelName, fp16nhwc.TunedArch, fp16nhwc.FLOPs,
		fp16nhwc.N, fp16nhwc.C, fp16nhwc.H, fp16nhwc.W, fp16nhwc.K, fp16nhwc.R, fp16nhwc.S, fp16nhwc.P, fp16nhwc.Q, fp16nhwc.StrideH, fp16nhwc.StrideW, fp16nhwc.PadH, fp16nhwc.PadW, fp16nhwc.DilationH, fp16nhwc.DilationW, fp16nhwc.Groups, fp16nhwc.HasBias,
		fp16nhwc.InputElems, fp16nhwc.FilterElems, fp16nhwc.BiasElems, fp16nhwc.OutputElems, fp16nhwc.ElementBytes}},
	{"bf16nhwc", bind(bf16nhwc.Load, bf16nhwc.StreamOf, bf16nhwc.PtrOf), consts{bf16nhwc.Precision, bf16nhwc.Layout, bf16nhwc.KernelName, bf16nhwc.TunedArch, bf16nhwc.FLOPs,
		bf16nhwc.N, bf16nhwc.C, bf16nhwc.H, bf16nhwc.W, bf16nhwc.K, bf16nhwc.R, bf16nhwc.S, bf16nhwc.P, bf16nhwc.Q, bf16nhwc.StrideH, bf16nhwc.StrideW, bf16nhwc.PadH, bf16nhwc.PadW, bf16nhwc.DilationH, bf16nhwc.DilationW, bf16nhwc.Groups, bf16nhwc.HasBias,
		bf16nhwc.InputElems, bf16nhwc.FilterElems, bf16nhwc.BiasElems, bf16nhwc.OutputElems, bf16nhwc.ElementBytes}},
}

// errorBounds is the largest relative L2 error ‖out−ref‖/‖ref‖ against the
// float64 reference that each precision allows.
var errorBounds = map[string]float64{"fp32": 1e-5, "tf32": 1e-3, "3xtf32": 1e-5, "fp16": 2e-3, "bf16": 1e-2}

const (
	samples  = 4096     // outputs checked against the reference
	warmups  = 10       // untimed launches before the timed ones
	flushLen = 64 << 20 // 32-bit words of the L2 flush buffer (256 MB)
)

// variant is one generated kernel package.
type variant struct {
	name string
	load func() (launcher, error)
	c    consts
}

// consts are a generated package's constants.
type consts struct {
	Precision, Layout, KernelName, TunedArch           string
	FLOPs                                              float64
	N, C, H, W, K, R, S, P, Q                          int
	StrideH, StrideW, PadH, PadW, DilationH, DilationW int
	Groups                                             int
	HasBias                                            bool
	InputElems, FilterElems, BiasElems, OutputElems    int
	ElementBytes                                       int
}

// launcher is a loaded kernel behind gorgonia.org/cu types, so that every
// generated package, each with its own Stream and DevicePtr types, looks alike.
type launcher struct {
	forward func(stream cu.Stream, out, in, filter, bias cu.DevicePtr) error
	close   func() error
}

// kernel is the method set of a generated package's *Kernel.
type kernel[S, P any] interface {
	Forward(stream S, out, in, filter, bias P) error
	Close() error
}

// bind adapts a generated package's Load, StreamOf and PtrOf to a launcher.
func bind[K kernel[S, P], S, P any](load func() (K, error), streamOf func(cu.Stream) S, ptrOf func(cu.DevicePtr) P) func() (launcher, error) {
	return func() (launcher, error) {
		k, err := load()
		if err != nil {
			return launcher{}, err
		}
		return launcher{
			forward: func(s cu.Stream, out, in, filter, bias cu.DevicePtr) error {
				return k.Forward(streamOf(s), ptrOf(out), ptrOf(in), ptrOf(filter), ptrOf(bias))
			},
			close: k.Close,
		}, nil
	}
}

// result is one variant's outcome, also its JSON line.
type result struct {
	Variant   string  `json:"variant"`
	Precision string  `json:"precision"`
	Layout    string  `json:"layout"`
	Kernel    string  `json:"kernel"`
	TunedArch string  `json:"tuned_arch"`
	Device    string  `json:"device"`
	Runs      int     `json:"runs"`
	MedianMS  float64 `json:"median_ms"`
	P10MS     float64 `json:"p10_ms"`
	P90MS     float64 `json:"p90_ms"`
	RelError  float64 `json:"rel_error"`
	Bound     float64 `json:"bound"`
	TFLOPS    float64 `json:"tflops"`
	OK        bool    `json:"ok"`
	Error     string  `json:"error,omitempty"`
}

func main() {
	runs := flag.Int("runs", 100, "timed runs per variant (the median, p10 and p90 are reported)")
	only := flag.String("only", "", "comma-separated variants to run (default: all of "+strings.Join(names(), ",")+")")
	seed := flag.Uint64("seed", 0, "seed of the random data (0: from the clock)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "alexnet: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	if *runs < 1 {
		fmt.Fprintf(os.Stderr, "alexnet: -runs %d: must be at least 1\n", *runs)
		os.Exit(2)
	}
	chosen, err := pick(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "alexnet:", err)
		os.Exit(2)
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}

	// CUDA contexts belong to OS threads: every cu call below runs on this one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	device, err := deviceName()
	if err != nil {
		fmt.Fprintln(os.Stderr, "alexnet:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "alexnet: %s, seed %d, %d warm-up and %d timed runs per variant, L2 flushed before each\n", device, *seed, warmups, *runs)

	var results []result
	failed := false
	enc := json.NewEncoder(os.Stdout)
	for i, v := range chosen {
		r := run(v, device, *runs, rand.New(rand.NewPCG(*seed, uint64(i))))
		if !r.OK {
			failed = true
			fmt.Fprintf(os.Stderr, "alexnet: %s: FAIL: %s\n", v.name, r.Error)
		}
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, "alexnet: write JSON:", err)
			os.Exit(1)
		}
		results = append(results, r)
	}
	printTable(results)
	if failed {
		os.Exit(1)
	}
}

// MarshalJSON writes r with a NaN or infinite relative error as null.
func (r result) MarshalJSON() ([]byte, error) {
	type plain result
	line := struct {
		plain
		RelError *float64 `json:"rel_error"` // shadows plain's
	}{plain: plain(r)}
	if !math.IsNaN(r.RelError) && !math.IsInf(r.RelError, 0) {
		line.RelError = &r.RelError
	}
	return json.Marshal(line)
}

// names lists the variants' names.
func names() []string {
	var ns []string
	for _, v := range variants {
		ns = append(ns, v.name)
	}
	return ns
}

// pick returns the variants -only names, in table order; all when empty.
func pick(only string) ([]variant, error) {
	if strings.TrimSpace(only) == "" {
		return variants, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(names(), n) {
			return nil, fmt.Errorf("-only: unknown variant %q (known: %s)", n, strings.Join(names(), ", "))
		}
		want[n] = true
	}
	var vs []variant
	for _, v := range variants {
		if want[v.name] {
			vs = append(vs, v)
		}
	}
	return vs, nil
}

// deviceName names GPU 0.
func deviceName() (string, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return "", fmt.Errorf("count CUDA devices: %w", err)
	}
	if n == 0 {
		return "", errors.New("no CUDA device: this example needs a GPU")
	}
	dev, err := cu.GetDevice(0)
	if err != nil {
		return "", fmt.Errorf("device 0: %w", err)
	}
	name, err := dev.Name()
	if err != nil {
		return "", fmt.Errorf("device 0: name: %w", err)
	}
	return name, nil
}

// run checks and times one variant in a context of its own on device 0.
func run(v variant, device string, runs int, rng *rand.Rand) result {
	c := v.c
	r := result{Variant: v.name, Precision: c.Precision, Layout: c.Layout, Kernel: c.KernelName,
		TunedArch: c.TunedArch, Device: device, Runs: runs, RelError: math.NaN()}
	bound, ok := errorBounds[c.Precision]
	r.Bound = bound
	err := c.validate()
	if err == nil && !ok {
		err = fmt.Errorf("precision %q has no error bound here", c.Precision)
	}
	if err == nil {
		switch c.Precision {
		case "fp16":
			err = measure(v, fp16Elems, runs, rng, &r)
		case "bf16":
			err = measure(v, bf16Elems, runs, rng, &r)
		default: // fp32, tf32 and 3xtf32 keep float32 data
			err = measure(v, float32Elems, runs, rng, &r)
		}
	}
	if err != nil {
		r.Error = err.Error()
		return r
	}
	// Written so that a NaN error fails too.
	if !(r.RelError <= bound) {
		r.Error = fmt.Sprintf("relative L2 error %.3g exceeds the bound %g for %s", r.RelError, bound, c.Precision)
		return r
	}
	r.OK = true
	return r
}

// measure does the work of run with host elements of type E; it fills r's
// error and timings.
func measure[E element](v variant, d codec[E], runs int, rng *rand.Rand, r *result) (err error) {
	c := v.c
	if size := int(unsafe.Sizeof(E(0))); c.ElementBytes != size {
		return fmt.Errorf("the package's elements have %d bytes, the host's for %s %d", c.ElementBytes, c.Precision, size)
	}
	dev, err := cu.GetDevice(0)
	if err != nil {
		return fmt.Errorf("device 0: %w", err)
	}
	ctx, err := dev.MakeContext(cu.SchedAuto) // current on this thread
	if err != nil {
		return fmt.Errorf("make a context on device 0: %w", err)
	}
	defer func() { err = errors.Join(err, wrap("destroy the context", ctx.Destroy())) }()

	k, err := v.load()
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer func() { err = errors.Join(err, wrap("close the kernel", k.close())) }()
	stream, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return fmt.Errorf("make a stream: %w", err)
	}
	defer func() { err = errors.Join(err, wrap("destroy the stream", stream.Destroy())) }()

	in := d.random(rng, c.InputElems, 0, 1)
	filter := d.random(rng, c.FilterElems, -1, 1)
	bias := d.random(rng, c.BiasElems, -1, 1)
	out := make([]E, c.OutputElems)

	var mem []cu.DevicePtr
	defer func() {
		for _, p := range mem {
			err = errors.Join(err, wrap("free device memory", cu.MemFree(p)))
		}
	}()
	alloc := func(bytes int) (cu.DevicePtr, error) {
		if bytes == 0 {
			return 0, nil
		}
		p, err := cu.MemAlloc(int64(bytes))
		if err != nil {
			return 0, fmt.Errorf("allocate %d bytes: %w", bytes, err)
		}
		mem = append(mem, p)
		return p, nil
	}
	var dIn, dFilter, dBias, dOut, dFlush cu.DevicePtr
	for _, a := range []struct {
		p     *cu.DevicePtr
		bytes int
	}{
		{&dIn, c.InputElems * c.ElementBytes}, {&dFilter, c.FilterElems * c.ElementBytes}, {&dBias, c.BiasElems * c.ElementBytes},
		{&dOut, c.OutputElems * c.ElementBytes}, {&dFlush, flushLen * 4},
	} {
		if *a.p, err = alloc(a.bytes); err != nil {
			return err
		}
	}
	if err := toDevice(dIn, in); err != nil {
		return err
	}
	if err := toDevice(dFilter, filter); err != nil {
		return err
	}
	if err := toDevice(dBias, bias); err != nil {
		return err
	}
	if err := d.poison(dOut, int64(c.OutputElems)); err != nil {
		return fmt.Errorf("poison the output with NaN: %w", err)
	}
	// The copies and the memset ran on the legacy default stream, which a
	// non-blocking stream does not wait for.
	if err := cu.Synchronize(); err != nil {
		return fmt.Errorf("synchronize before the launch: %w", err)
	}
	if err := k.forward(stream, dOut, dIn, dFilter, dBias); err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	if err := stream.Synchronize(); err != nil {
		return fmt.Errorf("synchronize after the launch: %w", err)
	}
	if len(out) > 0 {
		if err := cu.MemcpyDtoH(unsafe.Pointer(&out[0]), dOut, int64(len(out))*int64(c.ElementBytes)); err != nil {
			return fmt.Errorf("copy the output back: %w", err)
		}
	}
	if bad, first := d.notFinite(out); bad > 0 {
		return fmt.Errorf("%d of %d outputs are not finite, the first out[%d] = %v: the kernel left them unwritten or overflowed", bad, len(out), first, d.fromElem(out[first]))
	}
	r.RelError = d.relError(c, rng, out, in, filter, bias)

	ms, err := timeRuns(k, stream, runs, dOut, dIn, dFilter, dBias, dFlush)
	if err != nil {
		return err
	}
	slices.Sort(ms)
	r.MedianMS, r.P10MS, r.P90MS = median(ms), quantile(ms, 0.1), quantile(ms, 0.9)
	r.TFLOPS = c.FLOPs / (r.MedianMS * 1e-3) / 1e12
	return nil
}

// timeRuns launches the kernel warmups times, then times runs launches with
// CUDA events around Forward alone, each after a 256 MB memset on the same
// stream that flushes the L2 cache. It returns the times in milliseconds.
func timeRuns(k launcher, stream cu.Stream, runs int, out, in, filter, bias, flush cu.DevicePtr) (ms []float64, err error) {
	for range warmups {
		if err := k.forward(stream, out, in, filter, bias); err != nil {
			return nil, fmt.Errorf("warm-up: forward: %w", err)
		}
	}
	start, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return nil, fmt.Errorf("make an event: %w", err)
	}
	defer func() { err = errors.Join(err, wrap("destroy an event", cu.DestroyEvent(&start))) }()
	stop, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return nil, fmt.Errorf("make an event: %w", err)
	}
	defer func() { err = errors.Join(err, wrap("destroy an event", cu.DestroyEvent(&stop))) }()
	for i := range runs {
		if err := cu.MemsetD32Async(flush, uint(i&0xff), flushLen, stream); err != nil {
			return nil, fmt.Errorf("run %d: flush the L2 cache: %w", i, err)
		}
		if err := start.Record(stream); err != nil {
			return nil, fmt.Errorf("run %d: record the start event: %w", i, err)
		}
		if err := k.forward(stream, out, in, filter, bias); err != nil {
			return nil, fmt.Errorf("run %d: forward: %w", i, err)
		}
		if err := stop.Record(stream); err != nil {
			return nil, fmt.Errorf("run %d: record the stop event: %w", i, err)
		}
		if err := stop.Synchronize(); err != nil {
			return nil, fmt.Errorf("run %d: synchronize: %w", i, err)
		}
		t, err := start.Elapsed(stop)
		if err != nil {
			return nil, fmt.Errorf("run %d: elapsed time: %w", i, err)
		}
		ms = append(ms, t)
	}
	return ms, nil
}

// wrap adds what failed to a non-nil error.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// element is the host type of one tensor element: a float32, or the bits of
// an fp16 in a uint16.
type element interface{ float32 | uint16 }

// codec is how the host makes, reads and poisons elements of one type.
type codec[E element] struct {
	toElem   func(float32) E                 // rounds a float32 to an element
	fromElem func(E) float64                 // widens an element, exactly
	poison   func(cu.DevicePtr, int64) error // fills n elements with NaN
}

// float32Elems are the elements of fp32, tf32 and 3xtf32.
var float32Elems = codec[float32]{
	toElem:   func(f float32) float32 { return f },
	fromElem: func(e float32) float64 { return float64(e) },
	poison:   func(p cu.DevicePtr, n int64) error { return cu.MemsetD32(p, 0x7fc00000, n) }, // a quiet float32 NaN
}

// fp16Elems are the elements of fp16: IEEE binary16 bits.
var fp16Elems = codec[uint16]{
	toElem:   fp16FromFloat32,
	fromElem: fp16ToFloat64,
	poison:   func(p cu.DevicePtr, n int64) error { return cu.MemsetD16(p, fp16NaN, n) },
}

// fp16NaN is a quiet fp16 NaN.
const fp16NaN = 0x7e00

// bf16Elems are the elements of bf16: the upper 16 bits of a float32.
var bf16Elems = codec[uint16]{
	toElem:   bf16FromFloat32,
	fromElem: func(h uint16) float64 { return float64(math.Float32frombits(uint32(h) << 16)) },
	poison:   func(p cu.DevicePtr, n int64) error { return cu.MemsetD16(p, bf16NaN, n) },
}

// bf16NaN is a quiet bf16 NaN.
const bf16NaN = 0x7fc0

// bf16FromFloat32 rounds f to the nearest bf16, ties to even (a NaN stays a
// quiet NaN of the same sign), and returns its bits.
func bf16FromFloat32(f float32) uint16 {
	bits := math.Float32bits(f)
	if f != f {
		return uint16(bits>>16)&0x8000 | bf16NaN
	}
	return uint16(roundShift(bits, 16)) // carries into the exponent, and to infinity
}

// toDevice copies xs to the device memory at p.
func toDevice[E element](p cu.DevicePtr, xs []E) error {
	if len(xs) == 0 {
		return nil
	}
	if err := cu.MemcpyHtoD(p, unsafe.Pointer(&xs[0]), int64(len(xs))*int64(unsafe.Sizeof(xs[0]))); err != nil {
		return fmt.Errorf("copy %d elements to the device: %w", len(xs), err)
	}
	return nil
}

// random returns n elements drawn uniformly from [lo, hi) as float32s and
// rounded to elements.
func (d codec[E]) random(rng *rand.Rand, n int, lo, hi float64) []E {
	xs := make([]E, n)
	for i := range xs {
		xs[i] = d.toElem(float32(lo + (hi-lo)*rng.Float64()))
	}
	return xs
}

// notFinite counts the NaN and infinite outputs and finds the first.
func (d codec[E]) notFinite(out []E) (bad, first int) {
	first = -1
	for i, e := range out {
		if v := d.fromElem(e); math.IsNaN(v) || math.IsInf(v, 0) {
			if bad == 0 {
				first = i
			}
			bad++
		}
	}
	return bad, first
}

// fp16FromFloat32 rounds f to the nearest fp16, ties to even, and returns its
// bits. Results below the smallest normal fp16 (2^-14) are subnormal or
// zero, results beyond the largest finite one (65504) are infinite, and a
// NaN becomes fp16NaN with f's sign. (The same conversion as in the
// generated package's test.)
func fp16FromFloat32(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int(bits>>23) & 0xff // biased by 127
	mant := bits & 0x7fffff
	if exp == 0xff { // infinite or NaN
		if mant != 0 {
			return sign | fp16NaN
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased by 15, as in fp16
	if e >= 0x1f {
		return sign | 0x7c00 // too large: infinite
	}
	if e <= 0 {
		// A subnormal fp16 or zero: the float's 24-bit significand, leading
		// 1 included, shifted right so that its unit becomes 2^-24.
		if e < -10 {
			return sign // below half the smallest subnormal (2^-25): zero
		}
		return sign | uint16(roundShift(mant|0x800000, uint(14-e)))
	}
	// A normal fp16: exponent and mantissa shifted together, so that
	// rounding up carries into the exponent, and past 65504 to infinity.
	return sign | uint16(roundShift(uint32(e)<<23|mant, 13))
}

// roundShift returns x/2^n rounded to the nearest integer, ties to even,
// for 0 < n < 32.
func roundShift(x uint32, n uint) uint32 {
	q := x >> n
	rest := x & (uint32(1)<<n - 1)
	half := uint32(1) << (n - 1)
	if rest > half || rest == half && q&1 == 1 {
		q++
	}
	return q
}

// fp16ToFloat64 decodes the fp16 bits h, exactly.
func fp16ToFloat64(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10)&0x1f, float64(h&0x3ff)
	switch exp {
	case 0: // zero or subnormal: mant × 2^-24
		return sign * math.Ldexp(mant, -24)
	case 0x1f: // infinite or NaN
		if mant != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1024+mant, exp-25) // (1 + mant/1024) × 2^(exp-15)
}

// median of sorted xs.
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// quantile of sorted xs, the nearest rank (as bench/cudnn.py computes it).
func quantile(xs []float64, f float64) float64 {
	return xs[min(len(xs)-1, int(math.Round(f*float64(len(xs)-1))))]
}

// validate checks that the constants agree with each other and name a
// layout the reference knows.
func (c consts) validate() error {
	if c.ElementBytes != 2 && c.ElementBytes != 4 {
		return fmt.Errorf("ElementBytes = %d: the example knows 2- and 4-byte elements", c.ElementBytes)
	}
	if c.Layout != "nchw" && c.Layout != "nhwc" {
		return fmt.Errorf("layout %q: the reference knows nchw and nhwc", c.Layout)
	}
	if c.Groups < 1 || c.C%c.Groups != 0 || c.K%c.Groups != 0 {
		return fmt.Errorf("groups=%d does not divide C=%d and K=%d", c.Groups, c.C, c.K)
	}
	bias := 0
	if c.HasBias {
		bias = c.K
	}
	if c.InputElems != c.N*c.C*c.H*c.W || c.FilterElems != c.K*(c.C/c.Groups)*c.R*c.S ||
		c.BiasElems != bias || c.OutputElems != c.N*c.K*c.P*c.Q {
		return errors.New("the package's element counts disagree with its sizes")
	}
	return nil
}

// relError is ‖out−ref‖/‖ref‖ over samples random outputs, ref the float64
// reference.
func (d codec[E]) relError(c consts, rng *rand.Rand, out, in, filter, bias []E) float64 {
	var diff2, ref2 float64
	for range samples {
		n, k, p, q := rng.IntN(c.N), rng.IntN(c.K), rng.IntN(c.P), rng.IntN(c.Q)
		want := d.reference(c, in, filter, bias, n, k, p, q)
		diff := d.fromElem(out[c.outputAt(n, k, p, q)]) - want
		diff2 += diff * diff
		ref2 += want * want
	}
	if ref2 == 0 {
		return math.Sqrt(diff2) // an all-zero reference: the absolute error
	}
	return math.Sqrt(diff2 / ref2)
}

// reference computes out[n][k][p][q] in float64 from the elements as they
// are (rounded to fp16 for fp16): the sum over k's channel group and the
// filter taps inside the input (padding reads as zero), plus the bias.
func (d codec[E]) reference(c consts, in, filter, bias []E, n, k, p, q int) float64 {
	var sum float64
	if c.HasBias {
		sum = d.fromElem(bias[k])
	}
	cg := c.C / c.Groups
	group := k / (c.K / c.Groups)
	for ch := range cg {
		for r := range c.R {
			h := p*c.StrideH - c.PadH + r*c.DilationH
			if h < 0 || h >= c.H {
				continue
			}
			for s := range c.S {
				w := q*c.StrideW - c.PadW + s*c.DilationW
				if w < 0 || w >= c.W {
					continue
				}
				sum += d.fromElem(in[c.inputAt(n, group*cg+ch, h, w)]) * d.fromElem(filter[c.filterAt(k, ch, r, s)])
			}
		}
	}
	return sum
}

// inputAt is the offset of in[n][c][h][w]: NCHW or NHWC.
func (c consts) inputAt(n, ch, h, w int) int {
	if c.Layout == "nhwc" {
		return ((n*c.H+h)*c.W+w)*c.C + ch
	}
	return ((n*c.C+ch)*c.H+h)*c.W + w
}

// filterAt is the offset of filter[k][c][r][s], c counted within k's group:
// KCRS for nchw, KRSC for nhwc.
func (c consts) filterAt(k, ch, r, s int) int {
	cg := c.C / c.Groups
	if c.Layout == "nhwc" {
		return ((k*c.R+r)*c.S+s)*cg + ch
	}
	return ((k*cg+ch)*c.R+r)*c.S + s
}

// outputAt is the offset of out[n][k][p][q]: NKPQ for nchw, NPQK for nhwc.
func (c consts) outputAt(n, k, p, q int) int {
	if c.Layout == "nhwc" {
		return ((n*c.P+p)*c.Q+q)*c.K + k
	}
	return ((n*c.K+k)*c.P+p)*c.Q + q
}

// printTable writes the results for people to stderr.
func printTable(rs []result) {
	tw := tabwriter.NewWriter(os.Stderr, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tprecision\tlayout\tmedian ms\tp10 ms\tp90 ms\tTFLOP/s\trel. error\tbound\tcheck\t")
	for _, r := range rs {
		check := "ok"
		if !r.OK {
			check = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.1f\t%.2e\t%.0e\t%s\t\n", r.Variant, r.Precision, r.Layout,
			r.MedianMS, r.P10MS, r.P90MS, r.TFLOPS, r.RelError, r.Bound, check)
	}
	tw.Flush()
	for _, r := range rs {
		fmt.Fprintf(os.Stderr, "  %-9s kernel %s (CUBIN for %s)\n", r.Variant, r.Kernel, r.TunedArch)
	}
}
