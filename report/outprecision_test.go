package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestOutPrecisionReport: a report of a problem storing another output
// type names it (REPORT.md, report.json's "out_precision"), counts the
// output in its own element size and states the looser bound; a report
// without one has neither the field nor the line.
func TestOutPrecisionReport(t *testing.T) {
	p := flagship(t)
	plain := New(flagshipRecord(), p, "convgen -shape ...")
	p.OutPrecision = problem.StorageBF16
	d := New(flagshipRecord(), p, "convgen -shape ... -out-precision bf16")
	if d.OutPrecision != "bf16" {
		t.Errorf("OutPrecision %q", d.OutPrecision)
	}
	_, _, _, out := p.Shape.Elements()
	wantMB := plain.MBytes - float64(out)*float64(p.Precision.ElementBytes()-2)/1e6
	if math.Abs(d.MBytes-wantMB) > 1e-9 || d.MBytes == plain.MBytes {
		t.Errorf("MB %.3f, want %.3f (a 2-byte output; %.3f with the input's type)", d.MBytes, wantMB, plain.MBytes)
	}
	md := string(d.Markdown())
	if !strings.Contains(md, "- output precision: bf16 (computed in "+string(p.Precision)+" arithmetic, rounded once to bf16 at the store; error bound 1e-02)") {
		t.Errorf("REPORT.md does not name the output precision:\n%s", md)
	}
	if !strings.Contains(md, "(bound 1e-02)") && strings.Contains(md, "winner:") {
		t.Error("REPORT.md's winner line does not state the output type's bound")
	}
	js, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"out_precision":"bf16"`) {
		t.Errorf("report.json lacks the output precision: %s", js)
	}
	pj, err := json.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(pj), `out_precision`) || strings.Contains(string(plain.Markdown()), "output precision") {
		t.Error("a report without an output precision names one")
	}
	// The input's own type is no output precision.
	p.OutPrecision = p.Precision.Storage()
	if same := New(flagshipRecord(), p, "convgen -shape ..."); same.OutPrecision != "" || same.MBytes != plain.MBytes {
		t.Errorf("out-precision = the input's type: OutPrecision %q, MB %.3f (want none, %.3f)", same.OutPrecision, same.MBytes, plain.MBytes)
	}
}
