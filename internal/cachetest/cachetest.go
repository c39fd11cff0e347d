// Package cachetest builds tuning-cache records for tests: a record of the
// flagship problem whose winner is a real kept candidate, so that offline
// replay (which re-renders the winner and compares kernel hashes) takes it.
package cachetest

import (
	"testing"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/internal/version"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// Flagship is AlexNet's first layer.
const Flagship = "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2"

// H200 is the device name the fixtures use by default.
const H200 = "NVIDIA H200"

// PTX is the text a fixture record carries as its PTX.
const PTX = "//\n// fixture PTX\n//\n.version 7.8\n.target sm_90\n.address_size 64\n"

// FlagshipProblem is the flagship in fp32 NCHW.
func FlagshipProblem(t testing.TB) problem.Problem {
	t.Helper()
	shape, err := problem.ParseShape(Flagship)
	if err != nil {
		t.Fatal(err)
	}
	return problem.Problem{Shape: shape, Precision: problem.FP32, Layout: problem.NCHW}
}

// Record builds a tuning record for the flagship, fp32 NCHW, as if tuned on
// device with sms multiprocessors, the winner the first kept candidate of
// the direct family; its images are placeholders that pass validation.
func Record(t testing.TB, device string, sms int) tunecache.Record {
	t.Helper()
	p := FlagshipProblem(t)
	info := gpu.Info{Name: device, ComputeCapability: "9.0", Arch: "sm_90", SMs: sms, Driver: "13.0",
		ClockMHz: 1980, SharedOptin: 232448, L2Bytes: 50 << 20, MemoryGBps: 4200}
	cands, err := kernels.Enumerate(p, autotune.Limits(info, "11.8"))
	if err != nil {
		t.Fatal(err)
	}
	var win kernels.Candidate
	for _, c := range cands {
		if c.Rejected == "" && c.Family == "direct" {
			win = c
			break
		}
	}
	if win.Family == "" {
		t.Fatal("the flagship has no kept direct candidate")
	}
	k, err := kernels.RenderCandidate(p, win)
	if err != nil {
		t.Fatal(err)
	}
	top := tunecache.Measured{ID: win.ID(), Registers: 96, SharedBytes: k.SharedBytes, Threads: k.Block[0], MedianMS: 1.9,
		P10MS: 1.88, P90MS: 1.95, Runs: 30, RelError: 2.1e-7}
	return tunecache.Record{
		Key: tunecache.Key{Shape: p.Shape.String(), Precision: "fp32", Layout: "nchw", NVRTCVersion: "13.0",
			Device: device, ComputeCapability: "9.0", SMCount: sms, Driver: "13.0"},
		ConvgenVersion: version.Convgen,
		Winner:         tunecache.Timing{Family: "direct", Config: win.Config, MedianMS: 1.9, SpreadMS: 0.07, RelError: 2.1e-7},
		KernelSHA256:   kernels.Hash(k),
		Kernel:         k.Name, Launch: k.Launch, Arch: "sm_90",
		CUBIN:   tunecache.Gzip([]byte("\x7fELF\x02\x01\x01 fixture cubin \x00\x01\x02\xff")),
		PTX:     tunecache.Gzip([]byte(PTX)),
		Command: "convgen (fixture)",
		Summary: tunecache.Summary{DeviceArch: info.Arch, ClockMHz: info.ClockMHz, MemoryGBps: info.MemoryGBps,
			Counts: []tunecache.Count{{Status: "ok", N: 1}}, Top: []tunecache.Measured{top}, BestPerFamily: []tunecache.Measured{top}},
	}
}
