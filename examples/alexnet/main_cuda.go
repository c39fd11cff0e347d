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

	"github.com/convgen/convgen/convrt"
	"github.com/convgen/convgen/examples/alexnet/bf16nhwc"
	"github.com/convgen/convgen/examples/alexnet/fp16nhwc"
	"github.com/convgen/convgen/examples/alexnet/fp32"
	"github.com/convgen/convgen/examples/alexnet/tf32"
	"github.com/convgen/convgen/examples/alexnet/tf32nhwc"
	"github.com/convgen/convgen/examples/alexnet/tf32x3"
	"github.com/convgen/convgen/problem"
)

// variants are the generated kernels the example runs, in this order. To add
// one, generate its package (a go:generate line in doc.go), import it and add
// its Load here: every generated package's kernel is a convrt.Conv, which
// describes its own problem.
var variants = []variant{
	{"fp32", conv(fp32.Load)},
	{"tf32", conv(tf32.Load)},
	{"tf32nhwc", conv(tf32nhwc.Load)},
	{"tf32x3", conv(tf32x3.Load)},
	{"fp16nhwc", conv(fp16nhwc.Load)},
	{"bf16nhwc", conv(bf16nhwc.Load)},
}

const (
	samples  = 4096     // outputs checked against the reference
	warmups  = 10       // untimed launches before the timed ones
	flushLen = 64 << 20 // 32-bit words of the L2 flush buffer (256 MB)
)

// variant is one generated kernel package.
type variant struct {
	name string
	load func() (convrt.Conv, error)
}

// conv adapts a generated package's Load to return the shared interface.
func conv[K convrt.Conv](load func() (K, error)) func() (convrt.Conv, error) {
	return func() (convrt.Conv, error) {
		k, err := load()
		if err != nil {
			return nil, err
		}
		return k, nil
	}
}

// result is one variant's outcome, also its JSON line.
type result struct {
	Variant   string  `json:"variant"`
	Precision string  `json:"precision"`
	Layout    string  `json:"layout"`
	Kernel    string  `json:"kernel"`
	TunedArch string  `json:"tuned_arch"`
	Image     string  `json:"image"`
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
	r := result{Variant: v.name, Device: device, Runs: runs, RelError: math.NaN()}
	if err := load(v, &r, func(k convrt.Conv) error {
		// The precision decides the host element type.
		switch k.Info().Problem.Precision {
		case problem.FP16:
			return measure(k, convrt.FP16Codec(), runs, rng, &r)
		case problem.BF16:
			return measure(k, convrt.BF16Codec(), runs, rng, &r)
		default: // fp32, tf32 and 3xtf32 keep float32 data
			return measure(k, convrt.Float32Codec(), runs, rng, &r)
		}
	}); err != nil {
		r.Error = err.Error()
		return r
	}
	// Written so that a NaN error fails too.
	if !(r.RelError <= r.Bound) {
		r.Error = fmt.Sprintf("relative L2 error %.3g exceeds the bound %g for %s", r.RelError, r.Bound, r.Precision)
		return r
	}
	r.OK = true
	return r
}

// load makes a context on device 0 current on this thread, loads v's kernel
// in it, describes it in r and runs f with it; then it closes the kernel and
// destroys the context.
func load(v variant, r *result, f func(convrt.Conv) error) (err error) {
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
	defer func() { err = errors.Join(err, wrap("close the kernel", k.Close())) }()
	info := k.Info()
	p := info.Problem
	r.Precision, r.Layout, r.Kernel, r.TunedArch, r.Image = string(p.Precision), string(p.Layout), info.Launch.Kernel, info.TunedArch, info.Image
	r.Bound = p.Precision.ErrorBound()
	return f(k)
}

// measure checks and times k with host elements of type E; it fills r's
// error and timings.
func measure[E convrt.Element](k convrt.Conv, codec convrt.Codec[E], runs int, rng *rand.Rand, r *result) (err error) {
	p := k.Info().Problem
	if size := int(unsafe.Sizeof(*new(E))); p.Precision.ElementBytes() != size {
		return fmt.Errorf("the package's elements have %d bytes, the host's for %s %d", p.Precision.ElementBytes(), p.Precision, size)
	}
	stream, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return fmt.Errorf("make a stream: %w", err)
	}
	defer func() { err = errors.Join(err, wrap("destroy the stream", stream.Destroy())) }()

	nIn, nFilter, nBias, nOut := p.Shape.Elements()
	in := random(rng, codec, nIn, 0, 1)
	filter := random(rng, codec, nFilter, -1, 1)
	bias := random(rng, codec, nBias, -1, 1)
	out := make([]E, nOut)
	elemBytes := p.Precision.ElementBytes()

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
		{&dIn, nIn * elemBytes}, {&dFilter, nFilter * elemBytes}, {&dBias, nBias * elemBytes},
		{&dOut, nOut * elemBytes}, {&dFlush, flushLen * 4},
	} {
		if *a.p, err = alloc(a.bytes); err != nil {
			return err
		}
	}
	if err := errors.Join(toDevice(dIn, in), toDevice(dFilter, filter), toDevice(dBias, bias)); err != nil {
		return err
	}
	if err := poison(dOut, codec, nOut); err != nil {
		return fmt.Errorf("poison the output with NaN: %w", err)
	}
	// The copies and the memset ran on the legacy default stream, which a
	// non-blocking stream does not wait for.
	if err := cu.Synchronize(); err != nil {
		return fmt.Errorf("synchronize before the launch: %w", err)
	}
	if err := forward(k, stream, dOut, dIn, dFilter, dBias); err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	if err := stream.Synchronize(); err != nil {
		return fmt.Errorf("synchronize after the launch: %w", err)
	}
	if len(out) > 0 {
		if err := cu.MemcpyDtoH(unsafe.Pointer(&out[0]), dOut, int64(len(out)*elemBytes)); err != nil {
			return fmt.Errorf("copy the output back: %w", err)
		}
	}
	if bad, first := notFinite(codec, out); bad > 0 {
		return fmt.Errorf("%d of %d outputs are not finite, the first out[%d] = %v: the kernel left them unwritten or overflowed", bad, len(out), first, codec.Decode(out[first]))
	}
	points := make([]convrt.At, samples)
	for i := range points {
		points[i] = convrt.At{N: rng.IntN(p.Shape.N), K: rng.IntN(p.Shape.K), P: rng.IntN(p.Shape.P()), Q: rng.IntN(p.Shape.Q())}
	}
	r.RelError, _ = convrt.RelError(p, codec.Decode, out, in, filter, bias, points)

	ms, err := timeRuns(k, stream, runs, dOut, dIn, dFilter, dBias, dFlush)
	if err != nil {
		return err
	}
	slices.Sort(ms)
	r.MedianMS, r.P10MS, r.P90MS = median(ms), quantile(ms, 0.1), quantile(ms, 0.9)
	r.TFLOPS = p.Shape.FLOPs() / (r.MedianMS * 1e-3) / 1e12
	return nil
}

// forward launches k on stream with gorgonia.org/cu's handles.
func forward(k convrt.Conv, stream cu.Stream, out, in, filter, bias cu.DevicePtr) error {
	return k.Forward(convrt.StreamOf(stream), convrt.PtrOf(out), convrt.PtrOf(in), convrt.PtrOf(filter), convrt.PtrOf(bias))
}

// timeRuns launches the kernel warmups times, then times runs launches with
// CUDA events around Forward alone, each after a 256 MB memset on the same
// stream that flushes the L2 cache. It returns the times in milliseconds.
func timeRuns(k convrt.Conv, stream cu.Stream, runs int, out, in, filter, bias, flush cu.DevicePtr) (ms []float64, err error) {
	for range warmups {
		if err := forward(k, stream, out, in, filter, bias); err != nil {
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
		if err := forward(k, stream, out, in, filter, bias); err != nil {
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

// poison fills n elements at p with NaN.
func poison[E convrt.Element](p cu.DevicePtr, codec convrt.Codec[E], n int) error {
	if unsafe.Sizeof(*new(E)) == 2 {
		return cu.MemsetD16(p, uint16(codec.NaNBits), int64(n))
	}
	return cu.MemsetD32(p, codec.NaNBits, int64(n))
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

// random returns n elements drawn uniformly from [lo, hi) as float32s and
// rounded to elements.
func random[E convrt.Element](rng *rand.Rand, codec convrt.Codec[E], n int, lo, hi float64) []E {
	xs := make([]E, n)
	for i := range xs {
		xs[i] = codec.Encode(float32(lo + (hi-lo)*rng.Float64()))
	}
	return xs
}

// notFinite counts the NaN and infinite outputs and finds the first.
func notFinite[E convrt.Element](codec convrt.Codec[E], out []E) (bad, first int) {
	first = -1
	for i, e := range out {
		if v := codec.Decode(e); math.IsNaN(v) || math.IsInf(v, 0) {
			if bad == 0 {
				first = i
			}
			bad++
		}
	}
	return bad, first
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
		fmt.Fprintf(os.Stderr, "  %-9s kernel %s (%s; tuned for %s)\n", r.Variant, r.Kernel, r.Image, r.TunedArch)
	}
}
