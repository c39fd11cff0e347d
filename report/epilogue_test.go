package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
)

// TestEpilogueReport: a problem with an epilogue chain names it in
// report.json and REPORT.md, and its memory floor counts the arrays the
// chain reads (the residual, an output-sized tensor; scale and shift, K
// floats each); without a chain neither the field nor the line appears.
func TestEpilogueReport(t *testing.T) {
	plain := New(flagshipRecord(), flagship(t), "convgen -shape ...")
	p := flagship(t)
	c, err := epilogue.Parse("scale_shift,residual,relu")
	if err != nil {
		t.Fatal(err)
	}
	p.Epilogue = c
	d := New(flagshipRecord(), p, "convgen -shape ... -epilogue scale_shift,residual,relu")
	if d.Epilogue != "scale_shift,residual,relu" {
		t.Errorf("Epilogue %q", d.Epilogue)
	}
	_, _, _, out := p.Shape.Elements()
	if want := plain.MBytes + (float64(out)*4+2*96*4)/1e6; math.Abs(d.MBytes-want) > 1e-9 {
		t.Errorf("MB %.3f, want %.3f (the residual and scale/shift read too)", d.MBytes, want)
	}
	if !strings.Contains(string(d.Markdown()), "- epilogue: `scale_shift,residual,relu`") {
		t.Error("REPORT.md does not name the chain")
	}
	js, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"epilogue":"scale_shift,residual,relu"`) {
		t.Errorf("report.json lacks the chain: %s", js)
	}
	pj, err := json.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(pj), `"epilogue"`) || strings.Contains(string(plain.Markdown()), "epilogue") {
		t.Error("the report of a problem without a chain mentions an epilogue")
	}
}
