package cachetest

import (
	"slices"
	"testing"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// OpRecord is the record of op (dgrad or wgrad) of fwd's problem, a
// record of Record's, on the same device: its winner the first kept
// candidate of the op's first family, with images of its own that pass
// validation.
func OpRecord(t testing.TB, fwd tunecache.Record, op problem.Op) tunecache.Record {
	t.Helper()
	p := FlagshipProblem(t)
	p.Op = op
	info := gpu.Info{Name: fwd.Key.Device, ComputeCapability: "9.0", Arch: "sm_90", SMs: fwd.Key.SMCount, Driver: "13.0",
		ClockMHz: 1980, SharedOptin: 232448, L2Bytes: 50 << 20, MemoryGBps: 4200}
	cands, err := kernels.Enumerate(p, autotune.Limits(info, "11.8"))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cands, func(c kernels.Candidate) bool { return c.Rejected == "" && c.Family == op.String() })
	if i < 0 {
		t.Fatalf("no kept %s candidate for the flagship", op)
	}
	k, err := kernels.RenderCandidate(p, cands[i])
	if err != nil {
		t.Fatal(err)
	}
	rec := fwd
	rec.Key.Op = op.String()
	rec.Winner = tunecache.Timing{Family: cands[i].Family, Config: cands[i].Config, MedianMS: 2.5, SpreadMS: 0.1, RelError: 3e-7}
	rec.KernelSHA256, rec.Kernel, rec.Launch = kernels.Hash(k), k.Name, k.Launch
	rec.CUBIN = tunecache.Gzip([]byte("\x7fELF\x02\x01\x01 " + op.String() + " fixture cubin\x00"))
	rec.PTX = tunecache.Gzip([]byte("// " + op.String() + " fixture PTX\n.version 7.8\n.target sm_90\n"))
	rec.Fallback = nil
	top := rec.Summary.Top[0]
	top.ID = cands[i].ID()
	rec.Summary.Top, rec.Summary.BestPerFamily = []tunecache.Measured{top}, []tunecache.Measured{top}
	rec.Command = "convgen -op " + op.String() + " (fixture)"
	return rec
}
