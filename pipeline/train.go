package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/convgen/convgen/gen"
	"github.com/convgen/convgen/gen/torchmod"
	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/internal/version"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/report"
	"github.com/convgen/convgen/tunecache"
)

// TrainResult is what RunTrain did: one Result per op (fprop, dgrad,
// wgrad: gen.TrainOps), each with its outcome and record, and the files
// of the one package.
type TrainResult struct {
	Ops [3]Result
	// Files, Reports and TorchFiles are as in Result.
	Files, Reports, TorchFiles []string
}

// TrainReport is report.json of a training package: the report of each
// op, in gen.TrainOps' order.
type TrainReport struct {
	Ops []report.Data `json:"ops"`
}

// RunTrain finds or makes the tuning records of the three ops of
// r.Problem (fprop, dgrad, wgrad; r.Problem.Op is ignored), each its own
// record, as three Runs would (replayed without a GPU; on one reused or
// tuned, a fresh record saved to the cache at once), and writes one
// training package (gen.TrainFiles) from them, with the reports of the
// three and, with r.Torch, the PyTorch module with the gradient kernels in
// its backward. An op that cannot be served (no record to replay, no
// family, an epilogue chain or output precision, which gradients refuse)
// fails the run with an error naming the op, before anything is written.
// Pins and Untuned are refused. Records of different GPU models (offline,
// each op replays its own) make a package all the same, with a warning on
// r.Progress and a paragraph in its doc (gen.MixedDevices).
func RunTrain(ctx context.Context, r Request) (TrainResult, error) {
	var res TrainResult
	r.Problem = r.Problem.Canonical()
	r.Problem.Op = problem.OpFprop
	switch {
	case len(r.Problem.Epilogue) > 0:
		return res, mark(ErrInvalid, fmt.Errorf("a training package: op dgrad: epilogue %s: %w", r.Problem.Epilogue, problem.ErrEpilogueOp))
	case r.Problem.OutDiffers():
		return res, mark(ErrInvalid, fmt.Errorf("a training package: op dgrad: output precision %s: %w", r.Problem.OutPrecision, problem.ErrOutPrecisionOp))
	case len(r.Pins) > 0:
		return res, mark(ErrInvalid, errors.New("a training package: pinned candidates are of one op's family: pin with -op"))
	case r.Untuned:
		return res, mark(ErrInvalid, errors.New("a training package carries tuned kernels: -untuned writes one op's package (-op)"))
	}
	reqs := opRequests(r)
	for _, o := range reqs {
		if err := checkOp(o.Problem); err != nil {
			return res, fmt.Errorf("op %s: %w", o.Problem.Op, err)
		}
		if err := Served(o.Problem); err != nil {
			return res, fmt.Errorf("op %s: %w", o.Problem.Op, err)
		}
	}
	if r.Torch != "" {
		if err := torchmod.Serves(r.Problem); err != nil {
			return res, mark(ErrInvalid, fmt.Errorf("-torch: %w", err))
		}
	}
	if err := checkTargets(r); err != nil {
		return res, err
	}
	cache, err := tunecache.Load(r.Cache)
	if err != nil {
		return res, err
	}
	logf(r.Log, "convgen %s: a training package of %s\n", version.Convgen, r.Problem)
	var cands [3][]report.Candidate
	for i, o := range reqs {
		op := o.Problem.Op
		logf(r.Log, "op %s:\n", op)
		rec, outcome, c, err := trainRecord(ctx, o, cache)
		if errors.Is(err, ErrNoRecord) {
			return res, fmt.Errorf("op %s: %w; a training package needs the records of all three ops: tune op %s on a GPU (convgen -train or -op %s with the same flags, built with -tags cuda), or point -cache at a cache that holds its record", op, err, op, op)
		}
		if err != nil {
			return res, fmt.Errorf("op %s: %w", op, err)
		}
		res.Ops[i] = Result{Outcome: outcome, Record: rec}
		cands[i] = c
	}
	if mixed := gen.MixedDevices(opDevices(res.Ops)); mixed != "" {
		logf(r.Progress, "convgen: warning: the training package's ops were tuned on different GPU models: %s; each kernel is its own GPU's winner (tune the three on one GPU, or pick one GPU's records with -device, for a package of one GPU)\n", mixed)
	}
	err = writeTrain(r, reqs, cands, &res)
	if err != nil && slices.ContainsFunc(res.Ops[:], func(o Result) bool { return o.Outcome == Tuned }) {
		err = fmt.Errorf("%w (the tuning records are saved in %s: run convgen again to write the package from them)", err, r.Cache)
	}
	return res, err
}

// opRequests are r's requests of the three ops, in gen.TrainOps' order.
func opRequests(r Request) [3]Request {
	var reqs [3]Request
	for i, op := range gen.TrainOps() {
		reqs[i] = r
		reqs[i].Problem.Op = op
	}
	return reqs
}

// opDevices are the GPU models the records of ops were tuned on.
func opDevices(ops [3]Result) [3]string {
	var devs [3]string
	for i, o := range ops {
		devs[i] = o.Record.Key.Device
	}
	return devs
}

// checkTargets refuses the output directories of r that cannot be
// written, before anything is tuned (as Run does).
func checkTargets(r Request) error {
	if r.Into {
		if err := gen.CheckInto(r.Out, gen.FilesPrefix); err != nil {
			return err
		}
	} else if err := gen.CheckTarget(r.Out); err != nil {
		return err
	}
	if r.ReportDir != "" {
		if err := gen.CheckTarget(r.ReportDir); err != nil {
			return fmt.Errorf("-report: %w", err)
		}
	}
	if r.Torch != "" {
		if err := torchmod.CheckTarget(r.Torch); err != nil {
			return fmt.Errorf("-torch: %w", err)
		}
	}
	return nil
}

// trainRecord is the record of one op of a training package: replayed
// without a GPU; on one reused, or tuned and saved to the cache at once
// (with the candidates of its search), so that a later op's failure loses
// no tuning.
func trainRecord(ctx context.Context, o Request, cache *tunecache.Cache) (tunecache.Record, Outcome, []report.Candidate, error) {
	if !gpu.Available() {
		rec, err := recordOffline(o, cache)
		if err == nil {
			noteOlderSearch(o.Log, rec)
		}
		return rec, Replayed, nil, err
	}
	rec, cands, fresh, err := recordOnGPU(ctx, o, cache)
	if err != nil || !fresh {
		if err == nil {
			noteOlderSearch(o.Log, rec)
		}
		return rec, Reused, nil, err
	}
	if err := tunecache.Put(o.Cache, rec); err != nil {
		return rec, Tuned, nil, fmt.Errorf("save tuning record: %w%s", err, rescue(rec))
	}
	logf(o.Log, "winner %s: %.3f ms median, rel. error %.2e; saved to %s\n", rec.Winner.Family, rec.Winner.MedianMS, rec.Winner.RelError, o.Cache)
	return rec, Tuned, cands, nil
}

// writeTrain renders the training package of the three ops' records in
// res, its reports and the PyTorch module, and writes them
// (writeOutputs, as writeFiles does for one op's package).
func writeTrain(r Request, reqs [3]Request, cands [3][]report.Candidate, res *TrainResult) error {
	t := gen.Train{Package: r.Pkg, Command: r.Command, Devices: opDevices(res.Ops)}
	if r.Into {
		t.FilePrefix = gen.FilesPrefix
	}
	var data [3]report.Data
	for i, o := range reqs {
		b, err := recordBinding(o, res.Ops[i].Record)
		if err != nil {
			return fmt.Errorf("op %s: %w", o.Problem.Op, err)
		}
		t.Ops[i] = b
		data[i] = report.New(res.Ops[i].Record, o.Problem, r.Command)
	}
	files, err := gen.TrainFiles(t)
	if err != nil {
		return fmt.Errorf("generate package: %w", err)
	}
	var torchFiles map[string][]byte
	if r.Torch != "" { // rendered before anything is written
		if torchFiles, err = torchmod.Files(t.Ops[0], filepath.Base(filepath.Clean(r.Torch)), t.Ops[1], t.Ops[2]); err != nil {
			return fmt.Errorf("generate PyTorch module: %w", err)
		}
	}
	reports, err := trainReports(reportDir(r), reportPrefix(r), data, cands)
	if err != nil {
		return err
	}
	w, err := writeOutputs(r, "training package", files, torchFiles, reports, ", its backward convgen's dgrad and wgrad kernels")
	res.Files, res.TorchFiles, res.Reports = w.files, w.torchFiles, w.reports
	return err
}

// trainReports renders the reports of a training package: REPORT.md, the
// three ops' reports one after the other, and report.json (TrainReport);
// per op candidates_OP.csv and candidates_OP.svg from a search just run,
// or on a replay those of the same search kept in dir.
func trainReports(dir, prefix string, data [3]report.Data, cands [3][]report.Candidate) (map[string][]byte, error) {
	var md bytes.Buffer
	md.WriteString("# convgen training package: fprop, dgrad, wgrad\n\nThree ops, each tuned and recorded on its own; their reports follow.\n")
	files := map[string][]byte{}
	prev := previousTrainReport(filepath.Join(dir, prefix+reportJSON))
	for i, d := range data {
		op := gen.TrainOps()[i].String()
		md.WriteString("\n")
		md.Write(bytes.Replace(d.Markdown(), []byte("# convgen tuning report"), []byte("# op "+op), 1))
		csvName, svgName := prefix+"candidates_"+op+".csv", prefix+"candidates_"+op+".svg"
		switch {
		case cands[i] != nil:
			csv, err := d.CSV(cands[i])
			if err != nil {
				return nil, err
			}
			files[csvName], files[svgName] = csv, d.Chart(cands[i])
		case prev != nil && sameSearch(prev.Ops[i], d):
			for _, name := range []string{csvName, svgName} {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
					files[name] = b
				}
			}
		}
	}
	js, err := json.MarshalIndent(TrainReport{Ops: data[:]}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("report.json: %w", err)
	}
	files[prefix+reportMD], files[prefix+reportJSON] = md.Bytes(), append(js, '\n')
	return files, nil
}

// previousTrainReport is the training package's report.json at path, as
// the last run wrote it: nil when there is none, it cannot be read or
// decoded (json.Unmarshal may have filled part of it before failing), or
// it does not hold one report per op.
func previousTrainReport(path string) *TrainReport {
	old, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var prev TrainReport
	if err := json.Unmarshal(old, &prev); err != nil || len(prev.Ops) != len(gen.TrainOps()) {
		return nil
	}
	return &prev
}
