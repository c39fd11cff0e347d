//go:build cuda

package autotune

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/tunecache"
)

// sanitizeShapes are the odd shapes TestSanitize runs every serving family
// on: partial tiles at every edge, unequal strides, pads and dilations, no
// bias, odd and prime channel counts, groups and depthwise layers.
var sanitizeShapes = []string{
	"N=3,C=5,H=37,W=41,K=24,R=3,S=5,stride_h=2,stride_w=1,pad_h=1,pad_w=2,dilation_w=2,bias=false",
	"N=2,C=3,H=45,W=51,K=24,R=5,S=6,stride=4,pad_h=2,pad_w=1,bias=false",
	"N=3,C=3,H=47,W=48,K=40,R=5,S=7,stride_h=3,stride_w=4,pad_h=1,pad_w=2,dilation_h=2,bias=false",
	"N=2,C=3,H=61,W=67,K=24,R=11,S=11,stride=4,pad=2",
	"N=2,C=13,H=19,W=23,K=11,R=3,S=3,pad=1",
	"N=2,C=16,H=15,W=17,K=32,R=3,S=3,pad=1,groups=4,bias=false",
	"N=2,C=24,H=14,W=13,K=48,R=3,S=3,stride=2,pad=1,groups=24",
}

// TestSanitize runs candidates once each in workers started under
// compute-sanitizer ($CONVGEN_SANITIZER with $CONVGEN_SANITIZE_TOOL, logging
// to $CONVGEN_SANITIZE_LOG; scripts/sanitize sets them): the winners (and fallbacks) of the
// records in $CONVGEN_SANITIZE_CACHE, on their own shapes (with the batch
// $CONVGEN_SANITIZE_BATCH instead of theirs when set), and, unless
// $CONVGEN_SANITIZE_ODD is "0", the first kept configuration (two with
// $CONVGEN_SANITIZE_PINS=2) of every family
// that serves each of sanitizeShapes in every precision and layout.
// $CONVGEN_SANITIZE_MATCH, a regular expression, keeps only the candidates
// whose ID (family/knobs) it matches (records and shapes left with none
// are skipped). Each candidate is checked against the float64 reference
// and timed once; the sanitizer's findings are in its own log, which the
// script reads.
func TestSanitize(t *testing.T) {
	if os.Getenv("CONVGEN_SANITIZE") == "" {
		t.Skip("set CONVGEN_SANITIZE=1 (scripts/sanitize does, under compute-sanitizer)")
	}
	match := regexp.MustCompile("")
	if m := os.Getenv("CONVGEN_SANITIZE_MATCH"); m != "" {
		re, err := regexp.Compile(m)
		if err != nil {
			t.Fatalf("CONVGEN_SANITIZE_MATCH: %v", err)
		}
		match = re
	}
	lib, testWorker, lim := gpuSetup(t)
	// The workers, which run the kernels, run under the sanitizer: it
	// cannot follow a Go program's children itself (Go starts them with
	// raw system calls), and its log file keeps its report off the
	// workers' protocol pipes.
	worker := testWorker[:2:2] // env CONVGEN_TEST_WORKER=1
	if san := os.Getenv("CONVGEN_SANITIZER"); san != "" {
		tool, log := os.Getenv("CONVGEN_SANITIZE_TOOL"), os.Getenv("CONVGEN_SANITIZE_LOG")
		if tool == "" || log == "" {
			t.Fatal("CONVGEN_SANITIZER needs CONVGEN_SANITIZE_TOOL and CONVGEN_SANITIZE_LOG")
		}
		worker = append(worker, san, "--tool", tool, "--log-file", log)
		if tool == "racecheck" {
			worker = append(worker, "--racecheck-report", "all")
		}
	}
	worker = append(worker, testWorker[2:]...)
	run := func(t *testing.T, p problem.Problem, pins []string, extra []kernels.Kernel) {
		res, err := Tune(context.Background(), lib, Options{Problem: p,
			Worker: worker, Only: pins, Extra: extra,
			Trials: 0, Warmup: 1, Runs: 1, Retime: 1, Seed: 5, Jobs: 4, Timeout: 5 * time.Minute})
		if err != nil {
			t.Fatalf("tune: %v", err)
		}
		checkTrials(t, p, res.Trials)
		if res.Winner == nil {
			t.Fatal("no winner")
		}
		if res.Fallback != nil && res.Fallback.Trial.Status != StatusOK {
			t.Errorf("fallback %s: %s: %s", res.Fallback.Trial.ID, res.Fallback.Trial.Status, res.Fallback.Trial.Reason)
		}
	}
	if path := os.Getenv("CONVGEN_SANITIZE_CACHE"); path != "" {
		c, err := tunecache.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		batch, _ := strconv.Atoi(os.Getenv("CONVGEN_SANITIZE_BATCH"))
		for _, rec := range c.Records() {
			p, err := problemOf(rec.Key)
			if err != nil {
				t.Fatal(err)
			}
			var timings []tunecache.Timing
			for _, tm := range []*tunecache.Timing{&rec.Winner, fallbackTiming(rec)} {
				if tm != nil && match.MatchString(tm.Family+"/"+kernels.Config(tm.Config).String()) {
					timings = append(timings, *tm)
				}
			}
			if len(timings) == 0 {
				continue
			}
			if batch <= 0 {
				var pins []string
				for _, tm := range timings {
					pins = append(pins, tm.Family+"/"+kernels.Config(tm.Config).String())
				}
				t.Run("record/"+p.String(), func(t *testing.T) { run(t, p, pins, nil) })
				continue
			}
			// The same configurations on a smaller batch (racecheck and
			// initcheck are too slow for the whole flagship): rendered
			// here, since a knob derived from the shape (rows per block)
			// may name no candidate of the smaller problem's space.
			p.Shape.N = batch
			var extra []kernels.Kernel
			for _, tm := range timings {
				f, err := kernels.FamilyByName(tm.Family)
				if err != nil {
					t.Fatal(err)
				}
				k, err := f.Render(p, kernels.Config(tm.Config))
				if err != nil {
					t.Fatalf("render %s/%s for N=%d: %v", tm.Family, kernels.Config(tm.Config), batch, err)
				}
				extra = append(extra, k)
			}
			t.Run("record/"+p.String(), func(t *testing.T) { run(t, p, firstKept(t, p, lim), extra) })
		}
	}
	if os.Getenv("CONVGEN_SANITIZE_ODD") == "0" {
		return
	}
	perFamily := 1
	if os.Getenv("CONVGEN_SANITIZE_PINS") == "2" {
		perFamily = 2
	}
	eachProblem(t, sanitizeShapes, nil, func(p problem.Problem) {
		cands, err := kernels.Enumerate(p, lim)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return
		}
		// One run per problem: the first kept configurations of every
		// family serving it (one worker process each).
		var pins []string
		perFam := map[string]int{}
		for _, c := range cands {
			if c.Rejected == "" && perFam[c.Family] < perFamily && match.MatchString(c.ID()) {
				perFam[c.Family]++
				pins = append(pins, c.ID())
			}
		}
		if len(pins) == 0 {
			return // CONVGEN_SANITIZE_MATCH left none
		}
		t.Run(p.String(), func(t *testing.T) { run(t, p, pins, nil) })
	})
}

// fallbackTiming is rec's fallback's timing, nil without one.
func fallbackTiming(rec tunecache.Record) *tunecache.Timing {
	if rec.Fallback == nil {
		return nil
	}
	return &rec.Fallback.Timing
}

// firstKept pins the first configuration the static rules keep for p, so
// that a run with extra kernels does not search the whole space.
func firstKept(t *testing.T, p problem.Problem, lim kernels.Limits) []string {
	cands, err := kernels.Enumerate(p, lim)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		if c.Rejected == "" {
			return []string{c.ID()}
		}
	}
	t.Fatalf("%s: every candidate rejected", p)
	return nil
}

// problemOf reads a record's key back into a problem.
func problemOf(k tunecache.Key) (problem.Problem, error) {
	s, err := problem.ParseShape(k.Shape)
	if err != nil {
		return problem.Problem{}, err
	}
	prec, err := problem.ParsePrecision(k.Precision)
	if err != nil {
		return problem.Problem{}, err
	}
	lay, err := problem.ParseLayout(strings.ToLower(k.Layout))
	if err != nil {
		return problem.Problem{}, err
	}
	p := problem.Problem{Shape: s, Precision: prec, Layout: lay}
	if k.Op != "" { // a gradient's record
		if p.Op, err = problem.ParseOp(k.Op); err != nil {
			return problem.Problem{}, err
		}
	}
	return p, nil
}
