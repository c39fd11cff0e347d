// Package report writes a tuning run's report: REPORT.md for people and
// report.json for programs, both from one Data value that the tuning cache
// keeps, so that a replay without a GPU writes the same bytes.
package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// Candidate is one row of the report.
type Candidate struct {
	autotune.Trial
	GFLOPS   float64 `json:"gflops,omitempty"`
	Roofline float64 `json:"roofline_fraction,omitempty"` // floor time / median time
}

// Data is everything a report shows.
type Data struct {
	Shape           string      `json:"shape"`
	Precision       string      `json:"precision"`
	Layout          string      `json:"layout"`
	Device          gpu.Info    `json:"device"`
	NVRTC           string      `json:"nvrtc"`
	TemplateVersion string      `json:"template_version"`
	ConvgenVersion  string      `json:"convgen_version"`
	Command         string      `json:"command"`
	GFLOP           float64     `json:"gflop"`
	MBytes          float64     `json:"mbytes"`           // fewest bytes moved: inputs read once, output written once
	ComputeFloorMS  float64     `json:"compute_floor_ms"` // FLOPs at the precision's peak
	MemoryFloorMS   float64     `json:"memory_floor_ms"`  // bytes at the measured copy bandwidth
	PeakTFLOPS      float64     `json:"peak_tflops"`
	PeakSource      string      `json:"peak_source"`
	Winner          string      `json:"winner"`
	TieNote         string      `json:"tie_note,omitempty"`
	Counts          []Count     `json:"counts"`
	Candidates      []Candidate `json:"candidates"` // every candidate that reached the compiler
	Skipped         int         `json:"skipped"`    // kept but not measured within the budget
	// Rejected lists the statically rejected configurations. The tuning
	// cache does not store it: SetRejected recomputes it from the templates.
	Rejected []Rejection `json:"rejected,omitempty"`
	// Fallback is the kernel generated packages run on other GPUs;
	// NoFallback says why there is none. Both are empty in reports from
	// before fallbacks.
	Fallback   *Fallback `json:"fallback,omitempty"`
	NoFallback string    `json:"no_fallback,omitempty"`
}

// Fallback is the portable kernel of a report, as checked and timed on the
// tuning GPU through its PTX.
type Fallback struct {
	ID          string  `json:"id"`
	Arch        string  `json:"arch"` // the PTX's virtual architecture, "compute_80"
	SharedBytes int     `json:"shared_bytes"`
	MedianMS    float64 `json:"median_ms"`
	RelError    float64 `json:"rel_error"`
}

// Rejection is a configuration rejected before compiling, and why.
type Rejection struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// SetRejected fills Rejected from the problem's enumerated candidates.
func (d *Data) SetRejected(cands []kernels.Candidate) {
	d.Rejected = nil
	for _, c := range cands {
		if c.Rejected != "" {
			d.Rejected = append(d.Rejected, Rejection{c.ID(), c.Rejected})
		}
	}
}

// Count is how many candidates ended with one status.
type Count struct {
	Status autotune.Status `json:"status"`
	N      int             `json:"n"`
}

// New builds the report data of a finished run.
func New(res *autotune.Result, command, convgenVersion string) Data {
	p := res.Problem
	d := Data{Shape: p.Shape.String(), Precision: string(p.Precision), Layout: string(p.Layout),
		Device: res.Device, NVRTC: res.NVRTC, TemplateVersion: res.TemplateVersion,
		ConvgenVersion: convgenVersion, Command: command, TieNote: res.TieNote}
	in, filter, bias, out := p.Shape.Elements()
	bytes := float64(in+filter+bias+out) * float64(p.Precision.ElementBytes())
	d.GFLOP = p.Shape.FLOPs() / 1e9
	d.MBytes = bytes / 1e6
	peak, src := Peak(p.Precision, res.Device)
	d.PeakTFLOPS, d.PeakSource = peak/1e12, src
	d.ComputeFloorMS = p.Shape.FLOPs() / peak * 1e3
	if res.Device.MemoryGBps > 0 {
		d.MemoryFloorMS = bytes / (res.Device.MemoryGBps * 1e9) * 1e3
	}
	floor := math.Max(d.ComputeFloorMS, d.MemoryFloorMS)
	counts := map[autotune.Status]int{}
	for _, t := range res.Trials {
		c := Candidate{Trial: t}
		if t.Status == autotune.StatusOK && t.MedianMS > 0 {
			c.GFLOPS = p.Shape.FLOPs() / (t.MedianMS * 1e-3) / 1e9
			c.Roofline = floor / t.MedianMS
		}
		counts[t.Status]++
		switch t.Status {
		case autotune.StatusRejected:
		case autotune.StatusSkipped:
			d.Skipped++
		default:
			d.Candidates = append(d.Candidates, c)
		}
	}
	for _, st := range []autotune.Status{autotune.StatusOK, autotune.StatusRejected, autotune.StatusCompile,
		autotune.StatusLoad, autotune.StatusLaunch, autotune.StatusFault, autotune.StatusTimeout,
		autotune.StatusWrong, autotune.StatusSkipped} {
		if counts[st] > 0 {
			d.Counts = append(d.Counts, Count{st, counts[st]})
		}
	}
	if res.Winner != nil {
		d.Winner = res.Winner.ID
	}
	if fb := res.Fallback; fb != nil {
		d.Fallback = &Fallback{ID: fb.Trial.ID, Arch: fb.Arch, SharedBytes: fb.Trial.SharedBytes, MedianMS: fb.Trial.MedianMS, RelError: fb.Trial.RelError}
	} else {
		d.NoFallback = res.FallbackNote
	}
	return d
}

// Peak is the arithmetic peak, in FLOP/s, of the units a precision uses,
// from the device's SM count and clock, and where the per-SM rate comes from.
func Peak(p problem.Precision, dev gpu.Info) (float64, string) {
	perSM, what := 256.0, "FFMA: 128 lanes × 2 FLOP per SM per clock"
	switch p {
	case problem.TF32:
		perSM, what = 2048, "dense TF32 tensor cores: 2048 FLOP per SM per clock (sm_90 datasheet)"
	case problem.TF32x3:
		perSM, what = 2048.0/3, "3 dense TF32 products per FP32 product: 2048/3 FLOP per SM per clock (sm_90)"
	case problem.FP16, problem.BF16:
		perSM, what = 4096, "dense FP16/BF16 tensor cores: 4096 FLOP per SM per clock (sm_90 datasheet)"
	}
	peak := perSM * float64(dev.SMs) * float64(dev.ClockMHz) * 1e6
	return peak, fmt.Sprintf("%s × %d SMs × %d MHz", what, dev.SMs, dev.ClockMHz)
}

// WinnerRow returns the winner's row, if any.
func (d Data) WinnerRow() (Candidate, bool) {
	for _, c := range d.Candidates {
		if c.ID == d.Winner {
			return c, true
		}
	}
	return Candidate{}, false
}

// JSON renders report.json.
func (d Data) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return append(b, '\n'), nil
}

// Markdown renders REPORT.md: the problem, the device, the floors, the
// winner, then every measured candidate fastest first and the failures.
func (d Data) Markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# convgen tuning report\n\n")
	fmt.Fprintf(&b, "- shape: `%s`\n- precision: %s, layout: %s\n", d.Shape, d.Precision, d.Layout)
	fmt.Fprintf(&b, "- device: %s (%s, %d SMs, %d MHz), driver CUDA %s, measured copy bandwidth %.0f GB/s\n",
		d.Device.Name, d.Device.Arch, d.Device.SMs, d.Device.ClockMHz, d.Device.Driver, d.Device.MemoryGBps)
	fmt.Fprintf(&b, "- NVRTC %s, templates %s, convgen %s\n", d.NVRTC, d.TemplateVersion, d.ConvgenVersion)
	fmt.Fprintf(&b, "- reproduce: `%s`\n\n", d.Command)
	fmt.Fprintf(&b, "## Floors\n\n%.2f GFLOP and %.0f MB (each input read once, the output written once).\n\n", d.GFLOP, d.MBytes)
	fmt.Fprintf(&b, "- compute floor: %.3f ms at %.1f TFLOP/s (%s)\n", d.ComputeFloorMS, d.PeakTFLOPS, d.PeakSource)
	fmt.Fprintf(&b, "- memory floor: %.3f ms at the measured copy bandwidth\n\n", d.MemoryFloorMS)
	fmt.Fprintf(&b, "\"of roofline\" below is max(floors) / median time.\n\n")
	if w, ok := d.WinnerRow(); ok {
		fmt.Fprintf(&b, "## Winner\n\n`%s`: median %.3f ms (p10 %.3f, p90 %.3f, %d runs), %.0f GFLOP/s, %.0f%% of roofline, rel. error %.2e (bound %.0e), %d registers, %d B spills, %d B shared memory.\n\n",
			w.ID, w.MedianMS, w.P10MS, w.P90MS, w.Runs, w.GFLOPS, 100*w.Roofline, w.RelError,
			mustPrecision(d.Precision).ErrorBound(), w.Registers, w.SpillStores, w.SharedBytes)
	}
	if note := d.executedNote(); note != "" {
		fmt.Fprintf(&b, "%s\n\n", note)
	}
	if d.TieNote != "" {
		fmt.Fprintf(&b, "%s\n\n", d.TieNote)
	}
	switch {
	case d.Fallback != nil:
		fb := d.Fallback
		fmt.Fprintf(&b, "On other GPUs the package runs its fallback, `%s`, as PTX for %s (%d B of shared memory), which the driver compiles for the GPU at hand; loaded that way here, it passed the check with rel. error %.2e and ran in %.3f ms (median).\n\n",
			fb.ID, fb.Arch, fb.SharedBytes, fb.RelError, fb.MedianMS)
	case d.NoFallback != "":
		fmt.Fprintf(&b, "No fallback for other GPUs: %s.\n\n", d.NoFallback)
	}
	var parts []string
	for _, c := range d.Counts {
		parts = append(parts, fmt.Sprintf("%d %s", c.N, c.Status))
	}
	fmt.Fprintf(&b, "## Candidates\n\n%s.\n\n", strings.Join(parts, ", "))
	fmt.Fprintf(&b, "| candidate | status | median ms | p10–p90 ms | GFLOP/s | of roofline | rel. error | regs | spills B | smem B | threads |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range d.sortedMeasured() {
		if c.Status == autotune.StatusOK {
			fmt.Fprintf(&b, "| `%s` | ok | %.3f | %.3f–%.3f | %.0f | %.0f%% | %.1e | %d | %d | %d | %d |\n",
				c.ID, c.MedianMS, c.P10MS, c.P90MS, c.GFLOPS, 100*c.Roofline, c.RelError, c.Registers, c.SpillStores, c.SharedBytes, c.Threads)
		} else {
			fmt.Fprintf(&b, "| `%s` | %s: %s | | | | | | %d | %d | %d | %d |\n",
				c.ID, c.Status, oneLine(c.Reason), c.Registers, c.SpillStores, c.SharedBytes, c.Threads)
		}
	}
	if len(d.Rejected) > 0 {
		fmt.Fprintf(&b, "\n## Rejected before compiling\n\n| reason | configurations |\n|---|---|\n")
		classes, order := map[string]int{}, []string{}
		for _, r := range d.Rejected {
			class, _, _ := strings.Cut(r.Reason, ":")
			if classes[class] == 0 {
				order = append(order, class)
			}
			classes[class]++
		}
		for _, c := range order {
			fmt.Fprintf(&b, "| %s | %d |\n", c, classes[c])
		}
		fmt.Fprintf(&b, "\nreport.json lists each one with its reason.\n")
	}
	return b.Bytes()
}

// sortedMeasured lists the candidates that reached the compiler: measured
// ones fastest first, then failures in enumeration order.
func (d Data) sortedMeasured() []Candidate {
	var ok, failed []Candidate
	for _, c := range d.Candidates {
		switch c.Status {
		case autotune.StatusOK:
			ok = append(ok, c)
		default:
			failed = append(failed, c)
		}
	}
	slices.SortStableFunc(ok, func(a, b Candidate) int { return cmp.Compare(a.MedianMS, b.MedianMS) })
	return append(ok, failed...)
}

// executedNote says, when the winner's family does different arithmetic
// than the direct convolution (Winograd), how much it does and at what rate:
// the report's GFLOP/s and roofline fractions count the direct
// convolution's FLOPs, so for such a kernel they are effective rates.
func (d Data) executedNote() string {
	w, ok := d.WinnerRow()
	if !ok {
		return ""
	}
	f, err := kernels.FamilyByName(w.Family)
	if err != nil {
		return ""
	}
	ex, ok := f.(kernels.ExecutedFLOPs)
	if !ok {
		return ""
	}
	s, err := problem.ParseShape(d.Shape)
	if err != nil || w.MedianMS <= 0 {
		return ""
	}
	p := problem.Problem{Shape: s, Precision: mustPrecision(d.Precision), Layout: problem.Layout(d.Layout)}
	flops := ex.ExecutedFLOPs(p, w.Config)
	rate := flops / (w.MedianMS * 1e-3) / 1e12
	return fmt.Sprintf("The winner's %s algorithm does %.2f GFLOP of multiply-adds where the direct convolution does %.2f "+
		"(%.2f× fewer): %.1f TFLOP/s of its own arithmetic, %.0f%% of the %.1f TFLOP/s peak. GFLOP/s and \"of roofline\" "+
		"in this report count the direct convolution's FLOPs, so for it they are effective rates, not what the units do.",
		w.Family, flops/1e9, d.GFLOP, d.GFLOP*1e9/flops, rate, 100*rate/d.PeakTFLOPS, d.PeakTFLOPS)
}

func mustPrecision(s string) problem.Precision {
	p, err := problem.ParsePrecision(s)
	if err != nil {
		return problem.FP32
	}
	return p
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
