//go:build cuda

package convrttest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gorgonia.org/cu"

	"github.com/convgen/convgen/convrt"
	"github.com/convgen/convgen/problem"
)

// gradBudget bounds the products the float64 references of one gradient
// check compute (about a second of CPU): a filter gradient's value sums
// N·P·Q of them, so its check samples fewer values.
const gradBudget = 1 << 27

// BackwardData loads a kernel of op dgrad with load on GPU 0 and runs it
// twice on fresh random data (dY and W uniform in [-1,1), drawn as float32
// and rounded to the element type), checking each time that it writes
// every dX element (dX is filled with NaN before) and that the relative L2
// error against the float64 reference (convrt.ReferenceDgrad), over
// Samples random dX elements and the first and last, is at most bound.
func BackwardData(t *testing.T, load func() (*convrt.Kernel, error), bound float64) {
	withKernel(t, load, func(ctx cu.CUContext, k *convrt.Kernel) {
		switch k.Info().Problem.Precision {
		case problem.FP16:
			backwardData(t, k, convrt.FP16Codec(), bound)
		case problem.BF16:
			backwardData(t, k, convrt.BF16Codec(), bound)
		default:
			backwardData(t, k, convrt.Float32Codec(), bound)
		}
	})
}

// BackwardFilter loads a kernel of op wgrad with load on GPU 0 and runs it
// twice on fresh random data (X uniform in [0,1), dY in [-1,1)), checking
// each time that it writes every dW element and, with a bias, every dBias
// value (both filled with NaN before), that the relative L2 errors of dW
// (over random elements, as many as a CPU budget allows, and the first and
// last) and of dBias (every value) against the float64 references
// (convrt.ReferenceWgrad, ReferenceBiasGrad) are at most bound, that
// the second run on the first run's inputs gives the same bits
// (determinism), and that so do Goroutines launches on as many streams at
// once (concurrentFilter).
func BackwardFilter(t *testing.T, load func() (*convrt.Kernel, error), bound float64) {
	withKernel(t, load, func(ctx cu.CUContext, k *convrt.Kernel) {
		switch k.Info().Problem.Precision {
		case problem.FP16:
			backwardFilter(t, k, convrt.FP16Codec(), bound)
		case problem.BF16:
			backwardFilter(t, k, convrt.BF16Codec(), bound)
		default:
			backwardFilter(t, k, convrt.Float32Codec(), bound)
		}
	})
}

// gradSetup checks p against E and the op, and makes the stream and the
// random source of a gradient check; the caller destroys the stream.
func gradSetup[E convrt.Element](t *testing.T, p problem.Problem, op problem.Op) (cu.Stream, *rand.Rand) {
	t.Helper()
	if err := checkSize[E](p); err != nil {
		t.Fatal(err)
	}
	if p.Op != op {
		t.Fatalf("the kernel computes op=%s, this check op=%s", p.Op, op)
	}
	stream, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		t.Fatalf("make stream: %v", err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	return stream, rand.New(rand.NewPCG(seed, seed))
}

// backwardData does BackwardData's work with elements of type E.
func backwardData[E convrt.Element](t *testing.T, k *convrt.Kernel, codec convrt.Codec[E], bound float64) {
	p := k.Info().Problem
	stream, rng := gradSetup[E](t, p, problem.OpDgrad)
	var mem memory
	defer func() {
		if err := errors.Join(stream.Destroy(), mem.free()); err != nil {
			t.Error(err)
		}
	}()
	s := p.Shape
	nX, nW, _, nY := s.Elements()
	w := random(rng, codec, nW, -1, 1)
	d, err := allocElems[E](&mem, nW, nY, nX)
	if err != nil {
		t.Fatal(err)
	}
	dW, dDY, dDX := d[0], d[1], d[2]
	if err := toDevice(dW, w); err != nil {
		t.Fatal(err)
	}
	dx := make([]E, nX)
	for run := 1; run <= 2; run++ {
		dy := random(rng, codec, nY, -1, 1)
		if err := errors.Join(toDevice(dDY, dy), poison(dDX, codec, nX), cu.Synchronize()); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if err := k.BackwardData(convrt.StreamOf(stream), convrt.PtrOf(dDY), convrt.PtrOf(dW), convrt.PtrOf(dDX)); err != nil {
			t.Fatalf("run %d: BackwardData: %v", run, err)
		}
		if err := errors.Join(stream.Synchronize(), fromDevice(dx, dDX)); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if err := allFinite("dX", codec.Decode, dx); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		idx := samples(rng, nX, Samples)
		var num, den float64
		for _, i := range idx {
			var n, c, h, x int
			if p.Layout == problem.NHWC {
				c, x, h, n = i%s.C, i/s.C%s.W, i/(s.C*s.W)%s.H, i/(s.C*s.W*s.H)
			} else {
				x, h, c, n = i%s.W, i/s.W%s.H, i/(s.W*s.H)%s.C, i/(s.W*s.H*s.C)
			}
			want := convrt.ReferenceDgrad(p, codec.Decode, dy, w, n, c, h, x)
			got := codec.Decode(dx[i])
			num, den = num+(got-want)*(got-want), den+want*want
		}
		rel := relL2(num, den)
		t.Logf("run %d: dX relative L2 error %.3g over %d elements (bound %g)", run, rel, len(idx), bound)
		if !(rel <= bound) {
			t.Errorf("run %d: dX relative L2 error %.3g exceeds %g", run, rel, bound)
		}
	}
}

// backwardFilter does BackwardFilter's work with elements of type E.
func backwardFilter[E convrt.Element](t *testing.T, k *convrt.Kernel, codec convrt.Codec[E], bound float64) {
	p := k.Info().Problem
	stream, rng := gradSetup[E](t, p, problem.OpWgrad)
	var mem memory
	defer func() {
		if err := errors.Join(stream.Destroy(), mem.free()); err != nil {
			t.Error(err)
		}
	}()
	s := p.Shape
	nX, nW, nB, nY := s.Elements()
	d, err := allocElems[E](&mem, nX, nY, nW)
	if err != nil {
		t.Fatal(err)
	}
	dX, dDY, dDW := d[0], d[1], d[2]
	db, err := allocElems[float32](&mem, nB)
	if err != nil {
		t.Fatal(err)
	}
	dDB := db[0]
	x, dy := random(rng, codec, nX, 0, 1), random(rng, codec, nY, -1, 1)
	if err := errors.Join(toDevice(dX, x), toDevice(dDY, dy)); err != nil {
		t.Fatal(err)
	}
	dw, bias := make([]E, nW), make([]float32, nB)
	var first []E
	var firstBias []float32
	for run := 1; run <= 2; run++ {
		err := errors.Join(poison(dDW, codec, nW), cu.Synchronize())
		if nB > 0 {
			err = errors.Join(err, poison(dDB, convrt.Float32Codec(), nB), cu.Synchronize())
		}
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if err := k.BackwardFilter(convrt.StreamOf(stream), convrt.PtrOf(dX), convrt.PtrOf(dDY), convrt.PtrOf(dDW), convrt.PtrOf(dDB)); err != nil {
			t.Fatalf("run %d: BackwardFilter: %v", run, err)
		}
		err = errors.Join(stream.Synchronize(), fromDevice(dw, dDW))
		if nB > 0 {
			err = errors.Join(err, fromDevice(bias, dDB))
		}
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if err := errors.Join(allFinite("dW", codec.Decode, dw), allFinite("dBias", convrt.Float32Codec().Decode, bias)); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if run == 2 {
			for i := range dw {
				if dw[i] != first[i] {
					t.Fatalf("dW[%d] differs between two runs on the same inputs (%v, then %v): not deterministic", i, codec.Decode(first[i]), codec.Decode(dw[i]))
				}
			}
			for i := range bias {
				if math.Float32bits(bias[i]) != math.Float32bits(firstBias[i]) {
					t.Fatalf("dBias[%d] differs between two runs on the same inputs (%v, then %v): not deterministic", i, firstBias[i], bias[i])
				}
			}
			if err := concurrentFilter(k, codec, dX, dDY, first, firstBias); err != nil {
				t.Error(err)
			}
			break
		}
		first, firstBias = append([]E(nil), dw...), append([]float32(nil), bias...)
		cost := max(s.N*s.P()*s.Q(), 1)
		idx := samples(rng, nW, max(2, min(Samples, gradBudget/cost)))
		cg := s.C / s.Groups
		var num, den float64
		for _, i := range idx {
			var kk, c, r, ss int
			if p.Layout == problem.NHWC {
				c, ss, r, kk = i%cg, i/cg%s.S, i/(cg*s.S)%s.R, i/(cg*s.S*s.R)
			} else {
				ss, r, c, kk = i%s.S, i/s.S%s.R, i/(s.S*s.R)%cg, i/(s.S*s.R*cg)
			}
			want := convrt.ReferenceWgrad(p, codec.Decode, x, dy, kk, c, r, ss)
			got := codec.Decode(dw[i])
			num, den = num+(got-want)*(got-want), den+want*want
		}
		rel := relL2(num, den)
		t.Logf("dW relative L2 error %.3g over %d elements (bound %g)", rel, len(idx), bound)
		if !(rel <= bound) {
			t.Errorf("dW relative L2 error %.3g exceeds %g", rel, bound)
		}
		num, den = 0, 0
		for kk := range min(nB, max(2, gradBudget/cost)) {
			want := convrt.ReferenceBiasGrad(p, codec.Decode, dy, kk)
			got := float64(bias[kk])
			num, den = num+(got-want)*(got-want), den+want*want
		}
		if nB > 0 {
			rel := relL2(num, den)
			t.Logf("dBias relative L2 error %.3g (bound %g)", rel, bound)
			if !(rel <= bound) {
				t.Errorf("dBias relative L2 error %.3g exceeds %g", rel, bound)
			}
		}
	}
}

// concurrentFilter launches k's filter gradient on Goroutines streams at
// once, on the same inputs (dX, dDY) into outputs of their own, and checks
// that each gives the bits of a single launch (want, wantBias): overlapping
// launches must not share state (a kernel whose module keeps a workspace
// has its launches ordered by convrt).
func concurrentFilter[E convrt.Element](k *convrt.Kernel, codec convrt.Codec[E], dX, dDY cu.DevicePtr, want []E, wantBias []float32) (err error) {
	var mem memory
	streams := make([]cu.Stream, 0, Goroutines)
	defer func() {
		for _, st := range streams {
			err = errors.Join(err, st.Destroy())
		}
		err = errors.Join(err, mem.free())
	}()
	nW, nB := len(want), len(wantBias)
	dws, err := allocElems[E](&mem, slices.Repeat([]int{nW}, Goroutines)...)
	if err != nil {
		return err
	}
	dbs, err := allocElems[float32](&mem, slices.Repeat([]int{nB}, Goroutines)...)
	if err != nil {
		return err
	}
	for g := range Goroutines {
		st, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return fmt.Errorf("concurrent launches: make stream: %w", err)
		}
		streams = append(streams, st)
		err = poison(dws[g], codec, nW)
		if nB > 0 {
			err = errors.Join(err, poison(dbs[g], convrt.Float32Codec(), nB))
		}
		if err != nil {
			return err
		}
	}
	if err := cu.Synchronize(); err != nil {
		return err
	}
	for g, st := range streams {
		if err := k.BackwardFilter(convrt.StreamOf(st), convrt.PtrOf(dX), convrt.PtrOf(dDY), convrt.PtrOf(dws[g]), convrt.PtrOf(dbs[g])); err != nil {
			return fmt.Errorf("concurrent launch %d: BackwardFilter: %w", g, err)
		}
	}
	if err := cu.Synchronize(); err != nil {
		return fmt.Errorf("concurrent launches: %w", err)
	}
	dw, bias := make([]E, nW), make([]float32, nB)
	for g := range Goroutines {
		if err := fromDevice(dw, dws[g]); err != nil {
			return err
		}
		if nB > 0 {
			if err := fromDevice(bias, dbs[g]); err != nil {
				return err
			}
		}
		for i := range dw {
			if dw[i] != want[i] {
				return fmt.Errorf("concurrent launch %d of %d: dW[%d] = %v, a single launch gave %v", g, Goroutines, i, codec.Decode(dw[i]), codec.Decode(want[i]))
			}
		}
		for i := range bias {
			if math.Float32bits(bias[i]) != math.Float32bits(wantBias[i]) {
				return fmt.Errorf("concurrent launch %d of %d: dBias[%d] = %v, a single launch gave %v", g, Goroutines, i, bias[i], wantBias[i])
			}
		}
	}
	return nil
}

// samples lists n random offsets below total, and the first and the last.
func samples(rng *rand.Rand, total, n int) []int {
	idx := []int{0, total - 1}
	for range n {
		idx = append(idx, rng.IntN(total))
	}
	return idx
}

// relL2 is sqrt(num/den), NaN for a NaN num, +Inf for den 0 with num > 0.
func relL2(num, den float64) float64 {
	if den == 0 {
		if num == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Sqrt(num / den)
}

// allFinite fails when a value of name is NaN or infinite (a NaN left from
// the poison means the kernel skipped it).
func allFinite[E convrt.Element](name string, decode func(E) float64, xs []E) error {
	bad, first := 0, -1
	for i, e := range xs {
		if v := decode(e); math.IsNaN(v) || math.IsInf(v, 0) {
			if bad == 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d %s values are not finite, the first %s[%d] = %v: the kernel left them unwritten or overflowed", bad, len(xs), name, name, first, decode(xs[first]))
	}
	return nil
}
