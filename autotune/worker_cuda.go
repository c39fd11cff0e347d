//go:build cuda

package autotune

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// ServeWorker runs the measuring side of the tuner: it reads JSON requests
// line by line from r and answers each with one JSON line on w. It returns
// after a fault (the CUDA context is then unusable) or at end of input.
func ServeWorker(r io.Reader, w io.Writer) error {
	dev, err := gpu.Open(0)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer dev.Close()
	wk := &worker{dev: dev}
	in := bufio.NewScanner(r)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	enc := json.NewEncoder(w)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			return fmt.Errorf("worker: bad request: %w", err)
		}
		resp := wk.handle(req)
		resp.finite()
		if err := enc.Encode(resp); err != nil {
			return fmt.Errorf("worker: write response: %w", err)
		}
		if resp.Status == StatusFault {
			return nil // the context is poisoned: let the tuner start a fresh worker
		}
	}
	return in.Err()
}

// worker holds the device buffers of one problem.
type worker struct {
	dev     *gpu.Device
	prob    problem.Problem
	ready   bool
	fill    gpu.Function
	ref     gpu.Function
	compare gpu.Function
	gather  gpu.Function

	in, filter, bias, out, refOut, sums, idx, gathered, flush cu.DevicePtr
	nIn, nFilter, nBias, nOut                                 int64
	// ops are the kernel's four operands (problem.Op): out, in, filter,
	// bias; nIn, nFilter, nBias and nOut count their elements, nRef the
	// reference's float64 values (kernels.ReferenceOutputs).
	ops  [4]problem.Operand
	nRef int64
	// outputs are what a candidate writes, each checked against its part
	// of the reference: out, and for wgrad with a bias the FP32 dBias in
	// the bias parameter.
	outputs []output
	// compareF32 and gatherF32 check FP32 outputs (dBias); loaded only
	// for a problem that has one.
	compareF32, gatherF32 gpu.Function
	// fillOut fills a residual of the output's type when it is not the
	// input's (-out-precision); loaded only then.
	fillOut gpu.Function
	// The epilogue chain's arrays (0 when the chain does not read them):
	// scale and shift, K float32 each, and the residual, nOut elements.
	scale, shift, residual cu.DevicePtr
	flushBytes             int64
	maxSamples             int
}

// output is one tensor a candidate writes: n elements at buf, of the
// element type or FP32, whose reference is at element ref of refOut.
type output struct {
	name string
	buf  cu.DevicePtr
	n    int64
	ref  int64
	f32  bool
}

func (wk *worker) handle(req request) response {
	switch req.Op {
	case "info":
		if err := wk.measureBandwidth(); err != nil {
			return response{Error: err.Error()}
		}
		return response{Info: wk.dev.Info}
	case "init":
		if err := wk.init(req); err != nil {
			return response{Error: err.Error()}
		}
		return response{Info: wk.dev.Info}
	case "measure":
		if !wk.ready {
			return response{Error: "measure before init"}
		}
		return wk.measure(req)
	}
	return response{Error: fmt.Sprintf("unknown op %q", req.Op)}
}

// measureBandwidth times a 1 GiB device-to-device copy (best of 5).
func (wk *worker) measureBandwidth() error {
	if wk.dev.Info.MemoryGBps > 0 {
		return nil
	}
	const bytes = 1 << 30
	a, err := wk.dev.Alloc(bytes)
	if err != nil {
		return err
	}
	defer cu.MemFree(a)
	b, err := wk.dev.Alloc(bytes)
	if err != nil {
		return err
	}
	defer cu.MemFree(b)
	// A defined source: copying uninitialised memory is what initcheck
	// (scripts/sanitize) reports.
	if err := cu.MemsetD32Async(a, 0, bytes/4, wk.dev.Stream); err != nil {
		return fmt.Errorf("bandwidth copy: %w", err)
	}
	best := math.Inf(1)
	for i := 0; i < 6; i++ {
		ms, err := wk.timed(func() error { return cu.MemcpyDtoDAsync(b, a, bytes, wk.dev.Stream) })
		if err != nil {
			return fmt.Errorf("bandwidth copy: %w", err)
		}
		if i > 0 { // the first copy is warm-up
			best = math.Min(best, ms)
		}
	}
	wk.dev.Info.MemoryGBps = 2 * bytes / (best * 1e-3) / 1e9
	return nil
}

// timed runs f between two events on the stream and returns milliseconds.
func (wk *worker) timed(f func() error) (float64, error) {
	start, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return 0, err
	}
	defer cu.DestroyEvent(&start)
	stop, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return 0, err
	}
	defer cu.DestroyEvent(&stop)
	if err := start.Record(wk.dev.Stream); err != nil {
		return 0, err
	}
	if err := f(); err != nil {
		return 0, err
	}
	if err := stop.Record(wk.dev.Stream); err != nil {
		return 0, err
	}
	if err := stop.Synchronize(); err != nil {
		return 0, err
	}
	return start.Elapsed(stop)
}

func (wk *worker) init(req request) error {
	if req.Problem == nil {
		return fmt.Errorf("init without a problem")
	}
	wk.prob = *req.Problem
	image, err := os.ReadFile(req.SupportImage)
	if err != nil {
		return fmt.Errorf("read checking kernels: %w", err)
	}
	for _, f := range []struct {
		dst  *gpu.Function
		name string
	}{{&wk.fill, "convgen_fill"}, {&wk.ref, "convgen_reference"}, {&wk.compare, "convgen_compare"}, {&wk.gather, "convgen_gather"}} {
		if *f.dst, err = wk.dev.Load(image, f.name, 0); err != nil {
			return fmt.Errorf("checking kernels: %w", err)
		}
	}
	// The operands by position (out, in, filter, bias): for the forward
	// op output, input, filter and bias, as before gradients.
	wk.ops = wk.prob.Operands()
	wk.nOut, wk.nIn, wk.nFilter, wk.nBias = int64(wk.ops[0].Elems), int64(wk.ops[1].Elems), int64(wk.ops[2].Elems), int64(wk.ops[3].Elems)
	wk.nRef = kernels.ReferenceOutputs(wk.prob)
	eb := int64(wk.prob.Precision.ElementBytes())
	// The output (and a residual) has the output's type, which
	// -out-precision may make other than the input's (forward op only).
	oeb := int64(wk.prob.OutElementBytes())
	if wk.prob.OutDiffers() {
		if wk.fillOut, err = wk.dev.Load(image, "convgen_fill_out", 0); err != nil {
			return fmt.Errorf("checking kernels: %w", err)
		}
	}
	biasBytes := eb
	if wk.ops[3].FP32 {
		biasBytes = 4
	}
	wk.maxSamples = 4096
	wk.flushBytes = max(int64(2*wk.dev.Info.L2Bytes), 64<<20)
	for _, a := range []struct {
		dst   *cu.DevicePtr
		bytes int64
	}{{&wk.in, wk.nIn * eb}, {&wk.filter, wk.nFilter * eb}, {&wk.bias, max(wk.nBias, 1) * biasBytes},
		{&wk.out, wk.nOut * oeb}, {&wk.refOut, wk.nRef * 8}, {&wk.sums, 3 * 8},
		{&wk.idx, int64(wk.maxSamples) * 8}, {&wk.gathered, int64(wk.maxSamples) * 16}, {&wk.flush, wk.flushBytes}} {
		if *a.dst, err = wk.dev.Alloc(a.bytes); err != nil {
			return err
		}
	}
	wk.outputs = []output{{name: wk.ops[0].Name, buf: wk.out, n: wk.nOut}}
	if wk.ops[3].Output && wk.nBias > 0 {
		wk.outputs = append(wk.outputs, output{name: wk.ops[3].Name, buf: wk.bias, n: wk.nBias, ref: wk.nOut, f32: true})
		for _, f := range []struct {
			dst  *gpu.Function
			name string
		}{{&wk.compareF32, "convgen_compare_f32"}, {&wk.gatherF32, "convgen_gather_f32"}} {
			if *f.dst, err = wk.dev.Load(image, f.name, 0); err != nil {
				return fmt.Errorf("checking kernels: %w", err)
			}
		}
	}
	if wk.prob.Epilogue.NeedsScaleShift() {
		for _, dst := range []*cu.DevicePtr{&wk.scale, &wk.shift} {
			if *dst, err = wk.dev.Alloc(int64(wk.prob.Shape.K) * 4); err != nil {
				return err
			}
		}
	}
	if wk.prob.Epilogue.NeedsResidual() {
		if wk.residual, err = wk.dev.Alloc(wk.nOut * oeb); err != nil {
			return err
		}
	}
	wk.ready = true
	return nil
}

// blocksFor is the grid of a grid-stride checking kernel (fill) over n
// elements: one 256-thread block per 256 elements, at most 65535 blocks,
// each thread looping over the rest (tensors of 2^31 elements or more).
func blocksFor(n int64) int { return int(min((n+255)/256, 65535)) }

// prepare fills fresh inputs from seed and computes the reference output.
func (wk *worker) prepare(seed uint32) error {
	inSeed, fSeed, bSeed := seeds(seed)
	for i, f := range []struct {
		buf  cu.DevicePtr
		n    int64
		seed uint32
	}{{wk.in, wk.nIn, inSeed}, {wk.filter, wk.nFilter, fSeed}, {wk.bias, wk.nBias, bSeed}} {
		// The inputs: X in [0, 1), the others in [-1, 1) (fillSymmetric);
		// an output in the bias parameter (dBias) is not filled.
		op := wk.ops[i+1]
		if f.n == 0 || op.Output {
			continue
		}
		var sym uint64
		if fillSymmetric(op.Name) {
			sym = 1
		}
		if err := wk.dev.Launch(wk.fill, [3]int{blocksFor(f.n), 1, 1}, [3]int{256, 1, 1}, 0,
			uint64(f.buf), uint64(f.n), uint64(f.seed), sym); err != nil {
			return fmt.Errorf("fill: %w", err)
		}
	}
	if err := wk.prepareEpilogue(seed); err != nil {
		return err
	}
	// The reference loops over the grid too: its x dimension stays within
	// CUDA's 2^31−1 blocks for any output.
	grid := kernels.ReferenceBlocks(wk.nRef)
	if wk.prob.Op == problem.OpWgrad {
		grid = kernels.ReferenceWgradBlocks(wk.nRef)
	}
	if err := wk.dev.Launch(wk.ref, [3]int{grid, 1, 1}, [3]int{256, 1, 1}, 0,
		wk.args(wk.refOut)...); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	return wk.dev.Sync()
}

// prepareEpilogue fills the arrays the epilogue chain reads from seed: the
// residual with convgen_fill, scale and shift from the host (hostScaleShift
// and hostResidual give the same values to the CPU reference).
func (wk *worker) prepareEpilogue(seed uint32) error {
	c := wk.prob.Epilogue
	if c.NeedsResidual() {
		_, _, rSeed := epilogueSeeds(seed)
		fill := wk.fill
		if wk.prob.OutDiffers() {
			fill = wk.fillOut // the residual has the output's type
		}
		if err := wk.dev.Launch(fill, [3]int{blocksFor(wk.nOut), 1, 1}, [3]int{256, 1, 1}, 0,
			uint64(wk.residual), uint64(wk.nOut), uint64(rSeed), uint64(1)); err != nil {
			return fmt.Errorf("fill residual: %w", err)
		}
	}
	if c.NeedsScaleShift() {
		K := wk.prob.Shape.K
		scale, shift := make([]float32, K), make([]float32, K)
		for k := range K {
			scale[k], shift[k] = hostScaleShift(seed, int64(k))
		}
		if err := cu.MemcpyHtoD(wk.scale, unsafe.Pointer(&scale[0]), int64(4*K)); err != nil {
			return fmt.Errorf("copy scale: %w", err)
		}
		if err := cu.MemcpyHtoD(wk.shift, unsafe.Pointer(&shift[0]), int64(4*K)); err != nil {
			return fmt.Errorf("copy shift: %w", err)
		}
	}
	return nil
}

// args are the parameters of a candidate (or, with out = refOut, of the
// reference): out, in, filter, bias, then the arrays the epilogue chain
// reads, in the order the kernels take them (scale, shift, residual).
func (wk *worker) args(out cu.DevicePtr) []uint64 {
	a := []uint64{uint64(out), uint64(wk.in), uint64(wk.filter), uint64(wk.bias)}
	if wk.prob.Epilogue.NeedsScaleShift() {
		a = append(a, uint64(wk.scale), uint64(wk.shift))
	}
	if wk.prob.Epilogue.NeedsResidual() {
		a = append(a, uint64(wk.residual))
	}
	return a
}

// poison fills the outputs with NaN bits of their types, so unwritten
// elements show.
func (wk *worker) poison() error {
	for _, o := range wk.outputs[1:] { // FP32 (dBias)
		if err := cu.MemsetD32Async(o.buf, 0x7fc00000, o.n, wk.dev.Stream); err != nil {
			return err
		}
	}
	switch wk.prob.Out() {
	case problem.StorageFP16:
		return cu.MemsetD16Async(wk.out, 0x7e00, wk.nOut, wk.dev.Stream)
	case problem.StorageBF16:
		return cu.MemsetD16Async(wk.out, 0x7fc0, wk.nOut, wk.dev.Stream)
	}
	return cu.MemsetD32Async(wk.out, 0x7fc00000, wk.nOut, wk.dev.Stream)
}

// check compares every output with its part of the GPU reference: the
// largest relative error of the outputs and their non-finite values in all.
func (wk *worker) check() (relErr float64, nonFinite int64, err error) {
	for _, o := range wk.outputs {
		e, bad, err := wk.checkOne(o)
		if err != nil {
			return 0, 0, err
		}
		relErr, nonFinite = math.Max(relErr, e), nonFinite+bad
		if math.IsNaN(e) {
			relErr = e
		}
	}
	return relErr, nonFinite, nil
}

// checkOne compares output o with its reference.
func (wk *worker) checkOne(o output) (relErr float64, nonFinite int64, err error) {
	if err := cu.MemsetD32Async(wk.sums, 0, 6, wk.dev.Stream); err != nil {
		return 0, 0, err
	}
	compare := wk.compare
	if o.f32 {
		compare = wk.compareF32
	}
	if err := wk.dev.Launch(compare, [3]int{1024, 1, 1}, [3]int{256, 1, 1}, 0,
		uint64(o.buf), uint64(wk.refOut)+uint64(8*o.ref), uint64(o.n), uint64(wk.sums)); err != nil {
		return 0, 0, err
	}
	if err := wk.dev.Sync(); err != nil {
		return 0, 0, err
	}
	var sums [3]float64
	if err := cu.MemcpyDtoH(unsafe.Pointer(&sums[0]), wk.sums, 24); err != nil {
		return 0, 0, err
	}
	if sums[1] == 0 {
		return math.Inf(1), int64(sums[2]), nil
	}
	return math.Sqrt(sums[0] / sums[1]), int64(sums[2]), nil
}

// sample checks n values of each output (the first and last, and random
// ones; fewer for a gradient whose values are costly on the CPU,
// sampleCount) against the CPU's float64 reference: the candidate's error,
// and the GPU reference's, the largest over the outputs.
func (wk *worker) sample(seed uint32, n int) (candErr, refErr float64, err error) {
	n = sampleCount(wk.prob, min(n, wk.maxSamples))
	for i, o := range wk.outputs {
		c, r, err := wk.sampleOne(o, seed, n, uint64(i))
		if err != nil {
			return 0, 0, err
		}
		if math.IsNaN(c) || c > candErr {
			candErr = c
		}
		if math.IsNaN(r) || r > refErr {
			refErr = r
		}
	}
	return candErr, refErr, nil
}

// sampleOne is sample for output o, number i of the outputs (which picks
// its random stream: the first output's is the one the forward op always
// used).
func (wk *worker) sampleOne(o output, seed uint32, n int, i uint64) (candErr, refErr float64, err error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15+i))
	idx := make([]int64, n)
	for i := range idx {
		idx[i] = rng.Int64N(o.n)
	}
	idx[0], idx[n-1] = 0, o.n-1
	if err := cu.MemcpyHtoD(wk.idx, unsafe.Pointer(&idx[0]), int64(8*n)); err != nil {
		return 0, 0, err
	}
	gather := wk.gather
	if o.f32 {
		gather = wk.gatherF32
	}
	if err := wk.dev.Launch(gather, [3]int{(n + 255) / 256, 1, 1}, [3]int{256, 1, 1}, 0,
		uint64(o.buf), uint64(wk.refOut)+uint64(8*o.ref), uint64(wk.idx), uint64(n), uint64(wk.gathered)); err != nil {
		return 0, 0, err
	}
	if err := wk.dev.Sync(); err != nil {
		return 0, 0, err
	}
	got := make([]float64, 2*n)
	if err := cu.MemcpyDtoH(unsafe.Pointer(&got[0]), wk.gathered, int64(16*n)); err != nil {
		return 0, 0, err
	}
	var dc, dr, nr float64
	for i, at := range idx {
		want := hostExpected(wk.prob, seed, o.ref+at)
		dc += (got[2*i] - want) * (got[2*i] - want)
		dr += (got[2*i+1] - want) * (got[2*i+1] - want)
		nr += want * want
	}
	if math.IsNaN(dc) {
		dc = math.Inf(1)
	}
	return math.Sqrt(dc / nr), math.Sqrt(dr / nr), nil
}

func (wk *worker) measure(req request) response {
	image, err := os.ReadFile(req.Image)
	if err != nil {
		return response{Status: StatusLoad, Error: fmt.Sprintf("read candidate: %v", err)}
	}
	fn, err := wk.dev.Load(image, req.Kernel, req.Shared)
	if err != nil {
		return response{Status: StatusLoad, Error: err.Error()}
	}
	defer fn.Unload()
	var resp response
	resp.Registers, resp.LocalBytes, _ = fn.Attributes()
	if req.Clusters {
		resp.MaxClusters, _ = fn.MaxActiveClusters(req.Grid, req.Block, req.Shared) // best effort: facts for the report
	}
	launch := func() error {
		return wk.dev.Launch(fn, req.Grid, req.Block, req.Shared, wk.args(wk.out)...)
	}
	fault := func(what string, err error) response {
		resp.Status, resp.Error = StatusFault, fmt.Sprintf("%s: %v", what, err)
		return resp
	}
	if err := wk.prepare(req.Seed); err != nil {
		return fault("prepare check", err)
	}
	if err := wk.poison(); err != nil {
		return fault("poison output", err)
	}
	// The first run launches the kernel alone (a kernel with a prologue
	// then makes its copies itself, as under a launcher that knows no
	// prologue); the timed runs launch the prologue too, and the re-check
	// after them covers that path.
	if err := wk.dev.Launch(fn.Alone(), req.Grid, req.Block, req.Shared, wk.args(wk.out)...); err != nil {
		resp.Status, resp.Error = StatusLaunch, err.Error()
		return resp
	}
	if err := wk.dev.Sync(); err != nil {
		return fault("run", err)
	}
	bound := wk.prob.ErrorBound() // the output type's, when looser
	if resp.RelError, resp.NonFinite, err = wk.check(); err != nil {
		return fault("compare", err)
	}
	if resp.SampleError, resp.RefError, err = wk.sample(req.Seed, max(req.Samples, 2)); err != nil {
		return fault("sample", err)
	}
	if resp.RefError > 1e-9 {
		resp.Status, resp.Error = StatusWrong, fmt.Sprintf("the GPU reference itself disagrees with the CPU (%.2g): harness bug", resp.RefError)
		return resp
	}
	if resp.NonFinite > 0 || !(resp.RelError <= bound) || !(resp.SampleError <= bound) {
		resp.Status = StatusWrong
		resp.Error = fmt.Sprintf("%d outputs not finite, error %.3g (sampled %.3g) vs bound %.0e", resp.NonFinite, resp.RelError, resp.SampleError, bound)
		return resp
	}
	for i := 0; i < req.Warmup; i++ {
		if err := launch(); err != nil {
			return fault("warm-up", err)
		}
	}
	for i := 0; i < req.Runs; i++ {
		if err := cu.MemsetD32Async(wk.flush, uint(i), wk.flushBytes/4, wk.dev.Stream); err != nil {
			return fault("flush L2", err)
		}
		ms, err := wk.timed(launch)
		if err != nil {
			return fault("timed run", err)
		}
		resp.TimesMS = append(resp.TimesMS, ms)
		if req.CutoffMS > 0 && len(resp.TimesMS) >= cutoffRuns && slices.Min(resp.TimesMS) > req.CutoffMS {
			break // it cannot win: its fastest run is slower than the cutoff
		}
	}
	// The timed runs rewrote the output: check it again, catching races.
	again, bad, err := wk.check()
	if err != nil {
		return fault("re-check", err)
	}
	if bad > 0 || !(again <= bound) {
		resp.Status = StatusWrong
		resp.Error = fmt.Sprintf("output changed across runs (error %.3g, %d not finite): a race?", again, bad)
		return resp
	}
	resp.RelError = math.Max(resp.RelError, again)
	resp.Status = StatusOK
	return resp
}
