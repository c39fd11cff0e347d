package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"slices"
)

// The chart's geometry, in SVG user units (pixels).
const (
	chartW, chartH           = 960, 480
	padLeft, padRight        = 70, 190 // the right margin holds the legend
	padTop, padBottom        = 40, 50
	plotW                    = chartW - padLeft - padRight
	plotH                    = chartH - padTop - padBottom
	dotRadius, winnerRadius  = 2.5, 7
	familyPalette, otherSwab = 10, "#7f7f7f"
)

// palette colours the families in the order they first appear
// (Tableau 10, distinct in print and for most colour-blind readers).
var palette = [familyPalette]string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// Chart renders candidates.svg: the median time of every measured
// candidate, fastest first from left to right, on a logarithmic time axis,
// one colour per family, the winner circled and named, the compute and
// memory floors as dashed lines. A search with nothing measured gives a
// chart that says so. It is plain SVG, written by hand (every text escaped
// as XML), so that it renders on GitHub and in a browser without scripts.
func (d Data) Chart(cands []Candidate) []byte {
	var measured []Candidate
	for _, c := range sortCandidates(cands) {
		if c.Status == StatusOK && c.MedianMS > 0 {
			measured = append(measured, c)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	text(&b, padLeft, 22, "start", "bold", fmt.Sprintf("%s %s %s: median time of %d measured candidates, fastest first", d.Shape, d.Precision, d.Layout, len(measured)))
	if len(measured) == 0 {
		text(&b, chartW/2, chartH/2, "middle", "", "no candidate was measured")
		b.WriteString("</svg>\n")
		return b.Bytes()
	}
	lo, hi := measured[0].MedianMS, measured[len(measured)-1].MedianMS
	for _, f := range []float64{d.ComputeFloorMS, d.MemoryFloorMS} {
		if f > 0 {
			lo = math.Min(lo, f)
		}
	}
	// Whole decades around the data, for ticks at powers of ten.
	loExp, hiExp := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if hiExp <= loExp {
		hiExp = loExp + 1
	}
	y := func(ms float64) float64 {
		return padTop + plotH*(hiExp-math.Log10(ms))/(hiExp-loExp)
	}
	x := func(i int) float64 {
		if len(measured) == 1 {
			return padLeft + plotW/2
		}
		return padLeft + plotW*float64(i)/float64(len(measured)-1)
	}
	// Axes and decade grid lines.
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", padLeft, padTop, plotW, plotH)
	for e := loExp; e <= hiExp; e++ {
		ms := math.Pow(10, e)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", padLeft, padLeft+plotW, y(ms), y(ms))
		text(&b, padLeft-6, y(ms)+4, "end", "", fmt.Sprintf("%g ms", ms))
	}
	text(&b, padLeft+plotW/2, chartH-15, "middle", "", "candidates, ranked by median time")
	// The floors.
	for _, f := range []struct {
		name string
		ms   float64
	}{{"compute floor", d.ComputeFloorMS}, {"memory floor", d.MemoryFloorMS}} {
		if f.ms <= 0 {
			continue
		}
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#222" stroke-dasharray="6 4"/>`+"\n", padLeft, padLeft+plotW, y(f.ms), y(f.ms))
		text(&b, padLeft+plotW+6, y(f.ms)+4, "start", "", fmt.Sprintf("%s %.3f ms", f.name, f.ms))
	}
	// The points, one colour per family.
	var families []string
	for _, c := range measured {
		if !slices.Contains(families, c.Family) {
			families = append(families, c.Family)
		}
	}
	colour := func(family string) string {
		if i := slices.Index(families, family); i < familyPalette {
			return palette[i]
		}
		return otherSwab
	}
	for i, c := range measured {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%g" fill="%s"><title>%s</title></circle>`+"\n",
			x(i), y(c.MedianMS), dotRadius, colour(c.Family), escape(fmt.Sprintf("%s: %.4f ms", c.ID, c.MedianMS)))
	}
	if i := slices.IndexFunc(measured, func(c Candidate) bool { return c.ID == d.Winner }); i >= 0 {
		w := measured[i]
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%d" fill="none" stroke="black" stroke-width="2"/>`+"\n", x(i), y(w.MedianMS), winnerRadius)
		text(&b, x(i)+10, y(w.MedianMS)-10, "start", "bold", fmt.Sprintf("winner %s %.3f ms", w.Family, w.MedianMS))
	}
	// The legend.
	for i, f := range families {
		ly := float64(padTop + 60 + 18*i)
		fmt.Fprintf(&b, `<circle cx="%d" cy="%.1f" r="5" fill="%s"/>`+"\n", padLeft+plotW+14, ly-4, colour(f))
		text(&b, padLeft+plotW+24, ly, "start", "", f)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// text writes an SVG text element at (x, y), its content escaped.
func text[T int | float64](b *bytes.Buffer, x, y T, anchor, weight, s string) {
	attrs := ""
	if weight != "" {
		attrs = fmt.Sprintf(` font-weight="%s"`, weight)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>`+"\n", float64(x), float64(y), anchor, attrs, escape(s))
}

// escape makes s safe as XML character data.
func escape(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s)) // writes to a bytes.Buffer do not fail
	return b.String()
}
