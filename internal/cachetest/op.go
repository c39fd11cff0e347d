package cachetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// KeyProblem is the problem of key's shape, precision and layout (the
// forward op; key's epilogue, op and output precision are not read).
func KeyProblem(t testing.TB, key tunecache.Key) problem.Problem {
	t.Helper()
	shape, err := problem.ParseShape(key.Shape)
	if err != nil {
		t.Fatalf("the key's shape: %v", err)
	}
	prec, err := problem.ParsePrecision(key.Precision)
	if err != nil {
		t.Fatalf("the key's precision: %v", err)
	}
	layout, err := problem.ParseLayout(key.Layout)
	if err != nil {
		t.Fatalf("the key's layout: %v", err)
	}
	return problem.Problem{Shape: shape, Precision: prec, Layout: layout}.Canonical()
}

// OpRecord is the record of op (dgrad or wgrad) of the problem of fwd's
// key (its shape, precision and layout; a gradient has no epilogue chain
// or output precision, so the record's key has none), on fwd's device:
// its winner the first kept candidate of the op's first family for that
// problem, with images of its own that pass validation. fwd is a record
// such as Record's.
func OpRecord(t testing.TB, fwd tunecache.Record, op problem.Op) tunecache.Record {
	t.Helper()
	p := KeyProblem(t, fwd.Key)
	p.Op = op
	info := gpu.Info{Name: fwd.Key.Device, ComputeCapability: fwd.Key.ComputeCapability, Arch: strings.TrimSuffix(fwd.Arch, "a"),
		SMs: fwd.Key.SMCount, Driver: "13.0", ClockMHz: 1980, SharedOptin: 232448, L2Bytes: 50 << 20, MemoryGBps: 4200}
	cands, err := kernels.Enumerate(p, autotune.Limits(info, "11.8"))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cands, func(c kernels.Candidate) bool { return c.Rejected == "" && c.Family == op.String() })
	if i < 0 {
		t.Fatalf("no kept %s candidate for %s", op, p)
	}
	k, err := kernels.RenderCandidate(p, cands[i])
	if err != nil {
		t.Fatal(err)
	}
	rec := fwd
	rec.Key.Op, rec.Key.Epilogue, rec.Key.OutPrecision = op.String(), "", ""
	rec.Winner = tunecache.Timing{Family: cands[i].Family, Config: cands[i].Config, MedianMS: 2.5, SpreadMS: 0.1, RelError: 3e-7}
	rec.KernelSHA256, rec.Kernel, rec.Launch = kernels.Hash(k), k.Name, k.Launch
	rec.CUBIN = tunecache.Gzip([]byte("\x7fELF\x02\x01\x01 " + op.String() + " fixture cubin\x00"))
	rec.PTX = tunecache.Gzip([]byte("// " + op.String() + " fixture PTX\n.version 7.8\n.target sm_90\n"))
	rec.Fallback = nil
	top := tunecache.Measured{ID: cands[i].ID(), Registers: 96, SharedBytes: k.SharedBytes, Threads: k.Block[0], MedianMS: 2.5,
		P10MS: 2.45, P90MS: 2.55, Runs: 30, RelError: 3e-7}
	rec.Summary.Top, rec.Summary.BestPerFamily = []tunecache.Measured{top}, []tunecache.Measured{top}
	rec.Command = "convgen -op " + op.String() + " (fixture)"
	return rec
}
