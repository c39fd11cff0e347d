package kernels

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// FullSweepEnv, set to 1 (scripts/test -full does), makes the compile tests
// NVRTC-compile every kept configuration instead of a covering sample. Run
// the full sweep before landing a change to a template or to a family's
// knobs, geometry or static checks: the sample only guarantees that every
// value of every knob compiles in some configuration of every precision,
// not that every combination does.
const FullSweepEnv = "CONVGEN_FULL_SWEEP"

// fullSweep reports whether the full compile sweep was asked for.
func fullSweep() bool { return os.Getenv(FullSweepEnv) == "1" }

// problemCandidate is a candidate with the problem it was enumerated for.
type problemCandidate struct {
	p problem.Problem
	c Candidate
}

// knobValue is one value of one knob of one family.
type knobValue struct {
	family, knob string
	value        string
}

// knobValues parses a candidate's ID ("family/Knob=V,...") into its knob
// values. The ID is the candidate's stable, printed form, so the sample
// does not depend on how a family stores its configuration.
func knobValues(c Candidate) ([]knobValue, error) {
	id := c.ID()
	family, knobs, ok := strings.Cut(id, "/")
	if !ok || family == "" {
		return nil, fmt.Errorf("candidate ID %q: want family/Knob=V,...", id)
	}
	if knobs == "" {
		return nil, nil
	}
	var out []knobValue
	for _, kv := range strings.Split(knobs, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("candidate ID %q: knob %q is not Knob=V", id, kv)
		}
		out = append(out, knobValue{family, k, v})
	}
	return out, nil
}

// greedyCover returns the indexes, ascending, of a subset of sets whose
// union is the union of all sets (whose items are distinct within each
// set): a greedy set cover, which repeatedly takes the set with the most
// items not yet covered, the earliest on ties. It is deterministic: it
// depends only on sets and their order.
func greedyCover(sets [][]string) []int {
	uncovered := map[string]bool{}
	for _, s := range sets {
		for _, item := range s {
			uncovered[item] = true
		}
	}
	taken := make([]bool, len(sets))
	for len(uncovered) > 0 {
		best, bestN := -1, 0
		for i, s := range sets {
			if taken[i] {
				continue
			}
			n := 0
			for _, item := range s {
				if uncovered[item] {
					n++
				}
			}
			if n > bestN {
				best, bestN = i, n
			}
		}
		taken[best] = true
		for _, item := range sets[best] {
			delete(uncovered, item)
		}
	}
	var out []int
	for i, t := range taken {
		if t {
			out = append(out, i)
		}
	}
	return out
}

// coverItems is what a candidate of problem p contributes to a covering
// sample: its family, its family with p's precision and layout, and each of
// its knob values, alone and with p's precision.
func coverItems(pc problemCandidate) ([]string, error) {
	kvs, err := knobValues(pc.c)
	if err != nil {
		return nil, err
	}
	prec := string(pc.p.Precision)
	items := []string{"family " + pc.c.Family, pc.c.Family + " problem " + prec + " " + string(pc.p.Layout)}
	for _, kv := range kvs {
		v := kv.family + " " + kv.knob + "=" + kv.value
		items = append(items, v, prec+" "+v)
	}
	return items, nil
}

// coverSample returns a deterministic subset of cands, in their order, in
// which every family appears with every problem, and every value that any
// candidate gives to any knob of its family appears, in every precision it
// has a candidate of, at least once (greedyCover over coverItems), along
// with the items that extra (if not nil) returns for a candidate. A
// candidate with a malformed ID is an error.
func coverSample(cands []problemCandidate, extra func(problemCandidate) []string) ([]problemCandidate, error) {
	sets := make([][]string, len(cands))
	for i, pc := range cands {
		items, err := coverItems(pc)
		if err != nil {
			return nil, err
		}
		if extra != nil {
			items = append(items, extra(pc)...)
		}
		sets[i] = items
	}
	var out []problemCandidate
	for _, i := range greedyCover(sets) {
		out = append(out, cands[i])
	}
	return out, nil
}

// compileSample returns the candidates of cands a compile test compiles:
// all of them under the full sweep (FullSweepEnv), else coverSample's
// sample. A new family's candidates are sampled like the others', with
// nothing to add here.
func compileSample(t testing.TB, cands []problemCandidate) []problemCandidate {
	t.Helper()
	if fullSweep() {
		return cands
	}
	sample, err := coverSample(cands, nil)
	if err != nil {
		t.Fatalf("covering sample: %v", err)
	}
	return sample
}

// goldenPrefix starts the ID of a golden kernel's compile job.
const goldenPrefix = "golden "

// appendGolden appends to jobs, in name order, the golden kernels
// (goldenKernels) that want accepts and whose source no job compiles yet.
func appendGolden(t *testing.T, jobs []compileJob, want func(Kernel) bool) []compileJob {
	t.Helper()
	have := map[string]bool{}
	for _, j := range jobs {
		have[j.kernel.Source] = true
	}
	golden := goldenKernels(t)
	for _, name := range slices.Sorted(maps.Keys(golden)) {
		k := golden[name]
		if want(k) && !have[k.Source] {
			have[k.Source] = true
			jobs = append(jobs, compileJob{goldenPrefix + name, k})
		}
	}
	return jobs
}

// TestCoverSample checks the covering sample on a small hand-made list and
// on the kept flagship configurations of every family (with and without
// sm_90a): everything coverItems names is covered, the sample keeps the
// input's order, is deterministic and much smaller than the input.
func TestCoverSample(t *testing.T) {
	fp32 := flagship(t, problem.FP32, problem.NCHW)
	fp16 := flagship(t, problem.FP16, problem.NCHW)
	cand := func(p problem.Problem, f string, kv ...int) problemCandidate {
		c := Candidate{Family: f, Config: Config{}}
		for i := 0; i < len(kv); i += 2 {
			c.Config[fmt.Sprintf("K%d", kv[i])] = kv[i+1]
		}
		return problemCandidate{p, c}
	}
	small := []problemCandidate{
		cand(fp32, "a", 1, 1, 2, 1), cand(fp32, "a", 1, 2, 2, 1), cand(fp32, "a", 1, 1, 2, 2), cand(fp32, "a", 1, 2, 2, 2),
		cand(fp32, "a", 1, 3, 2, 1), cand(fp16, "a", 1, 1, 2, 1), cand(fp16, "a", 1, 2, 2, 2), cand(fp32, "b", 1, 1),
		cand(fp32, "c"), cand(fp32, "c"),
	}
	got, err := coverSample(small, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, pc := range got {
		ids = append(ids, string(pc.p.Precision)+":"+pc.c.ID())
	}
	// a needs K1=1, 2 and K2=1, 2 in fp32 and in fp16, and K1=3 (in fp32):
	// three fp32 and two fp16 candidates; b's only candidate; c has no
	// knobs but is compiled once.
	want := "fp32:a/K1=1,K2=1 fp32:a/K1=2,K2=2 fp32:a/K1=3,K2=1 fp16:a/K1=1,K2=1 fp16:a/K1=2,K2=2 fp32:b/K1=1 fp32:c/"
	if s := strings.Join(ids, " "); s != want {
		t.Errorf("coverSample(small) =\n  %s\nwant\n  %s", s, want)
	}
	extra := func(pc problemCandidate) []string { return []string{fmt.Sprint("K1 is ", pc.c.Config["K1"] == 2)} }
	if got, err := coverSample(small[:4], extra); err != nil || len(got) != 2 {
		t.Errorf("coverSample(small[:4], extra) = %d candidates, %v; want 2", len(got), err)
	}
	if _, err := coverSample([]problemCandidate{{fp32, Candidate{Config: Config{"K": 1}}}}, nil); err == nil {
		t.Error("coverSample accepted a candidate without a family")
	}

	for _, sm90a := range []bool{false, true} {
		lim := DefaultLimits(90)
		lim.SM90a = sm90a
		var all []problemCandidate
		for _, s := range servedFlagship(t, lim) {
			for _, c := range kept(s.cands) {
				all = append(all, problemCandidate{s.prob, c})
			}
		}
		sample, err := coverSample(all, nil)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := coverSample(all, nil)
		checkCover(t, fmt.Sprintf("flagship SM90a=%v", sm90a), all, sample, again, nil)
	}
}

// checkCover checks that sample, a subset of cands in their order, has
// every item coverItems and extra (if not nil) give for cands, that again
// is the same sample, and that it is much smaller than cands.
func checkCover(t *testing.T, what string, cands, sample, again []problemCandidate, extra func(problemCandidate) []string) {
	t.Helper()
	items := func(pc problemCandidate) []string {
		it, err := coverItems(pc)
		if err != nil {
			t.Fatal(err)
		}
		if extra != nil {
			it = append(it, extra(pc)...)
		}
		return it
	}
	need := map[string]bool{}
	for _, pc := range cands {
		for _, item := range items(pc) {
			need[item] = true
		}
	}
	j := 0
	for i, pc := range sample {
		for j < len(cands) && (cands[j].c.ID() != pc.c.ID() || cands[j].p.String() != pc.p.String()) {
			j++
		}
		if j == len(cands) {
			t.Fatalf("%s: sample[%d] %s is not in the candidates, in order", what, i, pc.c.ID())
		}
		j++
		for _, item := range items(pc) {
			delete(need, item)
		}
		if i >= len(again) || again[i].c.ID() != pc.c.ID() || again[i].p.String() != pc.p.String() {
			t.Fatalf("%s: the sample is not deterministic at %d", what, i)
		}
	}
	if len(again) != len(sample) {
		t.Fatalf("%s: samples of %d and %d", what, len(sample), len(again))
	}
	for _, item := range slices.Sorted(maps.Keys(need)) {
		t.Errorf("%s: no sampled candidate has %s", what, item)
	}
	if len(sample) == 0 || 10*len(sample) > len(cands) {
		t.Errorf("%s: sample of %d of %d candidates: not much of a saving", what, len(sample), len(cands))
	}
	t.Logf("%s: %d of %d", what, len(sample), len(cands))
}

// TestFrontEndSample checks that the sm_90a front-end sample of wgmma over
// the flagship's problems has everything coverSample's has and every
// staging path and A operand of every problem, in far fewer kernels.
func TestFrontEndSample(t *testing.T) {
	lim := DefaultLimits(90)
	lim.SM90a = true
	var all []problemCandidate
	for _, prec := range problem.Precisions {
		for _, layout := range problem.Layouts {
			p := flagship(t, prec, layout)
			if (WGMMA{}).Serves(p) != nil {
				continue
			}
			for _, c := range kept(WGMMA{}.Space(p, lim)) {
				all = append(all, problemCandidate{p, c})
			}
		}
	}
	sample, again := frontEndSample(t, all), frontEndSample(t, all)
	checkCover(t, "wgmma", all, sample, again, func(pc problemCandidate) []string {
		return []string{fmt.Sprintf("%s/%s VecStage=%d RegisterA=%d", pc.p.Precision, pc.p.Layout, pc.c.Config["VecStage"], pc.c.Config["RegisterA"])}
	})
}
