package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/gen/torchmod"
	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/internal/testfs"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// gradFixture is fwd's record for op (dgrad or wgrad) of the same problem
// on the same device, the winner the first kept candidate of the op's
// first family, with images of its own.
func gradFixture(t *testing.T, fwd tunecache.Record, op problem.Op) tunecache.Record {
	t.Helper()
	p := flagshipProblem(t)
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

// TestTorchBackwardKernels: -torch embeds the cache's dgrad and wgrad
// records of the same problem and device model, each where there is one,
// current and of the forward's device; the others are left to PyTorch.
func TestTorchBackwardKernels(t *testing.T) {
	needNoGPU(t)
	fwd := fixture(t, h200, 132)
	dgrad, wgrad := gradFixture(t, fwd, problem.OpDgrad), gradFixture(t, fwd, problem.OpWgrad)
	otherDevice := gradFixture(t, fixture(t, "NVIDIA H100 80GB HBM3", 132), problem.OpDgrad)
	stale := dgrad
	stale.KernelSHA256 = strings.Repeat("0", 64)
	for _, tc := range []struct {
		name string
		recs []tunecache.Record
		want []string
	}{
		{"both", []tunecache.Record{fwd, dgrad, wgrad}, []string{"dgrad", "wgrad"}},
		{"wgrad alone", []tunecache.Record{fwd, wgrad}, []string{"wgrad"}},
		{"another device's dgrad", []tunecache.Record{fwd, otherDevice, wgrad}, []string{"wgrad"}},
		{"a stale dgrad", []tunecache.Record{fwd, stale}, nil},
		{"none", []tunecache.Record{fwd}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cache := filepath.Join(dir, "cache.json")
			putRecords(t, cache, tc.recs...)
			r := testRequest(t, filepath.Join(dir, "alexnet"), cache)
			r.Torch = filepath.Join(dir, "alexnet_torch")
			var log bytes.Buffer
			r.Log = &log
			res, err := Run(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.TorchBackward, tc.want) {
				t.Errorf("TorchBackward %v, want %v; log:\n%s", res.TorchBackward, tc.want, log.String())
			}
			mod := testfs.ReadTree(t, r.Torch)
			var m torchmod.Meta
			if err := json.Unmarshal(mod[torchmod.MetaFile], &m); err != nil {
				t.Fatal(err)
			}
			wantBackward := strings.Join(tc.want, "+")
			if wantBackward == "" {
				wantBackward = "pytorch"
			}
			if m.Backward != wantBackward || len(m.Ops) != 1+len(tc.want) {
				t.Errorf("kernel.json: backward %q, %d ops; want %q", m.Backward, len(m.Ops), wantBackward)
			}
			for _, name := range tc.want {
				rec := map[string]tunecache.Record{"dgrad": dgrad, "wgrad": wgrad}[name]
				c := m.Ops[name].CUBIN
				cubin, _ := rec.CUBIN.Open()
				if c == nil || c.Kernel != rec.Kernel || c.Launch != rec.Launch || !bytes.Equal(mod[c.File], cubin) {
					t.Errorf("%s: CUBIN %+v, not the record's", name, c)
				}
				if !strings.Contains(log.String(), "backward launches the "+name+" kernel") {
					t.Errorf("the log does not say that %s is embedded:\n%s", name, log.String())
				}
			}
			for _, name := range []string{"dgrad", "wgrad"} {
				if !slices.Contains(tc.want, name) && !strings.Contains(log.String(), "no current "+name+" record") {
					t.Errorf("the log does not say that %s is missing:\n%s", name, log.String())
				}
			}
		})
	}
}

// TestTorchBackwardKernelsFused: the module of a forward record with an
// epilogue chain takes the gradient records of the problem without it.
func TestTorchBackwardKernelsFused(t *testing.T) {
	needNoGPU(t)
	chain, err := epilogue.Parse("scale_shift,relu")
	if err != nil {
		t.Fatal(err)
	}
	fwd := fixture(t, h200, 132)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.json")
	putRecords(t, cache, fusedFixture(t, chain), gradFixture(t, fwd, problem.OpDgrad), gradFixture(t, fwd, problem.OpWgrad))
	r := testRequest(t, filepath.Join(dir, "alexnet"), cache)
	r.Problem.Epilogue = chain
	r.Torch = filepath.Join(dir, "alexnet_torch")
	res, err := Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.TorchBackward, []string{"dgrad", "wgrad"}) {
		t.Errorf("TorchBackward %v, want [dgrad wgrad]", res.TorchBackward)
	}
	init := testfs.ReadTree(t, r.Torch)[torchmod.InitFile]
	if !bytes.Contains(init, []byte("class Conv2dFused(")) || !bytes.Contains(init, []byte("conv._gradients(")) {
		t.Error("the fused module does not run its convolution's gradients through the kernels")
	}
}
