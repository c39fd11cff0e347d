// Package report writes a tuning record's report: REPORT.md for people and
// report.json for programs, both from one Data value built from the record
// alone (New), so that a replay without a GPU writes the same bytes as the
// tuning run did, without enumerating or measuring anything.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// SchemaVersion is the version of report.json's layout, its
// "schema_version" field; it changes when fields change meaning, come or
// go (3: phases and untuned added). The optional "op", present only in a
// gradient's report, came without a new version: a forward report is
// unchanged.
const SchemaVersion = 3

// Row is one measured candidate of the report.
type Row struct {
	tunecache.Measured
	GFLOPS   float64 `json:"gflops,omitempty"`
	Roofline float64 `json:"roofline_fraction,omitempty"` // floor time / median time
}

// Device is the tuning device as the report describes it.
type Device struct {
	Name       string  `json:"name"` // "NVIDIA H200"
	Arch       string  `json:"arch"` // "sm_90"
	SMs        int     `json:"sms"`
	ClockMHz   int     `json:"clock_mhz"`
	Driver     string  `json:"driver"`      // the driver's CUDA version
	MemoryGBps float64 `json:"memory_gbps"` // measured copy bandwidth, bytes read + written
}

// Data is everything a report shows.
type Data struct {
	SchemaVersion int    `json:"schema_version"` // SchemaVersion
	Shape         string `json:"shape"`
	Precision     string `json:"precision"`
	Layout        string `json:"layout"`
	// Epilogue is the canonical epilogue chain the kernel applies before
	// its stores; absent for none.
	Epilogue string `json:"epilogue,omitempty"`
	// Op is the computation's name ("dgrad", "wgrad"; problem.Op); absent
	// for the forward convolution.
	Op string `json:"op,omitempty"`
	// OutPrecision is the output's element type ("fp32", "fp16", "bf16")
	// when it is not the input's (-out-precision); absent otherwise.
	OutPrecision   string           `json:"out_precision,omitempty"`
	Device         Device           `json:"device"`
	NVRTC          string           `json:"nvrtc"`
	ConvgenVersion string           `json:"convgen_version"` // the convgen that tuned it
	KernelSHA256   string           `json:"kernel_sha256"`   // the winner's kernel hash
	Command        string           `json:"command"`
	TunedAt        time.Time        `json:"tuned_at,omitzero"`   // zero when not recorded
	DurationS      float64          `json:"duration_s,omitzero"` // 0 when not recorded
	Phases         tunecache.Phases `json:"phases,omitzero"`     // where the tuning time went; zero when not recorded
	// Untuned, when set, says that nothing was measured: the package's
	// kernel is a heuristic default configuration (convgen -untuned).
	Untuned        string            `json:"untuned,omitempty"`
	GFLOP          float64           `json:"gflop"`
	MBytes         float64           `json:"mbytes"`           // fewest bytes moved: inputs read once, output written once
	ComputeFloorMS float64           `json:"compute_floor_ms"` // FLOPs at the precision's peak
	MemoryFloorMS  float64           `json:"memory_floor_ms"`  // bytes at the measured copy bandwidth
	PeakTFLOPS     float64           `json:"peak_tflops"`
	PeakSource     string            `json:"peak_source"`
	Winner         string            `json:"winner"`
	WinnerConfig   kernels.Config    `json:"winner_config"`
	TieNote        string            `json:"tie_note,omitempty"`
	Counts         []tunecache.Count `json:"counts"`
	Top            []Row             `json:"top"`             // the fastest candidates, fastest first (and the winner)
	BestPerFamily  []Row             `json:"best_per_family"` // the fastest of each family
	// Fallback is the kernel generated packages run on other GPUs;
	// NoFallback says why there is none.
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

// New builds the report of a tuning record for problem p; command is the
// command line that wrote the package.
func New(rec tunecache.Record, p problem.Problem, command string) Data {
	sum := rec.Summary
	d := Data{SchemaVersion: SchemaVersion, Shape: p.Shape.String(), Precision: string(p.Precision), Layout: string(p.Layout),
		Device: Device{Name: rec.Key.Device, Arch: sum.DeviceArch, SMs: rec.Key.SMCount, ClockMHz: sum.ClockMHz,
			Driver: rec.Key.Driver, MemoryGBps: sum.MemoryGBps},
		NVRTC: rec.Key.NVRTCVersion, ConvgenVersion: rec.ConvgenVersion, KernelSHA256: rec.KernelSHA256,
		Command: command, TunedAt: sum.TunedAt, DurationS: sum.DurationS, Phases: sum.Phases, TieNote: sum.TieNote,
		Counts: sum.Counts, NoFallback: sum.NoFallback,
		Winner:       kernels.Candidate{Family: rec.Winner.Family, Config: rec.Winner.Config}.ID(),
		WinnerConfig: rec.Winner.Config, Epilogue: p.Epilogue.String()}
	if p.Op != problem.OpFprop {
		d.Op = p.Op.String()
	}
	if p.OutDiffers() {
		d.OutPrecision = string(p.OutPrecision)
	}
	bytes := Bytes(p)
	d.MBytes = bytes / 1e6
	d.GFLOP = p.Shape.FLOPs() / 1e9
	peak, src := Peak(p.Precision, d.Device)
	d.PeakTFLOPS, d.PeakSource = peak/1e12, src
	if peak > 0 {
		d.ComputeFloorMS = p.Shape.FLOPs() / peak * 1e3
	}
	if d.Device.MemoryGBps > 0 {
		d.MemoryFloorMS = bytes / (d.Device.MemoryGBps * 1e9) * 1e3
	}
	floor := math.Max(d.ComputeFloorMS, d.MemoryFloorMS)
	row := func(m tunecache.Measured) Row {
		r := Row{Measured: m}
		if m.MedianMS > 0 {
			r.GFLOPS = p.Shape.FLOPs() / (m.MedianMS * 1e-3) / 1e9
			r.Roofline = floor / m.MedianMS
		}
		return r
	}
	for _, m := range sum.Top {
		d.Top = append(d.Top, row(m))
	}
	for _, m := range sum.BestPerFamily {
		d.BestPerFamily = append(d.BestPerFamily, row(m))
	}
	if fb := rec.Fallback; fb != nil {
		d.Fallback = &Fallback{ID: kernels.Candidate{Family: fb.Timing.Family, Config: fb.Timing.Config}.ID(), Arch: fb.Arch,
			SharedBytes: fb.SharedBytes, MedianMS: fb.Timing.MedianMS, RelError: fb.Timing.RelError}
	}
	return d
}

// Bytes is the fewest bytes a kernel for p moves: every operand read or
// written once, the forward op's or a gradient's (problem.Operands; dBias
// is FP32, the forward output and a residual of the output's type, which
// -out-precision may make other than the input's), and the epilogue's
// scale and shift.
func Bytes(p problem.Problem) float64 {
	bytes := 0.0
	for i, o := range p.Operands() {
		eb := p.Precision.ElementBytes()
		switch {
		case o.FP32:
			eb = 4
		case i == 0 && p.Op == problem.OpFprop:
			eb = p.OutElementBytes()
		}
		bytes += float64(o.Elems) * float64(eb)
	}
	_, _, _, out := p.Shape.Elements()
	if p.Epilogue.NeedsResidual() { // read once, like the input
		bytes += float64(out) * float64(p.OutElementBytes())
	}
	if p.Epilogue.NeedsScaleShift() {
		bytes += float64(2*p.Shape.K) * 4
	}
	return bytes
}

// Peak is the arithmetic peak, in FLOP/s, of the units a precision uses,
// from the device's SM count and clock, and where the per-SM rate comes from.
func Peak(p problem.Precision, dev Device) (float64, string) {
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
func (d Data) WinnerRow() (Row, bool) {
	for _, c := range d.Top {
		if c.ID == d.Winner {
			return c, true
		}
	}
	return Row{}, false
}

// JSON renders report.json.
func (d Data) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return append(b, '\n'), nil
}

// Markdown renders REPORT.md: the problem and the device, a summary (the
// winner, the runners-up, the best of each family, when and how long it
// was tuned, the floors, the candidates' fates), notes on the winner and
// the fallback, then the fastest candidates and the fastest of each
// family as tables.
func (d Data) Markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# convgen tuning report\n\n")
	fmt.Fprintf(&b, "- shape: `%s`\n- precision: %s, layout: %s\n", d.Shape, d.Precision, d.Layout)
	switch d.Op {
	case "dgrad":
		fmt.Fprintf(&b, "- op: dgrad, the input gradient dX = conv^T(dY, W)\n")
	case "wgrad":
		fmt.Fprintf(&b, "- op: wgrad, the filter gradient dW = sum over N,P,Q of dY (x) X, and the bias gradient sum dY (FP32) when the shape has a bias\n")
	}
	if d.Epilogue != "" {
		fmt.Fprintf(&b, "- epilogue: `%s`, applied to each output after the bias, in FP32\n", d.Epilogue)
	}
	if d.Precision == string(problem.FP32) {
		fmt.Fprintf(&b, "- fp32 is strict FP32 arithmetic (FFMA); `-precision 3xtf32` computes results as accurate (the same 1e-5 bound) on tensor cores, split TF32 operands, and is usually the faster on layers with many channels\n")
	}
	if d.OutPrecision != "" {
		fmt.Fprintf(&b, "- output precision: %s (computed in %s arithmetic, rounded once to %s at the store; error bound %.0e)\n", d.OutPrecision, d.Precision, d.OutPrecision, d.errorBound())
	}
	if d.Untuned != "" {
		fmt.Fprintf(&b, "- untuned: no measurement. %s\n- reproduce: `%s`\n", d.Untuned, d.Command)
		return b.Bytes()
	}
	fmt.Fprintf(&b, "- device: %s (%s, %d SMs, %d MHz), driver CUDA %s, measured copy bandwidth %.0f GB/s\n",
		d.Device.Name, d.Device.Arch, d.Device.SMs, d.Device.ClockMHz, d.Device.Driver, d.Device.MemoryGBps)
	fmt.Fprintf(&b, "- NVRTC %s, tuned by convgen %s; winner's kernel hash %.12s\n", d.NVRTC, d.ConvgenVersion, d.KernelSHA256)
	fmt.Fprintf(&b, "- reproduce: `%s`\n\n", d.Command)

	fmt.Fprintf(&b, "## Summary\n\n")
	w, hasWinner := d.WinnerRow()
	if hasWinner {
		fmt.Fprintf(&b, "- winner: `%s`: median %.3f ms (p10 %.3f, p90 %.3f, %d runs), %.1f TFLOP/s, %.0f%% of roofline, rel. error %.2e (bound %.0e), %d registers, %d B spills, %d B shared memory\n",
			w.ID, w.MedianMS, w.P10MS, w.P90MS, w.Runs, w.GFLOPS/1e3, 100*w.Roofline, w.RelError,
			d.errorBound(), w.Registers, w.SpillStores, w.SharedBytes)
		if w.MaxClusters > 0 {
			fmt.Fprintf(&b, "- the winner runs in thread-block clusters: the driver runs %d of them at once on this GPU (a launch of more takes waves)\n", w.MaxClusters)
		}
	}
	var runners []string
	for _, r := range d.Top {
		if r.ID == d.Winner || len(runners) == runnersUp {
			continue
		}
		runners = append(runners, fmt.Sprintf("`%s` %.3f ms%s", r.ID, r.MedianMS, slower(r, w, hasWinner)))
	}
	if len(runners) > 0 {
		fmt.Fprintf(&b, "- runners-up: %s\n", strings.Join(runners, "; "))
	}
	if len(d.BestPerFamily) > 0 {
		fmt.Fprintf(&b, "- best of each family:\n")
		for _, r := range d.BestPerFamily {
			fmt.Fprintf(&b, "  - %s: `%s` %.3f ms%s\n", r.Family(), r.ID, r.MedianMS, slower(r, w, hasWinner))
		}
	}
	if when := d.when(); when != "" {
		fmt.Fprintf(&b, "- tuned %s\n", when)
	}
	fmt.Fprintf(&b, "- floors: compute %.3f ms at %.1f TFLOP/s, memory %.3f ms at the measured copy bandwidth (%.2f GFLOP, %.0f MB: each input read once, the output written once); \"of roofline\" is max(floors) / median time\n",
		d.ComputeFloorMS, d.PeakTFLOPS, d.MemoryFloorMS, d.GFLOP, d.MBytes)
	var parts []string
	for _, c := range d.Counts {
		parts = append(parts, fmt.Sprintf("%d %s", c.N, c.Status))
	}
	fmt.Fprintf(&b, "- candidates: %s\n\n", strings.Join(parts, ", "))

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
	fmt.Fprintf(&b, "The compute floor's peak: %s.\n\n", d.PeakSource)
	fmt.Fprintf(&b, "## Candidates\n\n")
	table(&b, fmt.Sprintf("The %d fastest", len(d.Top)), d.Top)
	table(&b, "The fastest of each family", d.BestPerFamily)
	return b.Bytes()
}

// runnersUp is how many candidates after the winner the summary names.
const runnersUp = 3

// slower says how much slower than the winner r is, e.g. " (1.25×)"; ""
// for the winner itself or without one.
func slower(r, w Row, hasWinner bool) string {
	if !hasWinner || r.ID == w.ID || w.MedianMS <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%.2f× the winner's time)", r.MedianMS/w.MedianMS)
}

// when says when the search ran and how long each phase took, "" when
// the record does not say.
func (d Data) when() string {
	var parts []string
	if !d.TunedAt.IsZero() {
		parts = append(parts, "on "+d.TunedAt.UTC().Format("2006-01-02 15:04 MST"))
	}
	if d.DurationS > 0 {
		parts = append(parts, "in "+seconds(d.DurationS))
	}
	ph := d.Phases
	if ph != (tunecache.Phases{}) {
		parts = append(parts, fmt.Sprintf("(setup %s, enumerating %s, waiting for compiles %s, measuring %s)",
			seconds(ph.SetupS), seconds(ph.EnumerateS), seconds(ph.CompileS), seconds(ph.MeasureS)))
	}
	return strings.Join(parts, " ")
}

// seconds formats a duration in seconds to the second, or to the
// millisecond below one second.
func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// table writes a titled table of measured candidates.
func table(b *bytes.Buffer, title string, rows []Row) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "### %s\n\n", title)
	fmt.Fprintf(b, "| candidate | median ms | p10–p90 ms | GFLOP/s | of roofline | rel. error | regs | spills B | smem B | threads |\n")
	fmt.Fprintf(b, "|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range rows {
		fmt.Fprintf(b, "| `%s` | %.3f | %.3f–%.3f | %.0f | %.0f%% | %.1e | %d | %d | %d | %d |\n",
			c.ID, c.MedianMS, c.P10MS, c.P90MS, c.GFLOPS, 100*c.Roofline, c.RelError, c.Registers, c.SpillStores, c.SharedBytes, c.Threads)
	}
	fmt.Fprintln(b)
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
	f, err := kernels.FamilyByName(w.Family())
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
	flops := ex.ExecutedFLOPs(p, d.WinnerConfig)
	rate := flops / (w.MedianMS * 1e-3) / 1e12
	return fmt.Sprintf("The winner's %s algorithm does %.2f GFLOP of multiply-adds where the direct convolution does %.2f "+
		"(%.2f× fewer): %.1f TFLOP/s of its own arithmetic, %.0f%% of the %.1f TFLOP/s peak. GFLOP/s and \"of roofline\" "+
		"in this report count the direct convolution's FLOPs, so for it they are effective rates, not what the units do.",
		w.Family(), flops/1e9, d.GFLOP, d.GFLOP*1e9/flops, rate, 100*rate/d.PeakTFLOPS, d.PeakTFLOPS)
}

// errorBound is the report's problem's error bound (problem.Problem.ErrorBound):
// the precision's, or the looser of it and the output type's.
func (d Data) errorBound() float64 {
	p := problem.Problem{Precision: mustPrecision(d.Precision), OutPrecision: problem.Storage(d.OutPrecision)}
	return p.ErrorBound()
}

func mustPrecision(s string) problem.Precision {
	p, err := problem.ParsePrecision(s)
	if err != nil {
		return problem.FP32
	}
	return p
}
