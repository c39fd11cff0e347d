// Package autotune searches a problem's kernel configurations on the GPU:
// it compiles candidates with NVRTC in parallel on the CPU, then measures
// them one at a time in a disposable worker process (this binary re-executed
// in worker mode), so that a faulting or hanging candidate costs one trial.
// Every candidate is checked against a float64 reference before it is timed.
package autotune

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// Options configure one tuning run.
type Options struct {
	Problem problem.Problem
	Worker  []string // argv that starts a worker (e.g. this binary with --worker)
	Trials  int      // candidates to measure at most (0: all)
	Time    time.Duration
	Seed    uint64 // seeds the sampling and the check inputs
	Jobs    int    // concurrent compiles (0: the number of CPUs)
	Warmup  int
	Runs    int // timed runs per candidate (median taken)
	Retime  int // how many of the best are timed again before choosing
	// Timeout bounds one candidate's check and timing in the worker.
	Timeout time.Duration
	// CompileTimeout bounds one candidate's NVRTC compile (0: 3 minutes).
	// NVRTC cannot be interrupted: a compile still running then is
	// recorded as a compile failure and left to finish in the background.
	CompileTimeout time.Duration
	// Only, when set, restricts the search to these candidate IDs (pinning).
	Only []string
	// First lists candidate IDs measured before the search proper, in this
	// order (IDs that are not kept candidates are ignored): a fused chain's
	// problem starts from the tiles that won its plain problem.
	First []string
	// Extra candidates, rendered by the caller, measured in addition (tests
	// plant faulty kernels this way).
	Extra    []kernels.Kernel
	Progress io.Writer // progress lines; nil for none

	// compiler replaces the NVRTC library's Compile (tests stand in slow
	// or stuck compiles with it).
	compiler func(src string, o nvrtc.Options) (*nvrtc.Result, error)
	// grace replaces the grace past Time of a search with nothing verified
	// (tests); zero: as long as Time, at least GraceMin.
	grace time.Duration
	// patience replaces compilePatience (tests); zero: compilePatience.
	patience time.Duration
}

// Trial is what happened to one candidate.
type Trial struct {
	ID          string         `json:"id"`
	Family      string         `json:"family"`
	Config      kernels.Config `json:"config"`
	Status      Status         `json:"status"`
	Reason      string         `json:"reason,omitempty"`
	Registers   int            `json:"registers,omitempty"`
	SpillStores int            `json:"spill_stores,omitempty"`
	SpillLoads  int            `json:"spill_loads,omitempty"`
	StackBytes  int            `json:"stack_bytes,omitempty"`
	SharedBytes int            `json:"shared_bytes,omitempty"` // dynamic + static
	Threads     int            `json:"threads,omitempty"`
	// MaxClusters is, for a kernel of thread-block clusters, how many of
	// them the driver says run at once with its launch (a launch of more
	// takes waves); 0 otherwise.
	MaxClusters int `json:"max_clusters,omitempty"`
	// Warnings is what the compiler said besides the resource report, e.g.
	// ptxas serialising wgmma instructions.
	Warnings    string  `json:"warnings,omitempty"`
	MedianMS    float64 `json:"median_ms,omitempty"`
	P10MS       float64 `json:"p10_ms,omitempty"`
	P90MS       float64 `json:"p90_ms,omitempty"`
	Runs        int     `json:"runs,omitempty"`
	RelError    float64 `json:"rel_error,omitempty"`
	SampleError float64 `json:"sample_error,omitempty"`

	kernel kernels.Kernel
	cubin  []byte
	ptx    string
	// cost is the candidate's predicted time in its family's cost model
	// (kernels.PredictedCost), where hasCost; the exploration takes such a
	// family's candidates cheapest first.
	cost    float64
	hasCost bool
}

// Result is a finished tuning run.
type Result struct {
	Problem problem.Problem
	Device  gpu.Info
	NVRTC   string
	Trials  []Trial // every candidate, in enumeration order
	Winner  *Trial
	Kernel  kernels.Kernel // the winner's launch geometry
	Arch    string         // the winner's CUBIN architecture, e.g. "sm_90" or "sm_90a"
	CUBIN   []byte
	PTX     string
	TieNote string // how a near-tie was broken, if there was one
	// Fallback is the kernel for GPUs other than Arch's, nil when none
	// qualified; FallbackNote then says why.
	Fallback     *Fallback
	FallbackNote string
	// Phases is where the run's wall time went.
	Phases Phases
}

// Phases splits a tuning run's wall time: Setup starts the worker and
// compiles the checking kernels, Enumerate lists and statically checks the
// configurations, Compile is the time the search waited for NVRTC (compiles
// run in parallel with measurements, so this is the wait, not the CPU
// time), Measure the time in the worker checking and timing candidates
// (re-timing the finalists and the fallback included).
type Phases struct {
	Setup, Enumerate, Compile, Measure time.Duration
}

// Fallback is a portable kernel: a verified candidate that is specific to
// no architecture, as PTX for FallbackArch.
type Fallback struct {
	Trial  *Trial         // its check and timing on the tuning device, through its PTX
	Kernel kernels.Kernel // its name and launch geometry
	Arch   string         // FallbackArch
	PTX    string
}

// FallbackArch is the virtual architecture of a fallback's PTX: compute_80
// code runs on every GPU from Ampere (sm_80) on, and the tensor-core
// families need sm_80 anyway.
const FallbackArch = "compute_80"

// FallbackSharedLimit is the most shared memory per block (dynamic and
// static) a fallback may use: the opt-in maximum of sm_86, sm_89 and
// sm_120 (99 KiB), the smallest among the GPUs compute_80 PTX runs on.
const FallbackSharedLimit = 99 * 1024

// Tune runs the search. It fails only when nothing could be measured at all
// (no worker, no GPU); individual candidates' failures are recorded.
func Tune(ctx context.Context, lib *nvrtc.Library, opt Options) (*Result, error) {
	opt = withDefaults(opt)
	prog := newProgress(opt.Progress)
	began := time.Now()
	dir, err := os.MkdirTemp("", "convgen-tune-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)

	m, err := newMeasurer(opt, dir)
	if err != nil {
		return nil, err
	}
	defer m.close()
	info := m.info
	arch := info.Arch
	if !lib.SupportsArch(arch) {
		return nil, fmt.Errorf("NVRTC %s cannot target the device's %s", lib.VersionString(), arch)
	}
	// The checking kernels.
	refK, err := kernels.Reference(opt.Problem)
	if err != nil {
		return nil, err
	}
	refBin, err := lib.Compile(refK.Source, nvrtc.Options{Name: "reference.cu", Arch: arch})
	if err != nil {
		return nil, fmt.Errorf("compile checking kernels: %w", err)
	}
	supportPath := filepath.Join(dir, "support.cubin")
	if err := os.WriteFile(supportPath, refBin.CUBIN, 0o644); err != nil {
		return nil, fmt.Errorf("write checking kernels: %w", err)
	}
	if err := m.init(supportPath); err != nil {
		return nil, err
	}

	enumStart := time.Now()
	lim := Limits(info, lib.VersionString())
	cands, err := kernels.Enumerate(opt.Problem, lim)
	if err != nil {
		return nil, err
	}
	res := &Result{Problem: opt.Problem, Device: info, NVRTC: lib.VersionString()}
	res.Phases.Setup, res.Phases.Enumerate = enumStart.Sub(began), time.Since(enumStart)
	trials := make([]Trial, len(cands))
	var kept []int
	for i, c := range cands {
		trials[i] = Trial{ID: c.ID(), Family: c.Family, Config: c.Config, Status: StatusSkipped}
		trials[i].cost, trials[i].hasCost = kernels.PredictedCost(opt.Problem, c, lim)
		if rejected(opt.Only, c) {
			trials[i].Status, trials[i].Reason = StatusRejected, c.Rejected
			continue
		}
		if !pinned(opt.Only, c.ID()) {
			trials[i].Reason = notPinned
			continue
		}
		kept = append(kept, i)
	}
	for _, k := range opt.Extra {
		trials = append(trials, Trial{ID: k.Family + "/" + k.Name, Family: k.Family, Config: k.Config, Status: StatusSkipped, kernel: k})
		kept = append(kept, len(trials)-1)
	}
	if err := checkPins(opt.Only, cands, opt.Problem); err != nil {
		return nil, err
	}

	s := &search{opt: opt, lib: lib, arch: arch, trials: trials, m: m, prog: prog, deadline: deadline(opt.Time)}
	if !s.deadline.IsZero() {
		grace := max(opt.Time, GraceMin)
		if opt.grace > 0 {
			grace = opt.grace
		}
		s.hardDeadline = s.deadline.Add(grace)
	}
	prog.start(len(cands), len(kept), opt.Trials, s.deadline)
	s.run(ctx, kept)
	prog.done()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("tuning interrupted after %d candidates: %w", s.measured, err)
	}
	err = s.pick(res)
	res.Trials = trials
	res.Phases.Compile, res.Phases.Measure = s.compileWait, s.measureTime
	return res, err
}

// notPinned is the reason a kept candidate left out by pins carries.
const notPinned = "not pinned"

// pinned reports whether candidate id is to be tried under pins: every
// candidate when there are none.
func pinned(pins []string, id string) bool {
	return len(pins) == 0 || slices.Contains(pins, id)
}

// rejected reports whether the static rules keep candidate c out of a
// search under pins: a hard rejection always does; a soft one (a pruning
// rule: waste, occupancy, a variant measured slower) does unless c is
// pinned, since a pin asks for that candidate by name.
func rejected(pins []string, c kernels.Candidate) bool {
	if c.Rejected == "" {
		return false
	}
	return !c.Rejection.Soft || !slices.Contains(pins, c.ID())
}

// checkPins returns an error naming every pinned ID that is not a candidate
// of p's space, or that a hard static rule rejects (with the reason), so
// that a mistyped pin is never dropped silently.
func checkPins(pins []string, cands []kernels.Candidate, p problem.Problem) error {
	byID := make(map[string]kernels.Candidate, len(cands))
	for _, c := range cands {
		byID[c.ID()] = c
	}
	var bad []string
	for _, pin := range pins {
		c, ok := byID[pin]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%q is no candidate (an ID is family/knobs, every knob, sorted by name, as in the report)", pin))
		case rejected(pins, c):
			bad = append(bad, fmt.Sprintf("%q is rejected: %s", pin, c.Rejected))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("pinned configs of %s: %s: %w", p, strings.Join(bad, "; "), ErrBadPin)
	}
	return nil
}

// ErrBudget is wrapped by the error of a search whose time budget, with its
// grace, ran out before any candidate passed.
var ErrBudget = errors.New("the time budget ran out before any candidate passed")

// GraceMin is the least grace a search with nothing verified gets past its
// time budget: it goes on for as long again as the budget, at least
// GraceMin, before it gives up.
const GraceMin = time.Minute

// ErrBadPin is wrapped by the error of a Tune or CompileOnly whose pins name
// no candidate of the problem's space, or one a hard static rule rejects.
var ErrBadPin = errors.New("bad pin")

// Limits are the static limits candidates are checked against on a device
// with NVRTC of version nvrtc ("13.0"): sm_90a code (wgmma) is allowed on
// an sm_90 device with NVRTC 12 or newer.
func Limits(info gpu.Info, nvrtc string) kernels.Limits {
	lim := kernels.DefaultLimits(90)
	arch, err := launch.ParseArch(info.Arch)
	if err == nil {
		lim.Arch = arch.CC
	}
	if info.SharedOptin > 0 {
		lim.MaxSharedPerBlock = info.SharedOptin
	}
	if info.SMs > 0 && info.SMs != lim.SMs {
		lim.SMs, lim.ClusterSMs = info.SMs, 0 // how this GPU's SMs group is unknown
	}
	major, _, _ := strings.Cut(nvrtc, ".")
	if m, err := strconv.Atoi(major); err == nil && m >= 12 && arch == launch.SM(90) {
		lim.SM90a = true
	}
	return lim
}

func withDefaults(o Options) Options {
	if o.Jobs <= 0 {
		o.Jobs = runtime.NumCPU()
	}
	if o.Warmup <= 0 {
		o.Warmup = 3
	}
	if o.Runs <= 0 { // the command line asks for at least 20; tests run fewer
		o.Runs = 30
	}
	if o.Retime <= 0 {
		o.Retime = 3
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	if o.CompileTimeout <= 0 {
		o.CompileTimeout = DefaultCompileTimeout
	}
	return o
}

// DefaultCompileTimeout is Options.CompileTimeout's default: the flagship's
// slowest candidates compile in about 10 s; some configurations send ptxas
// into minutes.
const DefaultCompileTimeout = 3 * time.Minute

func deadline(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// search holds the state of one run.
type search struct {
	opt      Options
	lib      *nvrtc.Library
	arch     string
	trials   []Trial
	m        *measurer
	prog     *progress
	deadline time.Time
	// hardDeadline ends a search with nothing verified: the budget and as
	// long again (at least GraceMin); zero without a time budget.
	hardDeadline time.Time
	measured     int
	// compileWait and measureTime add up the time spent waiting for
	// compiles and measuring (Phases).
	compileWait, measureTime time.Duration
}

// outOfBudget says whether the trial count or the time budget is spent.
// Neither ends a search before some candidate has passed: until then it
// goes on (each compile still bounded by -compile-timeout), so that a
// budget too short for the first compiles does not end it empty-handed,
// but only up to the hard deadline (the budget and as long again, at least
// GraceMin).
func (s *search) outOfBudget() bool {
	if s.bestIndex() < 0 {
		return !s.hardDeadline.IsZero() && time.Now().After(s.hardDeadline)
	}
	if s.opt.Trials > 0 && s.measured >= s.opt.Trials {
		return true
	}
	return !s.deadline.IsZero() && time.Now().After(s.deadline)
}

// run measures candidates: all of them when they fit the budget, otherwise
// an exploration (explorationOrder: cheapest first in a family with a cost
// model, a random sample in the others) followed by local refinement
// around the best.
func (s *search) run(ctx context.Context, kept []int) {
	if first := s.firstOf(kept); len(first) > 0 {
		s.batch(ctx, first)
		kept = slices.DeleteFunc(slices.Clone(kept), func(i int) bool { return slices.Contains(first, i) })
		if s.outOfBudget() || ctx.Err() != nil {
			return
		}
	}
	rng := rand.New(rand.NewPCG(s.opt.Seed, 1))
	if s.opt.Trials <= 0 || len(kept) <= s.opt.Trials {
		// Every candidate, families taken in turn (each cheapest first
		// where it has a cost model, else in enumeration order): when the
		// time budget ends the sweep early, each family
		// has had its share (in enumeration order, a family listed late,
		// such as wgmmarow for the flagship's TF32 NCHW, was never reached
		// in 95 s).
		s.batch(ctx, explorationOrder(kept, s.trials, nil))
		return
	}
	order := explorationOrder(kept, s.trials, rng)
	explore := max(1, s.opt.Trials*3/5)
	s.batch(ctx, order[:explore])
	// Local refinement: neighbours of the best (one knob changed), best first.
	for !s.outOfBudget() && ctx.Err() == nil {
		var next []int
		if best := s.bestIndex(); best >= 0 {
			for _, i := range kept {
				if s.trials[i].Status == StatusSkipped && neighbourTrials(s.trials[best], s.trials[i]) {
					next = append(next, i)
				}
			}
		}
		if len(next) == 0 { // no winner yet, or its neighbourhood is done: sample on
			rest := s.unvisited(order)
			if len(rest) == 0 {
				return
			}
			next = rest[:min(len(rest), s.opt.Jobs)]
		}
		s.batch(ctx, next)
	}
}

// firstOf returns the kept candidates that Options.First names, in its
// order.
func (s *search) firstOf(kept []int) []int {
	var out []int
	for _, id := range s.opt.First {
		for _, i := range kept {
			if s.trials[i].ID == id && !slices.Contains(out, i) {
				out = append(out, i)
			}
		}
	}
	return out
}

// explorationOrder is the order in which a search explores the kept
// candidates: each family's candidates cheapest first where the family has
// a cost model (every one of them has a cost), otherwise shuffled (kept in
// enumeration order when rng is nil), then taken from the families in turn
// (a family's variants, exploreGroup, count as families), so that every
// family gets the same share of the exploration whatever the size of its
// space (a large space, such as generic's, would otherwise take most of
// the samples from small ones that may be faster).
func explorationOrder(kept []int, trials []Trial, rng *rand.Rand) []int {
	byFamily := map[string][]int{}
	var families []string
	for _, i := range kept {
		f := exploreGroup(trials[i])
		if _, ok := byFamily[f]; !ok {
			families = append(families, f)
		}
		byFamily[f] = append(byFamily[f], i)
	}
	for _, f := range families {
		idx := byFamily[f]
		if !slices.ContainsFunc(idx, func(i int) bool { return !trials[i].hasCost }) {
			// Cheapest first; equal costs in enumeration order.
			slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(trials[a].cost, trials[b].cost) })
			continue
		}
		if rng != nil {
			rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		}
	}
	order := make([]int, 0, len(kept))
	for len(order) < len(kept) {
		for _, f := range families {
			if idx := byFamily[f]; len(idx) > 0 {
				order = append(order, idx[0])
				byFamily[f] = idx[1:]
			}
		}
	}
	return order
}

// variantKnobs are the knobs that select a different kernel design within a
// family (wgradmma's and dgradmma's Stage, igemm's Fold, wgmmaigemm's
// FlipFilter): each value is its
// own group in the exploration's rotation, so that a small variant (the
// 18 configurations of wgradmma's Stage=3 among its 300) is sampled as
// often as a large one.
var variantKnobs = []string{"Stage", "Fold", "Relayout", "Planes", "FlipFilter"}

// exploreGroup is t's group in the exploration's rotation: its family and
// the values of its variant knobs.
func exploreGroup(t Trial) string {
	g := t.Family
	for _, k := range variantKnobs {
		if v, ok := t.Config[k]; ok {
			g += fmt.Sprintf("/%s=%d", k, v)
		}
	}
	return g
}

func (s *search) unvisited(order []int) []int {
	var out []int
	for _, i := range order {
		if s.trials[i].Status == StatusSkipped {
			out = append(out, i)
		}
	}
	return out
}

// neighbourTrials says whether two candidates are neighbours: of one
// family, their configs one knob apart. (Families share knob names: a
// wgmma fp16 config is wgmmahalf's knobs and two more.)
func neighbourTrials(a, b Trial) bool {
	return a.Family == b.Family && neighbours(a.Config, b.Config)
}

// neighbours says whether two configs of one family differ in one knob.
// An optional knob at its zero value is absent from a config (ARegs,
// SplitK, Fold): absent counts as 0, so that a config and its twin with
// such a knob set are neighbours too.
func neighbours(a, b kernels.Config) bool {
	diff := 0
	for k, v := range a {
		if b[k] != v {
			diff++
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok && v != 0 {
			diff++
		}
	}
	return diff == 1
}

func (s *search) bestIndex() int {
	best := -1
	for i, t := range s.trials {
		if t.Status == StatusOK && (best < 0 || t.MedianMS < s.trials[best].MedianMS) {
			best = i
		}
	}
	return best
}

// cutoffFactor times the best median so far is the time over which a
// candidate's timed runs stop after cutoffRuns of them.
const (
	cutoffFactor = 2.0
	cutoffRuns   = 3
)

// compilePatience is how long batch waits for the next candidate in order
// before it measures later ones whose compiles are done.
const compilePatience = 3 * time.Second

// batch compiles the given candidates concurrently and measures them in
// the given order (each family gets its turns), each as soon as it is
// compiled, except that a compile still running after compilePatience
// (such as a heavily unrolled kernel's 25 s) no longer holds back the
// candidates behind it whose compiles are done: those are measured in
// order meanwhile. It stops when the budget runs out; the budget also
// bounds the wait for compiles.
func (s *search) batch(ctx context.Context, idx []int) {
	type compiled struct {
		out compileOutput
		err error
	}
	// Each compile stores its result and then reports its position on done,
	// buffered for all of them, so that compiles outliving the batch (when
	// the budget runs out) block nothing.
	results := make([]compiled, len(idx))
	done := make(chan int, len(idx))
	sem := make(chan struct{}, s.opt.Jobs)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for n, i := range idx {
		go func(n, i int) {
			select {
			case sem <- struct{}{}:
			case <-cctx.Done():
				results[n] = compiled{err: cctx.Err()}
				done <- n
				return
			}
			defer func() { <-sem }()
			if cctx.Err() != nil {
				results[n] = compiled{err: cctx.Err()}
				done <- n
				return
			}
			out, err := s.compile(i)
			results[n] = compiled{out, err}
			done <- n
		}(n, i)
	}
	var budget <-chan time.Time
	if !s.deadline.IsZero() {
		timer := time.NewTimer(time.Until(s.deadline))
		defer timer.Stop()
		budget = timer.C
	}
	var hardC <-chan time.Time // the hard deadline of a search with nothing verified
	if !s.hardDeadline.IsZero() {
		hard := time.NewTimer(time.Until(s.hardDeadline))
		defer hard.Stop()
		hardC = hard.C
	}
	patienceFor := compilePatience
	if s.opt.patience > 0 {
		patienceFor = s.opt.patience
	}
	ready := make([]bool, len(idx))        // compiled (or failed)
	handled := make([]bool, len(idx))      // measured or recorded
	overdue := -1                          // the position whose compile outlasted the patience
	waitHead, waitSince := -1, time.Time{} // the head waited for, and since when
	for left := len(idx); left > 0; {
		// The budget's timer fires once: where it fired before anything had
		// passed, the budget is checked here before each further wait.
		if s.outOfBudget() || ctx.Err() != nil {
			return // the rest stay unmeasured (the deferred cancel stops their compiles)
		}
		head := slices.Index(handled, false)
		next := -1
		switch {
		case ready[head]:
			next = head
		case overdue == head:
			for n := head + 1; n < len(idx); n++ {
				if ready[n] && !handled[n] {
					next = n
					break
				}
			}
		}
		if next < 0 {
			var patience <-chan time.Time
			if overdue != head {
				// The patience runs from when the head was first waited for,
				// not from the last compile that finished meanwhile.
				if waitHead != head {
					waitHead, waitSince = head, time.Now()
				}
				patience = time.After(time.Until(waitSince.Add(patienceFor)))
			}
			stopped := false
			waitStart := time.Now()
			select {
			case n := <-done:
				ready[n] = true
			case <-patience:
				overdue = head
			case <-budget:
				if s.bestIndex() >= 0 {
					stopped = true
					break
				}
				// Nothing has passed yet: the budget waits for the next compile,
				// up to the hard deadline.
				select {
				case n := <-done:
					ready[n] = true
				case <-hardC:
					stopped = true
				case <-ctx.Done():
					stopped = true
				}
			case <-hardC:
				stopped = true
			case <-ctx.Done():
				stopped = true
			}
			s.compileWait += time.Since(waitStart)
			if stopped {
				return
			}
			continue
		}
		handled[next], left = true, left-1
		r, t := results[next], &s.trials[idx[next]]
		if r.err != nil {
			if errors.Is(r.err, context.Canceled) {
				continue
			}
			t.Status, t.Reason = StatusCompile, r.err.Error()
		} else {
			r.out.apply(t)
			s.measure(t)
		}
		s.measured++
		s.prog.trial(t, s.bestTrial())
	}
}

func (s *search) bestTrial() *Trial {
	if i := s.bestIndex(); i >= 0 {
		return &s.trials[i]
	}
	return nil
}

// compileOutput is what compiling one candidate gives.
type compileOutput struct {
	kernel kernels.Kernel
	res    *nvrtc.Result
}

// apply records a compiled kernel and its resources in its trial.
func (c compileOutput) apply(t *Trial) {
	k, out := c.kernel, c.res
	t.kernel, t.cubin, t.ptx = k, out.CUBIN, out.PTX
	t.Threads = k.Block[0] * k.Block[1] * k.Block[2]
	t.Warnings = strings.TrimSpace(out.Log)
	if r, ok := out.Resources[k.Name]; ok {
		t.Registers, t.SpillStores, t.SpillLoads, t.StackBytes = r.Registers, r.SpillStores, r.SpillLoads, r.StackBytes
		t.SharedBytes = k.SharedBytes + r.SharedBytes
	}
}

// compile renders and compiles trial i (touching no trial: the caller
// applies the output). It gives up after Options.CompileTimeout, leaving
// NVRTC to finish in the background.
func (s *search) compile(i int) (compileOutput, error) {
	t := &s.trials[i]
	k := t.kernel
	if k.Source == "" {
		var err error
		if k, err = kernels.RenderCandidate(s.opt.Problem, kernels.Candidate{Family: t.Family, Config: t.Config}); err != nil {
			return compileOutput{}, fmt.Errorf("render: %w", err)
		}
	}
	compiler := s.opt.compiler
	if compiler == nil {
		compiler = s.lib.Compile
	}
	type result struct {
		res *nvrtc.Result
		err error
	}
	done := make(chan result, 1) // buffered: a compile given up on still finishes
	go func() {
		res, err := compiler(k.Source, nvrtc.Options{Name: k.Family + ".cu", Arch: s.arch + k.ArchSuffix})
		done <- result{res, err}
	}()
	timer := time.NewTimer(s.opt.CompileTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return compileOutput{}, r.err
		}
		return compileOutput{k, r.res}, nil
	case <-timer.C:
		return compileOutput{}, fmt.Errorf("NVRTC had not finished after %s (-compile-timeout); left to finish in the background", s.opt.CompileTimeout)
	}
}

// measure checks and times one compiled trial in the worker.
func (s *search) measure(t *Trial) {
	s.m.seq++
	start := time.Now()
	// A candidate whose first runs are all over twice the best median so
	// far stops being timed early: it cannot win, and slow candidates
	// (FFMA kernels of a tensor-core problem, milliseconds a run) would
	// otherwise spend the budget.
	// With a time budget, runs slower than a share of it stop likewise
	// even before anything has passed (budgetCutoffMS).
	cutoff := s.budgetCutoffMS()
	if best := s.bestTrial(); best != nil && best.MedianMS > 0 {
		if c := cutoffFactor * best.MedianMS; cutoff == 0 || c < cutoff {
			cutoff = c
		}
	}
	r, err := s.m.measure(t, s.opt, uint32(s.opt.Seed)+uint32(s.m.seq)*0x9e3779b9, s.opt.Runs, cutoff)
	s.measureTime += time.Since(start)
	if err != nil {
		switch {
		case errors.Is(err, errWorkerTimeout):
			t.Status = StatusTimeout
		default:
			t.Status = StatusFault
		}
		t.Reason = err.Error()
		return
	}
	s.apply(t, r)
}

// budgetCutoffMS is the run time (ms) over which a candidate's timed runs
// stop after cutoffRuns of them whatever the best so far: a 1/(8·Runs)
// share of the time budget, so that a slow candidate measured before any
// fast one (no best yet to compare with) cannot spend the budget on its
// runs (on ResNet-50's s4-down at N=256 in fp32 a 233 ms `direct` kernel,
// measured first, took 60 runs and the whole 8 s budget). 0 without a
// time budget.
func (s *search) budgetCutoffMS() float64 {
	if s.opt.Time <= 0 || s.opt.Runs <= 0 {
		return 0
	}
	return float64(s.opt.Time) / float64(time.Millisecond) / float64(8*s.opt.Runs)
}

func (s *search) apply(t *Trial, r response) {
	t.Status, t.Reason = r.Status, r.Error
	if r.Registers > 0 {
		t.Registers = r.Registers
	}
	t.MaxClusters = r.MaxClusters
	t.RelError, t.SampleError = r.RelError, r.SampleError
	if r.Status == StatusOK {
		sorted := sortedFloats(r.TimesMS)
		t.MedianMS, t.P10MS, t.P90MS, t.Runs = quantile(sorted, 0.5), quantile(sorted, 0.1), quantile(sorted, 0.9), len(sorted)
	}
}

// pick re-times the best few with fresh inputs and chooses the winner;
// medians within 1% are a near-tie, broken by the smaller candidate ID.
func (s *search) pick(res *Result) error {
	var ok []*Trial
	for i := range s.trials {
		if s.trials[i].Status == StatusOK {
			ok = append(ok, &s.trials[i])
		}
	}
	if len(ok) == 0 {
		if !s.hardDeadline.IsZero() && time.Now().After(s.hardDeadline) {
			return fmt.Errorf("%w (-time %s and as long again; %s): raise -time", ErrBudget, s.opt.Time, summarize(s.trials))
		}
		return fmt.Errorf("no candidate passed verification (%s)", summarize(s.trials))
	}
	slices.SortStableFunc(ok, func(a, b *Trial) int { return cmp.Compare(a.MedianMS, b.MedianMS) })
	top := ok[:min(len(ok), s.opt.Retime)]
	// Not a finalist: a candidate whose timing the cutoff ended (fewer runs
	// than asked: it was over twice the best, and cannot win), unless
	// every one was cut (each slower than the budget's share a run: they
	// are all there is).
	if full := slices.DeleteFunc(slices.Clone(top), func(t *Trial) bool { return t.Runs < s.opt.Runs && t.Runs <= cutoffRuns }); len(full) > 0 {
		top = full
	}
	var alive []*Trial
	for _, t := range top {
		s.measure2(t)
		if t.Status == StatusOK {
			alive = append(alive, t)
		}
	}
	if len(alive) == 0 {
		return fmt.Errorf("every finalist failed when timed again: %s", top[0].Reason)
	}
	slices.SortStableFunc(alive, func(a, b *Trial) int { return cmp.Compare(a.MedianMS, b.MedianMS) })
	win := alive[0]
	for _, t := range alive[1:] {
		if t.MedianMS <= alive[0].MedianMS*1.01 && t.ID < win.ID {
			res.TieNote = fmt.Sprintf("near-tie within 1%% between %s (%.4f ms) and %s (%.4f ms): chose the smaller ID", alive[0].ID, alive[0].MedianMS, t.ID, t.MedianMS)
			win = t
		}
	}
	res.Winner = win
	res.Kernel, res.CUBIN, res.PTX = win.kernel, win.cubin, win.ptx
	res.Arch = s.arch + win.kernel.ArchSuffix
	res.Fallback, res.FallbackNote = s.fallback()
	return nil
}

// fallback picks the fastest verified candidate that is specific to no
// architecture, fits FallbackSharedLimit and compiles for FallbackArch (equal
// medians broken by the smaller ID; a candidate that needs a newer
// architecture, such as wgradmma's clusters, is passed over for the next),
// and checks and times that PTX (compiled by the driver) like any
// candidate; without a fallback it says why, on one line.
func (s *search) fallback() (*Fallback, string) {
	var cands []*Trial
	for i := range s.trials {
		t := &s.trials[i]
		if t.Status == StatusOK && t.kernel.ArchSuffix == "" && t.SharedBytes <= FallbackSharedLimit {
			cands = append(cands, t)
		}
	}
	if len(cands) == 0 {
		return nil, fmt.Sprintf("no verified candidate is specific to no architecture and fits %d B of shared memory", FallbackSharedLimit)
	}
	slices.SortFunc(cands, func(a, b *Trial) int {
		if c := cmp.Compare(a.MedianMS, b.MedianMS); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	sm := launch.MustParseArch(FallbackArch).Real().String() // a constant
	var firstErr string
	for _, best := range cands {
		compileStart := time.Now()
		out, err := s.lib.CompilePTX(best.kernel.Source, nvrtc.Options{Name: best.kernel.Family + ".cu", Arch: sm})
		s.compileWait += time.Since(compileStart)
		if err != nil {
			if firstErr == "" {
				firstErr = fmt.Sprintf("%s does not compile for %s: %s", best.ID, FallbackArch, oneLine(err.Error()))
			}
			continue
		}
		probe := *best // the same kernel, loaded from its PTX
		probe.cubin, probe.ptx = []byte(out.PTX), out.PTX
		if err := s.remeasure(&probe, 0x5bd1e995, s.opt.Runs, 0); err != nil {
			return nil, oneLine(fmt.Sprintf("%s as PTX for %s: %v", best.ID, FallbackArch, err))
		}
		if probe.Status != StatusOK {
			return nil, oneLine(fmt.Sprintf("%s as PTX for %s: %s: %s", best.ID, FallbackArch, probe.Status, probe.Reason))
		}
		return &Fallback{Trial: &probe, Kernel: best.kernel, Arch: FallbackArch, PTX: out.PTX}, ""
	}
	return nil, firstErr + " (nor does any other verified candidate)"
}

// oneLine is msg on one line (white space runs, newlines included, as one
// space), clipped to 2000 bytes: what a tuning record's note may hold.
func oneLine(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 2000 {
		msg = msg[:2000] + "…"
	}
	return msg
}

// measure2 times a finalist again with more runs and fresh inputs.
func (s *search) measure2(t *Trial) {
	if err := s.remeasure(t, 0xa5a5a5a5, 2*s.opt.Runs, s.budgetCutoffMS()); err != nil {
		t.Status, t.Reason = StatusFault, "re-time: "+err.Error()
	}
}

// remeasure checks and times t once more, over runs timed launches, on
// inputs seeded afresh (the seed mixed with salt and a sequence number that
// no other measurement of this search uses), and records the outcome in t;
// an error means the worker gave no outcome and t is unchanged. A positive
// cutoffMS ends the runs early as in measure.
func (s *search) remeasure(t *Trial, salt uint32, runs int, cutoffMS float64) error {
	s.m.seq++
	start := time.Now()
	r, err := s.m.measure(t, s.opt, uint32(s.opt.Seed)^salt+uint32(s.m.seq), runs, cutoffMS)
	s.measureTime += time.Since(start)
	if err != nil {
		return err
	}
	s.apply(t, r)
	return nil
}

func summarize(trials []Trial) string {
	counts := map[Status]int{}
	for _, t := range trials {
		counts[t.Status]++
	}
	var parts []string
	for _, st := range []Status{StatusRejected, StatusCompile, StatusLoad, StatusLaunch, StatusFault, StatusTimeout, StatusWrong, StatusSkipped} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	return fmt.Sprint(parts)
}

func sortedFloats(xs []float64) []float64 {
	c := slices.Clone(xs)
	slices.Sort(c)
	return c
}

// quantile of sorted xs by linear interpolation.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[lo]
	}
	return sorted[lo] + (pos-float64(lo))*(sorted[lo+1]-sorted[lo])
}
