package report

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

func sampleCandidates() []Candidate {
	return []Candidate{
		{ID: "direct/A=2", Family: "direct", Status: "ok", Registers: 64, SharedBytes: 4096, MedianMS: 4, P10MS: 3.9, P90MS: 4.2, RelError: 3e-7},
		{ID: "mma/B=9", Family: "mma", Status: "rejected", Reason: "needs 300000 B of shared memory, the device allows 232448"},
		{ID: "mma/B=1", Family: "mma", Status: "ok", Registers: 128, SpillBytes: 8, SharedBytes: 65536, MedianMS: 3, P10MS: 2.9, P90MS: 3.2, RelError: 1e-6},
		{ID: "mma/B=2", Family: "mma", Status: "compile", Reason: "ptxas error, line 3:\nbad <thing> & \"more\""},
		{ID: "direct/A=1", Family: "direct", Status: "ok", Registers: 80, MedianMS: 2, P10MS: 1.9, P90MS: 2.1, RelError: 3e-7},
	}
}

// TestCSV: candidates.csv has the header and one row per candidate, the
// measured fastest first, then the others; numbers only where they exist;
// a multi-line reason with commas and quotes stays one field.
func TestCSV(t *testing.T) {
	d := New(flagshipRecord(), flagship(t), "x")
	out, err := d.CSV(sampleCandidates())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("candidates.csv does not parse: %v\n%s", err, out)
	}
	if len(rows) != 6 || strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
		t.Fatalf("%d rows, header %v", len(rows), rows[0])
	}
	var ids []string
	for _, r := range rows[1:] {
		ids = append(ids, r[0])
	}
	if got, want := strings.Join(ids, " "), "direct/A=1 mma/B=1 direct/A=2 mma/B=2 mma/B=9"; got != want {
		t.Errorf("row order %q, want %q", got, want)
	}
	col := func(row []string, name string) string {
		for i, h := range csvHeader {
			if h == name {
				return row[i]
			}
		}
		t.Fatalf("no column %s", name)
		return ""
	}
	win := rows[1]
	// 53.97 GFLOP in 2 ms: 26.99 TFLOP/s; max(floors) 0.807 ms / 2 ms.
	if col(win, "median_ms") != "2" || !strings.HasPrefix(col(win, "tflops"), "26.98") || !strings.HasPrefix(col(win, "roofline_fraction"), "0.403") {
		t.Errorf("winner row %v", win)
	}
	failed := rows[4]
	if col(failed, "status") != "compile" || col(failed, "median_ms") != "" || col(failed, "registers") != "" ||
		col(failed, "reason") != "ptxas error, line 3: bad <thing> & \"more\"" {
		t.Errorf("failed row %q", failed)
	}
	if col(rows[2], "spill_bytes") != "8" || col(rows[2], "shared_bytes") != "65536" {
		t.Errorf("mma/B=1 row %v", rows[2])
	}
}

// TestChart: candidates.svg is well-formed XML with one point per measured
// candidate, the winner circled and named, both floors drawn, one legend
// entry per family, and text escaped.
func TestChart(t *testing.T) {
	d := New(flagshipRecord(), flagship(t), "x")
	cands := append(sampleCandidates(), Candidate{ID: "odd/<&>", Family: "odd<&>", Status: "ok", MedianMS: 5})
	svg := d.Chart(cands)
	dec := xml.NewDecoder(bytes.NewReader(svg))
	circles, titles := 0, 0
	var texts []string
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("candidates.svg is not well-formed: %v\n%s", err, svg)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			switch tk.Name.Local {
			case "circle":
				circles++
			case "title":
				titles++
			case "text":
				inText = true
			}
		case xml.EndElement:
			inText = inText && tk.Name.Local != "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(tk))
			}
		}
	}
	// 4 measured points, the winner's ring, 3 legend swatches.
	if titles != 4 || circles != 4+1+3 {
		t.Errorf("%d points with titles, %d circles: want 4 and 8", titles, circles)
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{"winner direct 2.000 ms", "compute floor 0.807 ms", "memory floor 0.105 ms", "odd<&>", "4 measured candidates"} {
		if !strings.Contains(all, want) {
			t.Errorf("the chart's texts lack %q: %s", want, all)
		}
	}
	if empty := string(d.Chart(nil)); !strings.Contains(empty, "no candidate was measured") {
		t.Errorf("a chart of nothing does not say so:\n%s", empty)
	}
}
