package pipeline

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/gen"
	"github.com/convgen/convgen/internal/testfs"
	"github.com/convgen/convgen/report"
)

// fixtureCandidates are the candidates of the fixture's search: its
// winner measured, one rejected.
func fixtureCandidates(t *testing.T) []report.Candidate {
	rec := fixture(t, h200, 132)
	w := rec.Summary.Top[0]
	return []report.Candidate{
		{ID: w.ID, Family: "direct", Status: "ok", Registers: w.Registers, MedianMS: w.MedianMS, P10MS: w.P10MS, P90MS: w.P90MS, RelError: w.RelError},
		{ID: "direct/X=1", Family: "direct", Status: "rejected", Reason: "too big"},
	}
}

// TestReportsTunedAndReplayed: a tuning run writes candidates.csv and
// candidates.svg beside REPORT.md; a replay of the same record keeps them;
// a replay of another record drops them (it cannot make them).
func TestReportsTunedAndReplayed(t *testing.T) {
	needNoGPU(t)
	dir := t.TempDir()
	out, cache := filepath.Join(dir, "alexnet"), filepath.Join(dir, "cache.json")
	rec := fixture(t, h200, 132)
	rec.Summary.TunedAt = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	res, err := keepAndWrite(testRequest(t, out, cache), rec, fixtureCandidates(t))
	if err != nil {
		t.Fatal(err)
	}
	tuned := testfs.ReadTree(t, out)
	for _, name := range []string{"REPORT.md", "report.json", "candidates.csv", "candidates.svg"} {
		if len(tuned[name]) == 0 {
			t.Errorf("the tuned package lacks %s", name)
		}
	}
	if !strings.Contains(string(tuned["candidates.csv"]), "direct/X=1,direct,rejected,too big") {
		t.Errorf("candidates.csv:\n%s", tuned["candidates.csv"])
	}
	written := maps.Clone(tuned)
	delete(written, gen.ManifestFile)
	if res.Outcome != Tuned || !slices.Equal(res.Files, slices.Sorted(maps.Keys(written))) {
		t.Errorf("result %v %v: want tuned and the package's files %v", res.Outcome, res.Files, slices.Sorted(maps.Keys(written)))
	}
	if res, err := Run(context.Background(), testRequest(t, out, cache)); err != nil || res.Outcome != Replayed {
		t.Fatalf("replay: %v, %v", res.Outcome, err)
	}
	replayed := testfs.ReadTree(t, out)
	for name, b := range tuned {
		if !bytes.Equal(replayed[name], b) {
			t.Errorf("the replay changed %s", name)
		}
	}
	rec.Summary.TunedAt = rec.Summary.TunedAt.Add(time.Hour) // another search
	putRecords(t, cache, rec)
	if _, err := Run(context.Background(), testRequest(t, out, cache)); err != nil {
		t.Fatalf("replay of another record: %v", err)
	}
	if files := testfs.ReadTree(t, out); files["candidates.csv"] != nil || files["candidates.svg"] != nil {
		t.Error("a replay of another record kept the old search's candidates.csv and candidates.svg")
	}
}

// TestReportDir: -report DIR puts the reports there, with a manifest, and
// not into the package.
func TestReportDir(t *testing.T) {
	needNoGPU(t)
	dir := t.TempDir()
	out, reports, cache := filepath.Join(dir, "alexnet"), filepath.Join(dir, "reports", "alexnet"), filepath.Join(dir, "cache.json")
	c := testRequest(t, out, cache)
	c.ReportDir = reports
	rec := fixture(t, h200, 132)
	rec.Summary.TunedAt = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	if _, err := keepAndWrite(c, rec, fixtureCandidates(t)); err != nil {
		t.Fatal(err)
	}
	pkg := testfs.ReadTree(t, out)
	for _, name := range []string{"REPORT.md", "report.json", "candidates.csv", "candidates.svg"} {
		if pkg[name] != nil {
			t.Errorf("the package holds %s despite -report", name)
		}
	}
	if got, want := listDir(t, reports), []string{gen.ManifestFile, "REPORT.md", "candidates.csv", "candidates.svg", "report.json"}; !slices.Equal(got, want) {
		t.Errorf("-report directory holds %v, want %v", got, want)
	}
	var log bytes.Buffer
	c.Log, c.Command = &log, c.Command+" -report "+filepath.ToSlash(reports)
	res, err := Run(context.Background(), c)
	if err != nil || !strings.Contains(log.String(), "wrote the reports to") {
		t.Fatalf("replay with -report: %v, log %q", err, log.String())
	}
	if want := []string{"REPORT.md", "candidates.csv", "candidates.svg", "report.json"}; !slices.Equal(res.Reports, want) {
		t.Errorf("result's reports %v, want %v", res.Reports, want)
	}
	if _, err := os.Stat(filepath.Join(reports, "candidates.svg")); err != nil {
		t.Errorf("the replay dropped the chart of the same search: %v", err)
	}
	if md, _ := os.ReadFile(filepath.Join(out, "doc.go")); !bytes.Contains(md, []byte("-report "+filepath.ToSlash(reports))) {
		t.Errorf("the package's command line lacks -report")
	}
}
