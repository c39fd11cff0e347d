package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/gen/torchmod"
	"github.com/convgen/convgen/internal/testfs"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

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
			r := cachedRequest(t, true, tc.recs...)
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
	r := cachedRequest(t, true, fusedFixture(t, chain), gradFixture(t, fwd, problem.OpDgrad), gradFixture(t, fwd, problem.OpWgrad))
	r.Problem.Epilogue = chain
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
