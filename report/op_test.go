package report

import (
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestOp: a gradient's report names its op in REPORT.md and report.json
// and counts its operands' bytes (dBias in FP32); the forward op's has no
// op field, as before ops existed.
func TestOp(t *testing.T) {
	p := flagship(t)
	fwd := New(flagshipRecord(), p, "x")
	js, err := fwd.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), `"op"`) || strings.Contains(string(fwd.Markdown()), "- op:") {
		t.Error("a forward report names an op")
	}
	p.Precision = problem.FP16
	for _, op := range []problem.Op{problem.OpDgrad, problem.OpWgrad} {
		p.Op = op
		d := New(flagshipRecord(), p, "x")
		js, err := d.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(js), `"op": "`+op.String()+`"`) || !strings.Contains(string(d.Markdown()), "- op: "+op.String()) {
			t.Errorf("%s: the report does not name the op", op)
		}
		in, filter, bias, out := p.Shape.Elements()
		want := float64(2 * (in + filter + out))
		if op == problem.OpWgrad {
			want += float64(4 * bias)
		}
		if d.MBytes != want/1e6 {
			t.Errorf("%s: %.6f MB, want %.6f", op, d.MBytes, want/1e6)
		}
	}
}
