package pipeline

import (
	"fmt"
	"strings"

	"github.com/convgen/convgen/gen"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// torchGrads finds, for the PyTorch module written from the forward record
// fwd, the cache's records of the same problem's gradients (op dgrad and
// wgrad: the same shape, precision and layout, no epilogue chain, which
// gradients never have), and returns their bindings, which the module's
// backward launches, and the ops they are of. Each record must be of the
// forward record's device model: the record of its exact device and
// toolchain key (what a cuda build reuses), else the one offline replay
// picks (recordOffline) with the forward's device and architecture
// (sm_90 also selects sm_90a); a stale record is never taken. A gradient
// without a record is left to PyTorch's backward, which the log says;
// an untuned package (no fwd) gets none.
func torchGrads(r Request, fwd tunecache.Record) ([]gen.Binding, []string, error) {
	if fwd.Key.Device == "" {
		logf(r.Log, "PyTorch module: an untuned package's backward is PyTorch's\n")
		return nil, nil, nil
	}
	cache, err := tunecache.Load(r.Cache)
	if err != nil {
		return nil, nil, err
	}
	var bindings []gen.Binding
	var ops []string
	for _, op := range []problem.Op{problem.OpDgrad, problem.OpWgrad} {
		g := r
		g.Problem.Op, g.Problem.Epilogue = op, nil
		g.Device, g.Arch, g.Log = fwd.Key.Device, strings.TrimSuffix(fwd.Arch, "a"), nil
		rec, ok := exactRecord(g, fwd.Key, cache)
		if !ok {
			if rec, err = recordOffline(g, cache); err != nil {
				logf(r.Log, "PyTorch module: no current %s record of %s for %s (%s) in %s: PyTorch computes its gradients (convgen -op %s with the same flags tunes one)\n",
					op, g.Problem.Shape, fwd.Key.Device, g.Arch, r.Cache, op)
				continue
			}
		}
		b, err := recordBinding(g, rec)
		if err != nil {
			return nil, nil, fmt.Errorf("the %s record: %w", op, err)
		}
		bindings, ops = append(bindings, b), append(ops, op.String())
		logf(r.Log, "PyTorch module: backward launches the %s kernel tuned on %s (%s): %s, %.3f ms\n",
			op, rec.Key.Device, rec.Arch, rec.Winner.Family, rec.Winner.MedianMS)
	}
	return bindings, ops, nil
}

// exactRecord is the cache's record of g's problem with key's device and
// toolchain fields, if current.
func exactRecord(g Request, key tunecache.Key, cache *tunecache.Cache) (tunecache.Record, bool) {
	k := baseKey(g)
	k.NVRTCVersion, k.Device, k.ComputeCapability, k.SMCount, k.Driver = key.NVRTCVersion, key.Device, key.ComputeCapability, key.SMCount, key.Driver
	rec, ok := cache.Lookup(k)
	if !ok || currentKernels(g.Problem, rec) != nil {
		return tunecache.Record{}, false
	}
	return rec, true
}
