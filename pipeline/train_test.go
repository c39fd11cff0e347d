package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/gen/torchmod"
	"github.com/convgen/convgen/internal/testfs"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// trainRecords are the flagship's three records on one device.
func trainRecords(t *testing.T) []tunecache.Record {
	fwd := fixture(t, h200, 132)
	return []tunecache.Record{fwd, gradFixture(t, fwd, problem.OpDgrad), gradFixture(t, fwd, problem.OpWgrad)}
}

// TestRunTrainReplay: without a GPU, RunTrain replays the three ops'
// records into one package, each op's images its own record's, with the
// reports of the three; a second replay writes the same bytes.
func TestRunTrainReplay(t *testing.T) {
	needNoGPU(t)
	recs := trainRecords(t)
	r := cachedRequest(t, false, recs...)
	r.Command += " -train"
	res, err := RunTrain(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range res.Ops {
		if o.Outcome != Replayed || o.Record.Key.Op != recs[i].Key.Op {
			t.Errorf("op %d: outcome %v, record of op %q", i, o.Outcome, o.Record.Key.Op)
		}
	}
	want := []string{"REPORT.md", "doc.go", "kernel.go", "kernel_cuda_test.go", "kernel_dgrad.ptx", "kernel_dgrad_sm_90.cubin", "kernel_fprop.ptx",
		"kernel_fprop_sm_90.cubin", "kernel_wgrad.ptx", "kernel_wgrad_sm_90.cubin", "report.json", "shape.go", "shape_test.go"}
	if got := listDir(t, r.Out); !slices.Equal(got, append([]string{".convgen-manifest"}, want...)) && !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	for i, op := range []string{"fprop", "dgrad", "wgrad"} {
		cubin, err := os.ReadFile(filepath.Join(r.Out, "kernel_"+op+"_sm_90.cubin"))
		if err != nil {
			t.Fatal(err)
		}
		if wantCubin, err := recs[i].CUBIN.Open(); err != nil || !bytes.Equal(cubin, wantCubin) {
			t.Errorf("%s: the CUBIN is not its record's (%v)", op, err)
		}
	}
	js, err := os.ReadFile(filepath.Join(r.Out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep TrainReport
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Ops) != 3 || rep.Ops[0].Op != "" || rep.Ops[1].Op != "dgrad" || rep.Ops[2].Op != "wgrad" {
		t.Errorf("report.json ops %+v", rep.Ops)
	}
	md, err := os.ReadFile(filepath.Join(r.Out, "REPORT.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"\n# op fprop\n", "\n# op dgrad\n", "\n# op wgrad\n"} {
		if !bytes.Contains(md, []byte(h)) {
			t.Errorf("REPORT.md lacks %q", h)
		}
	}
	before := testfs.ReadTree(t, r.Out)
	if _, err := RunTrain(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if after := testfs.ReadTree(t, r.Out); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Error("a second replay changed the package")
	}
}

// TestRunTrainRefuses: an op without a record, a chain, an output
// precision, pins or -untuned fail with an error naming the op or the
// reason, of the kind the exit status reports, and write nothing.
func TestRunTrainRefuses(t *testing.T) {
	needNoGPU(t)
	recs := trainRecords(t)
	relu, err := epilogue.Parse("relu")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		recs   []tunecache.Record
		change func(*Request)
		kind   error
		want   string
	}{
		{"no dgrad record", []tunecache.Record{recs[0], recs[2]}, nil, ErrNoRecord, "op dgrad: "},
		{"no wgrad record", []tunecache.Record{recs[0], recs[1]}, nil, ErrNoRecord, "op wgrad: "},
		{"no fprop record", recs[1:], nil, ErrNoRecord, "op fprop: "},
		{"a chain", recs, func(r *Request) { r.Problem.Epilogue = relu }, ErrInvalid, "op dgrad: epilogue relu"},
		{"an output precision", recs, func(r *Request) { r.Problem.OutPrecision = problem.StorageBF16 }, ErrInvalid, "op dgrad: output precision bf16"},
		{"pins", recs, func(r *Request) { r.Pins = []string{"direct/x"} }, ErrInvalid, "pin with -op"},
		{"untuned", recs, func(r *Request) { r.Untuned = true }, ErrInvalid, "-untuned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cachedRequest(t, true, tc.recs...)
			if tc.change != nil {
				tc.change(&r)
			}
			_, err := RunTrain(context.Background(), r)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %v with %q", err, tc.kind, tc.want)
			}
			for _, out := range []string{r.Out, r.Torch} {
				if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s: %v, want nothing written", out, err)
				}
			}
		})
	}
}

// TestRunTrainTorch: -torch with a training package gives the PyTorch
// module the package's dgrad and wgrad kernels for its backward.
func TestRunTrainTorch(t *testing.T) {
	needNoGPU(t)
	r := cachedRequest(t, true, trainRecords(t)...)
	res, err := RunTrain(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(r.Torch, torchmod.MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	var m torchmod.Meta
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"fprop", "dgrad", "wgrad"} {
		if _, ok := m.Ops[op]; !ok {
			t.Errorf("kernel.json lacks ops.%s (%d torch files)", op, len(res.TorchFiles))
		}
	}
}
