package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/gen"
	"github.com/convgen/convgen/gen/torchmod"
	"github.com/convgen/convgen/gpu"
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

// TestRunTrainBadPreviousReport: a report.json left in the package's
// directory that is not a training package's three reports (it fails to
// decode after filling part of its "ops", or holds another number of
// them) is taken for no previous report: RunTrain writes the package and
// its own report.json (the first case panicked with an index out of
// range).
func TestRunTrainBadPreviousReport(t *testing.T) {
	needNoGPU(t)
	for _, old := range []string{
		`{"ops":[{"command":5},{}]}`, // a type error after two ops are made
		`{"ops":[{},{},{"command":5}]}`,
		`{"ops":[{},{}]}`,
		`{"ops":[{},{},{},{}]}`,
		`{"ops":"none"}`,
		`{"ops":[`,
		`[]`,
	} {
		t.Run(old, func(t *testing.T) {
			r := cachedRequest(t, false, trainRecords(t)...)
			if err := os.MkdirAll(r.Out, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, content := range map[string]string{"doc.go": gen.Header + "\n\npackage alexnet\n", "report.json": old} {
				if err := os.WriteFile(filepath.Join(r.Out, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := RunTrain(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			js, err := os.ReadFile(filepath.Join(r.Out, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rep TrainReport
			if err := json.Unmarshal(js, &rep); err != nil || len(rep.Ops) != 3 {
				t.Errorf("report.json: %d ops (%v), want the three ops' reports", len(rep.Ops), err)
			}
		})
	}
}

// TestRunTrainNoRecordMessage: the error of a missing op record names the
// op and how to get its record, and not -untuned, which -train refuses;
// one op's package without a record still points at -untuned, once.
func TestRunTrainNoRecordMessage(t *testing.T) {
	needNoGPU(t)
	recs := trainRecords(t)
	r := cachedRequest(t, false, recs[0], recs[2])
	p := r.Problem.Canonical()
	p.Op = problem.OpDgrad
	want := fmt.Sprintf("op dgrad: %v; no record in %s for %s that the current kernels match; a training package needs the records of all three ops: "+
		"tune op dgrad on a GPU (convgen -train or -op dgrad with the same flags, built with -tags cuda), or point -cache at a cache that holds its record",
		gpu.ErrNoCUDA, r.Cache, p)
	_, err := RunTrain(context.Background(), r)
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
	one := r
	one.Problem = p
	_, err = Run(context.Background(), one)
	if !errors.Is(err, ErrNoRecord) || strings.Count(err.Error(), "-untuned") != 1 || !strings.HasSuffix(err.Error(), " (-untuned writes an untuned package instead)") {
		t.Errorf("one op's package: %v, want ErrNoRecord ending in the -untuned hint", err)
	}
}

// TestRunTrainMixedDevices: ops replayed from records of different GPU
// models make a package with a warning on the progress writer naming the
// ops and models, a paragraph saying so in the doc, and each op's device
// in the doc's header; records of one model give neither.
func TestRunTrainMixedDevices(t *testing.T) {
	needNoGPU(t)
	const h100 = "NVIDIA H100 80GB HBM3"
	fwd := fixture(t, h200, 132)
	same := trainRecords(t)
	mixed := []tunecache.Record{fwd, gradFixture(t, fixture(t, h100, 132), problem.OpDgrad), gradFixture(t, fwd, problem.OpWgrad)}
	for _, tc := range []struct {
		name string
		recs []tunecache.Record
		want string // the warning, "" for none
	}{
		{"one device", same, ""},
		{"two devices", mixed, "convgen: warning: the training package's ops were tuned on different GPU models: fprop and wgrad on NVIDIA H200, dgrad on " + h100 +
			"; each kernel is its own GPU's winner (tune the three on one GPU, or pick one GPU's records with -device, for a package of one GPU)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cachedRequest(t, false, tc.recs...)
			var progress bytes.Buffer
			r.Progress = &progress
			if _, err := RunTrain(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			if progress.String() != tc.want {
				t.Errorf("progress %q, want %q", progress.String(), tc.want)
			}
			doc, err := os.ReadFile(filepath.Join(r.Out, "doc.go"))
			if err != nil {
				t.Fatal(err)
			}
			text := strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "//", " ")), " ")
			for i, op := range []string{"fprop", "dgrad", "wgrad"} {
				if line := op + " " + []string{"Forward", "BackwardData", "BackwardFilter"}[i] + ": "; !strings.Contains(text, line) ||
					!strings.Contains(text, "tuned on "+tc.recs[i].Key.Device+" ("+tc.recs[i].Arch+")") {
					t.Errorf("doc.go does not name %s's kernel and its device %s", op, tc.recs[i].Key.Device)
				}
			}
			para := "The ops were tuned on different GPU models: fprop and wgrad on NVIDIA H200, dgrad on " + h100 + "."
			if got := strings.Contains(text, para); got != (tc.want != "") {
				t.Errorf("doc.go has the paragraph %q: %v, want %v", para, got, tc.want != "")
			}
		})
	}
}
