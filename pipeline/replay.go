package pipeline

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// baseKey is the problem's part of r's cache key; the op is left out for
// the forward op (tunecache.Key.Op), the output precision when it is the
// input's type (tunecache.Key.OutPrecision).
func baseKey(r Request) tunecache.Key {
	k := tunecache.Key{Shape: r.Problem.Shape.String(), Precision: string(r.Problem.Precision), Layout: string(r.Problem.Layout),
		Epilogue: r.Problem.Epilogue.Key()}
	if r.Problem.Op != problem.OpFprop {
		k.Op = r.Problem.Op.String()
	}
	if r.Problem.OutDiffers() {
		k.OutPrecision = string(r.Problem.OutPrecision)
	}
	return k
}

// currentKernels says whether rec's kernels are what the code generates
// for its configurations today: it renders the winner's (and the
// fallback's) configuration for p and compares the kernel hashes with
// those recorded, and the recorded kernel names, launch geometry and the
// winner's architecture suffix, which the package is written from, with
// the rendered ones (the hash covers them as rendered when tuned, not the
// record's fields). nil means current; the error says which kernel changed.
func currentKernels(p problem.Problem, rec tunecache.Record) error {
	suffix := ""
	if a, err := launch.ParseArch(rec.Arch); err == nil {
		suffix = a.Suffix
	}
	if err := sameKernel(p, rec.Winner, rec.KernelSHA256, rec.Kernel, rec.Launch, &suffix); err != nil {
		return fmt.Errorf("the winner's kernel source changed since it was tuned (%w): re-tune on a GPU", err)
	}
	if fb := rec.Fallback; fb != nil {
		if err := sameKernel(p, fb.Timing, fb.KernelSHA256, fb.Kernel, fb.Launch, nil); err != nil {
			return fmt.Errorf("the fallback's kernel source changed since it was tuned (%w): re-tune on a GPU", err)
		}
	}
	return nil
}

// sameKernel renders t's configuration for p and compares its hash with
// want, and its name, launch and (suffix, when not nil) architecture suffix
// with the recorded ones.
func sameKernel(p problem.Problem, t tunecache.Timing, want, name string, l launch.Launch, suffix *string) error {
	k, err := kernels.RenderCandidate(p, kernels.Candidate{Family: t.Family, Config: t.Config})
	if err != nil {
		return fmt.Errorf("%s no longer renders: %w", t.Family, err)
	}
	switch {
	case kernels.Hash(k) != want:
		return fmt.Errorf("hash %.12s, recorded %.12s", kernels.Hash(k), want)
	case k.Name != name:
		return fmt.Errorf("kernel %s, recorded %.64q", k.Name, name)
	case k.Launch != l:
		return fmt.Errorf("launch %v, recorded %v", k.Launch, l)
	case suffix != nil && k.ArchSuffix != *suffix:
		return fmt.Errorf("architecture suffix %q, recorded %q", k.ArchSuffix, *suffix)
	}
	return nil
}

// recordOffline picks the cache's record for this problem without a GPU:
// the newest of each device model (tunecache's Replay), and among several
// device models the one Device and Arch select. Its errors match ErrNoRecord
// when nothing matches (naming no remedy: the caller, which knows what
// else the user could ask for, adds it), ErrInvalid when several device
// models do.
func recordOffline(c Request, cache *tunecache.Cache) (tunecache.Record, error) {
	k := baseKey(c)
	q := tunecache.Query{Shape: k.Shape, Precision: k.Precision, Layout: k.Layout, Epilogue: k.Epilogue, Op: k.Op, OutPrecision: k.OutPrecision, Arch: c.Arch, Device: c.Device,
		Current: func(r tunecache.Record) error { return currentKernels(c.Problem, r) }}
	recs := cache.Replay(q)
	if n := len(cache.Match(q)); n > len(recs) && len(recs) == 1 {
		r := recs[0].Key
		logf(c.Log, "%d records of %s match: replaying the newest, NVRTC %s, driver %s\n", n, r.Device, r.NVRTCVersion, r.Driver)
	}
	switch len(recs) {
	case 0:
		where := c.Cache
		if _, err := os.Stat(c.Cache); errors.Is(err, os.ErrNotExist) {
			where += " (no such file)"
		}
		return tunecache.Record{}, mark(ErrNoRecord, fmt.Errorf("%w; no record in %s for %s that the current kernels match%s%s",
			gpu.ErrNoCUDA, where, c.Problem, nearMisses(cache, q), otherBias(cache, q)))
	case 1:
		logf(c.Log, "no GPU in this build: replaying the record tuned on %s (%s) from %s\n", recs[0].Key.Device, recs[0].Arch, c.Cache)
		return recs[0], nil
	}
	var devs []string
	for _, r := range recs {
		devs = append(devs, fmt.Sprintf("%q (%s, NVRTC %s, driver %s)", r.Key.Device, r.Arch, r.Key.NVRTCVersion, r.Key.Driver))
	}
	return tunecache.Record{}, mark(ErrInvalid, fmt.Errorf("%d records in %s match %s: pick one with -device and -arch: %s",
		len(recs), c.Cache, c.Problem, strings.Join(devs, ", ")))
}

// otherBias says, for the error of a failed offline replay of a data
// gradient, that the cache holds the same data gradient with the other
// bias (which a data gradient ignores), or "".
func otherBias(cache *tunecache.Cache, q tunecache.Query) string {
	if q.Op != problem.OpDgrad.String() {
		return ""
	}
	alt := q
	for _, b := range [][2]string{{",bias=true", ",bias=false"}, {",bias=false", ",bias=true"}} {
		if strings.HasSuffix(q.Shape, b[0]) {
			alt.Shape = strings.TrimSuffix(q.Shape, b[0]) + b[1]
			if n := len(cache.Replay(alt)); n > 0 {
				return fmt.Sprintf("; the cache holds this data gradient with %s (%d record(s)), which serves it (a data gradient ignores the bias): give %s", b[1][1:], n, b[1][1:])
			}
		}
	}
	return ""
}

// nearMisses explains, for the error of a failed offline replay, why the
// cache's records of the same problem (shape, precision, layout) were not
// used: "" when there are none.
func nearMisses(cache *tunecache.Cache, q tunecache.Query) string {
	var misses []string
	stale := false
records:
	for _, r := range cache.Records() {
		var why []string
		for _, m := range q.Mismatches(r) { // the problem's fields come first
			switch m.Field {
			case tunecache.FieldShape, tunecache.FieldPrecision, tunecache.FieldLayout, tunecache.FieldEpilogue, tunecache.FieldOp, tunecache.FieldOut:
				continue records // another problem
			case tunecache.FieldKernel:
				stale = true
				why = append(why, "is stale: "+m.String())
				continue
			}
			why = append(why, "has "+m.String())
		}
		misses = append(misses, fmt.Sprintf("the one tuned on %s (%s) %s", r.Key.Device, r.Arch, strings.Join(why, ", ")))
	}
	if len(misses) == 0 {
		return ""
	}
	hint := "drop or change -arch and -device to use one"
	if stale {
		hint = "a record whose kernels the current code renders differently cannot be replayed: re-tune on a GPU with a cuda build (-retune) and commit the cache"
	}
	return fmt.Sprintf("; the cache's records of this problem do not apply: %s; %s", strings.Join(misses, "; "), hint)
}
