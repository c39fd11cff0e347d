package pipeline

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/convgen/convgen/gen"
	"github.com/convgen/convgen/gen/torchmod"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/report"
	"github.com/convgen/convgen/tunecache"
)

// writePackage renders the binding and the reports and writes them at
// once: the reports into the package, or with ReportDir into their own
// directory. cands, every candidate of a search just run, give
// candidates.csv and candidates.svg; a replay (nil cands) keeps those of
// the same record from the reports' directory (carriedReports).
func writePackage(r Request, outcome Outcome, rec tunecache.Record, cands []report.Candidate) (Result, error) {
	data := report.New(rec, r.Problem, r.Command)
	b, err := recordBinding(r, rec)
	if err != nil {
		return Result{}, err
	}
	res := Result{Outcome: outcome, Record: rec}
	err = writeFiles(r, b, data, cands, &res)
	return res, err
}

// recordBinding is the binding of the package of r from rec.
func recordBinding(r Request, rec tunecache.Record) (gen.Binding, error) {
	cubin, err := rec.CUBIN.Open()
	if err != nil {
		return gen.Binding{}, fmt.Errorf("the tuning record's CUBIN: %w", err)
	}
	ptx, err := rec.PTX.Open()
	if err != nil {
		return gen.Binding{}, fmt.Errorf("the tuning record's PTX: %w", err)
	}
	summary := fmt.Sprintf("tuned on %s (%s): %s, median %.3f ms, rel. error %.1e", rec.Key.Device, rec.Arch,
		rec.Winner.Family, rec.Winner.MedianMS, rec.Winner.RelError)
	b := gen.Binding{Package: r.Pkg, Problem: r.Problem, Kernel: rec.Kernel,
		Launch: rec.Launch, Arch: rec.Arch, CUBIN: cubin, PTX: string(ptx),
		Command: r.Command, Summary: summary}
	if fb := rec.Fallback; fb != nil {
		fptx, err := fb.PTX.Open()
		if err != nil {
			return gen.Binding{}, fmt.Errorf("the tuning record's fallback PTX: %w", err)
		}
		b.Fallback = &gen.Fallback{Kernel: fb.Kernel, Launch: fb.Launch,
			Arch: fb.Arch, PTX: string(fptx), Summary: fmt.Sprintf("%s, median %.3f ms, rel. error %.1e on %s",
				kernels.Candidate{Family: fb.Timing.Family, Config: fb.Timing.Config}.ID(), fb.Timing.MedianMS, fb.Timing.RelError, rec.Key.Device)}
	}
	return b, nil
}

// writeFiles renders the package of b and the reports of data and writes
// them (writeOutputs), naming what it wrote in res.
func writeFiles(r Request, b gen.Binding, data report.Data, cands []report.Candidate, res *Result) error {
	prefix := reportPrefix(r)
	if r.Into {
		b.FilePrefix = gen.FilesPrefix
	}
	files, err := gen.Files(b)
	if err != nil {
		return fmt.Errorf("generate package: %w", err)
	}
	var torchFiles map[string][]byte
	if r.Torch != "" { // rendered before anything is written
		grads, ops, err := torchGrads(r, res.Record)
		if err != nil {
			return fmt.Errorf("generate PyTorch module: %w", err)
		}
		if torchFiles, err = torchmod.Files(b, filepath.Base(filepath.Clean(r.Torch)), grads...); err != nil {
			return fmt.Errorf("generate PyTorch module: %w", err)
		}
		res.TorchBackward = ops
	}
	reports, err := reportFiles(data, cands, prefix)
	if err != nil {
		return err
	}
	if cands == nil {
		maps.Copy(reports, carriedReports(reportDir(r), prefix, data))
	}
	w, err := writeOutputs(r, "package", files, torchFiles, reports, "")
	res.Files, res.TorchFiles, res.Reports = w.files, w.torchFiles, w.reports
	return err
}

// reportPrefix is the prefix of the reports' names: the package's file
// prefix where they go into a package written with Into, else none.
func reportPrefix(r Request) string {
	if r.Into && r.ReportDir == "" {
		return gen.FilesPrefix
	}
	return ""
}

// reportDir is where the reports of r go: ReportDir, else the package.
func reportDir(r Request) string {
	if r.ReportDir == "" {
		return r.Out
	}
	return r.ReportDir
}

// written names the files writeOutputs wrote: the package's, the PyTorch
// module's and the reports' in their own directory, each sorted.
type written struct {
	files, torchFiles, reports []string
}

// writeOutputs writes what writeFiles and writeTrain rendered, in this
// order: the package (files, with the reports unless r.ReportDir; into
// r.Out, or beside its other files with r.Into), the PyTorch module
// (torchFiles, where not nil) and the reports to r.ReportDir, logging each.
// what names the package in the log ("package"), torchNote ends the
// module's log line. It names what it wrote even when a later step fails.
func writeOutputs(r Request, what string, files, torchFiles, reports map[string][]byte, torchNote string) (written, error) {
	var w written
	if r.ReportDir == "" {
		maps.Copy(files, reports)
	}
	write := gen.Write
	if r.Into {
		write = func(dir string, files map[string][]byte) error { return gen.WriteInto(dir, gen.FilesPrefix, files) }
	}
	if err := write(r.Out, files); err != nil {
		return w, fmt.Errorf("write package: %w", err)
	}
	w.files = slices.Sorted(maps.Keys(files))
	logf(r.Log, "wrote %s %s to %s (%d files)\n", what, r.Pkg, r.Out, len(files))
	if torchFiles != nil {
		if err := torchmod.WriteFiles(r.Torch, torchFiles); err != nil {
			return w, fmt.Errorf("write PyTorch module: %w", err)
		}
		w.torchFiles = slices.Sorted(maps.Keys(torchFiles))
		logf(r.Log, "wrote PyTorch module %s to %s (%d files)%s\n", filepath.Base(filepath.Clean(r.Torch)), r.Torch, len(torchFiles), torchNote)
	}
	if r.ReportDir != "" {
		if err := gen.WriteReports(r.ReportDir, reports); err != nil {
			return w, fmt.Errorf("write reports: %w", err)
		}
		w.reports = slices.Sorted(maps.Keys(reports))
		logf(r.Log, "wrote the reports to %s (%d files)\n", r.ReportDir, len(reports))
	}
	return w, nil
}

// The reports' file names.
const (
	reportMD      = "REPORT.md"
	reportJSON    = "report.json"
	candidatesCSV = "candidates.csv"
	candidatesSVG = "candidates.svg"
)

// reportFiles renders REPORT.md and report.json, and with the candidates
// of a search just run candidates.csv and candidates.svg.
func reportFiles(data report.Data, cands []report.Candidate, prefix string) (map[string][]byte, error) {
	js, err := data.JSON()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{prefix + reportMD: data.Markdown(), prefix + reportJSON: js}
	if cands != nil {
		csv, err := data.CSV(cands)
		if err != nil {
			return nil, err
		}
		files[prefix+candidatesCSV], files[prefix+candidatesSVG] = csv, data.Chart(cands)
	}
	return files, nil
}

// carriedReports returns candidates.csv and candidates.svg from dir when
// its report.json is the report of the same search as data (the same
// winner's kernel hash, device, NVRTC and tuning time), so that a replay
// keeps what only the tuning run could write; nothing otherwise.
func carriedReports(dir, prefix string, data report.Data) map[string][]byte {
	old, err := os.ReadFile(filepath.Join(dir, prefix+reportJSON))
	if err != nil {
		return nil
	}
	var prev report.Data
	if json.Unmarshal(old, &prev) != nil || !sameSearch(prev, data) {
		return nil
	}
	kept := map[string][]byte{}
	for _, name := range []string{prefix + candidatesCSV, prefix + candidatesSVG} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			kept[name] = b
		}
	}
	return kept
}

// sameSearch says whether the reports prev and data are of the same
// search: the same winner's kernel hash, device, NVRTC and tuning time.
func sameSearch(prev, data report.Data) bool {
	return !data.TunedAt.IsZero() && prev.TunedAt.Equal(data.TunedAt) &&
		prev.KernelSHA256 == data.KernelSHA256 && prev.Device.Name == data.Device.Name && prev.NVRTC == data.NVRTC
}
