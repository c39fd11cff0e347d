package kernels

import (
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	ids := make([][]int32, len(sets))
	for i, s := range sets {
		ids[i] = internItems(s)
	}
	return greedyCoverIDs(ids, nil)
}

// greedyCoverIDs is greedyCover over interned items (internItems): the
// code-path samples have thousands of sets of hundreds of items. The items
// of covered (kernels compiled anyway, such as the golden ones) need no
// set.
func greedyCoverIDs(sets [][]int32, covered [][]int32) []int {
	var need []bool // by item: some set has it, and no set taken yet
	left := 0
	for _, s := range sets {
		for _, id := range s {
			if int(id) >= len(need) {
				need = append(need, make([]bool, int(id)+1-len(need))...)
			}
			if !need[id] {
				need[id] = true
				left++
			}
		}
	}
	for _, s := range covered {
		for _, id := range s {
			if int(id) < len(need) && need[id] {
				need[id] = false
				left--
			}
		}
	}
	taken := make([]bool, len(sets))
	for left > 0 {
		best, bestN := -1, 0
		for i, s := range sets {
			if taken[i] {
				continue
			}
			n := 0
			for _, id := range s {
				if need[id] {
					n++
				}
			}
			if n > bestN {
				best, bestN = i, n
			}
		}
		taken[best] = true
		for _, id := range sets[best] {
			if need[id] {
				need[id] = false
				left--
			}
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

// itemIDs numbers the covering samples' items, once per test binary.
var itemIDs = struct {
	sync.Mutex
	ids   map[string]int32
	names []string
}{ids: map[string]int32{}}

// internItems is items' numbers (itemIDs), in their order.
func internItems(items []string) []int32 {
	itemIDs.Lock()
	defer itemIDs.Unlock()
	out := make([]int32, len(items))
	for i, item := range items {
		id, ok := itemIDs.ids[item]
		if !ok {
			id = int32(len(itemIDs.names))
			itemIDs.ids[item] = id
			itemIDs.names = append(itemIDs.names, item)
		}
		out[i] = id
	}
	return out
}

// itemName is the item numbered id.
func itemName(id int32) string {
	itemIDs.Lock()
	defer itemIDs.Unlock()
	return itemIDs.names[id]
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

// pathItems is what a candidate of problem p contributes to a code-path
// sample: its family, its family with p's precision and with p's layout
// (problemItems), and its rendered kernel's kernelItems. A sample with
// every candidate's pathItems compiles every branch that any candidate's
// kernel takes, in some configuration, besides every knob value and every
// precision and every layout of every family; what it leaves to the full
// sweep is the same code with other constants, and the (precision,
// layout) pairs whose code differs only there (a pair whose code differs
// has a branch or a line of its own).
func pathItems(pc problemCandidate) ([]string, error) {
	kvs, err := knobValues(pc.c)
	if err != nil {
		return nil, err
	}
	k, err := RenderCandidate(pc.p, pc.c)
	if err != nil {
		return nil, fmt.Errorf("%s %s: render: %w", pc.p, pc.c.ID(), err)
	}
	f := pc.c.Family
	items := append([]string{"family " + f}, problemItems(f, pc.p)...)
	for _, kv := range kvs {
		items = append(items, f+" "+kv.knob+"="+kv.value)
	}
	var out []string
	seen := map[string]bool{}
	for _, item := range append(items, kernelItems(k)...) {
		if !seen[item] {
			seen[item] = true
			out = append(out, item)
		}
	}
	return out, nil
}

// problemItems is what a kernel of family f for p contributes to a
// code-path sample of p's problem: f with p's precision and f with p's
// layout (each of them in some kernel, not every pair).
func problemItems(f string, p problem.Problem) []string {
	return []string{f + " precision " + string(p.Precision), f + " layout " + string(p.Layout)}
}

// flagshipOf is the flagship problems (one per precision and layout) whose
// rendering of kernel k's configuration by its family is k: the problems
// a golden kernel compiled besides a sample stands for.
func flagshipOf(t testing.TB, k Kernel) []problem.Problem {
	t.Helper()
	var out []problem.Problem
	for _, prec := range problem.Precisions {
		for _, layout := range problem.Layouts {
			p := flagship(t, prec, layout)
			if r, err := RenderCandidate(p, Candidate{Family: k.Family, Config: k.Config}); err == nil && r.Source == k.Source {
				out = append(out, p)
			}
		}
	}
	return out
}

// compiledItemIDs is, for each of ks (kernels compiled besides a sample,
// such as the golden ones), the pathItems it covers, interned: its
// kernelItems and the problemItems of the flagship problems it stands for
// (flagshipOf), with extra's items (if extra is not nil) for each of those.
func compiledItemIDs(t testing.TB, ks []Kernel, extra func(problem.Problem, Kernel) []string) [][]int32 {
	t.Helper()
	var out [][]int32
	for _, k := range ks {
		items := kernelItems(k)
		for _, p := range flagshipOf(t, k) {
			items = append(items, problemItems(k.Family, p)...)
			if extra != nil {
				items = append(items, extra(p, k)...)
			}
		}
		out = append(out, internItems(items))
	}
	return out
}

// kernelItems is, for kernel k's family, each of its knob values (in any
// precision) and the code paths it compiles (codePaths: every preprocessor
// branch it takes and every line it keeps, constants blanked).
func kernelItems(k Kernel) []string {
	var items []string
	for _, knob := range slices.Sorted(maps.Keys(k.Config)) {
		items = append(items, fmt.Sprintf("%s %s=%d", k.Family, knob, k.Config[knob]))
	}
	for _, path := range codePaths(k.Source, k.Name) {
		items = append(items, k.Family+" "+path)
	}
	return items
}

// pathMemo holds pathItemIDs's results, by problem and candidate.
var pathMemo sync.Map // string → func() ([]int32, error)

// pathItemIDs is pathItems(pc), interned, computed once per test binary:
// the compile tests and the sampler's own tests sample the same
// candidates, and rendering thousands of them is most of a sample's time.
func pathItemIDs(pc problemCandidate) ([]int32, error) {
	key := pc.p.String() + "\x00" + pc.c.ID()
	f, _ := pathMemo.LoadOrStore(key, sync.OnceValues(func() ([]int32, error) {
		items, err := pathItems(pc)
		if err != nil {
			return nil, err
		}
		return internItems(items), nil
	}))
	return f.(func() ([]int32, error))()
}

// coverItemIDs is coverItems(pc), interned.
func coverItemIDs(pc problemCandidate) ([]int32, error) {
	items, err := coverItems(pc)
	return internItems(items), err
}

// sampleSets is items, then extra's (if not nil), for each of cands,
// interned.
func sampleSets(cands []problemCandidate, items func(problemCandidate) ([]int32, error), extra func(problemCandidate) []string) ([][]int32, error) {
	sets := make([][]int32, len(cands))
	errs := make([]error, len(cands))
	// On every CPU: rendering thousands of candidates is most of a
	// sample's time.
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s, err := items(cands[i])
				if err == nil && extra != nil {
					s = append(slices.Clip(s), internItems(extra(cands[i]))...)
				}
				sets[i], errs[i] = s, err
			}
		}()
	}
	for i := range cands {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return sets, nil
}

// pick is the candidates of cands at the indexes idx.
func pick(cands []problemCandidate, idx []int) []problemCandidate {
	out := make([]problemCandidate, len(idx))
	for i, j := range idx {
		out[i] = cands[j]
	}
	return out
}

// coverSample returns a deterministic subset of cands, in their order, in
// which every family appears with every problem, and every value that any
// candidate gives to any knob of its family appears, in every precision it
// has a candidate of, at least once (greedyCover over coverItems), along
// with the items that extra (if not nil) returns for a candidate. A
// candidate with a malformed ID is an error.
func coverSample(cands []problemCandidate, extra func(problemCandidate) []string) ([]problemCandidate, error) {
	sets, err := sampleSets(cands, coverItemIDs, extra)
	if err != nil {
		return nil, err
	}
	return pick(cands, greedyCoverIDs(sets, nil)), nil
}

// pathSample is the indexes of greedyCover's sample of cands over
// pathItems, with the items of covered (those of kernels compiled besides
// the sample, such as the golden ones: compiledItemIDs) covered already.
func pathSample(cands []problemCandidate, covered [][]int32) ([]int, error) {
	sets, err := sampleSets(cands, pathItemIDs, nil)
	if err != nil {
		return nil, err
	}
	return greedyCoverIDs(sets, covered), nil
}

// compileSample returns the candidates of cands a compile test compiles:
// all of them under the full sweep (FullSweepEnv), else a code-path sample
// (pathSample: every family with every precision and every layout, every
// knob value and every code path at least once, in the sample or in
// compiled, the kernels the test compiles besides), computed once per test
// (sharedSample). A new family's candidates are sampled like the others',
// with nothing to add here.
func compileSample(t *testing.T, cands []problemCandidate, compiled []Kernel) []problemCandidate {
	t.Helper()
	if fullSweep() {
		return cands
	}
	return pick(cands, sharedSample(t, "compile", len(cands), func() ([]int, error) {
		return pathSample(cands, compiledItemIDs(t, compiled, nil))
	}))
}

// sampleEnv carries a compile test's samples (sharedSample) to the test's
// shard children (runCompileJobs), which re-run the test: a code-path
// sample renders every candidate, which the children need not repeat.
const sampleEnv = "CONVGEN_COMPILE_SAMPLES"

// sharedSamples holds each test's samples so far, as "key=n:i,j,...".
var sharedSamples = struct {
	sync.Mutex
	m map[*testing.T][]string
}{m: map[*testing.T][]string{}}

// sharedSample returns the indexes that sample returns for a test's n
// candidates, the test's sample key: sample's result in the test's own
// process, its parent's (from sampleEnv) in a shard child.
func sharedSample(t *testing.T, key string, n int, sample func() ([]int, error)) []int {
	t.Helper()
	if n == 0 {
		return nil
	}
	if os.Getenv(shardEnv) != "" {
		for _, kv := range strings.Split(os.Getenv(sampleEnv), ";") {
			k, v, _ := strings.Cut(kv, "=")
			if k != key {
				continue
			}
			count, list, _ := strings.Cut(v, ":")
			if count != strconv.Itoa(n) {
				t.Fatalf("sample %q: the parent sampled %s candidates, this child has %d", key, count, n)
			}
			var idx []int
			for _, f := range strings.Split(list, ",") {
				i, err := strconv.Atoi(f)
				if err != nil || i < 0 || i >= n {
					t.Fatalf("sample %q from the parent: bad index %q", key, f)
				}
				idx = append(idx, i)
			}
			return idx
		}
		t.Fatalf("%s has no sample %q from the parent", sampleEnv, key)
	}
	idx, err := sample()
	if err != nil {
		t.Fatalf("covering sample %s: %v", key, err)
	}
	if len(idx) == 0 {
		t.Fatalf("covering sample %s: empty", key)
	}
	list := make([]string, len(idx))
	for i, j := range idx {
		list[i] = strconv.Itoa(j)
	}
	sharedSamples.Lock()
	sharedSamples.m[t] = append(sharedSamples.m[t], fmt.Sprintf("%s=%d:%s", key, n, strings.Join(list, ",")))
	sharedSamples.Unlock()
	return idx
}

// testSamples is sampleEnv's value for t's shard children.
func testSamples(t *testing.T) string {
	sharedSamples.Lock()
	defer sharedSamples.Unlock()
	return strings.Join(sharedSamples.m[t], ";")
}

// goldenPrefix starts the ID of a golden kernel's compile job.
const goldenPrefix = "golden "

// compiledGolden is the golden kernels (goldenKernels), in name order,
// that TestCompile compiles where NVRTC targets sm_90a or not, whose
// source no job of jobs compiles yet.
func compiledGolden(t *testing.T, jobs []compileJob, sm90a bool) []Kernel {
	t.Helper()
	var out []Kernel
	for _, j := range appendGolden(t, jobs, func(k Kernel) bool { return k.ArchSuffix == "" || sm90a })[len(jobs):] {
		out = append(out, j.kernel)
	}
	return out
}

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
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
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
		sets, err := sampleSets(all, pathItemIDs, nil)
		if err != nil {
			t.Fatal(err)
		}
		// With TestCompile's golden kernels, which it compiles besides.
		golden := compiledItemIDs(t, compiledGolden(t, nil, lim.SM90a), nil)
		sample, err := pathSample(all, golden)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := pathSample(all, golden)
		what := fmt.Sprintf("flagship SM90a=%v", sm90a)
		checkCover(t, what, all, append(slices.Clip(sets), golden...), sample, again)
		checkPaths(t, what, all, sets, sample, golden)
		alone, _ := pathSample(all, nil)
		checkCover(t, what+" without the golden kernels", all, sets, alone, alone)
		checkPaths(t, what+" without the golden kernels", all, sets, alone, nil)
	}
}

// checkCover checks that sample, indexes of cands ascending, has every item
// of sets (cands' items, then those of kernels compiled besides, which
// cover theirs), that again is the same sample, and that it is much
// smaller than cands.
func checkCover(t *testing.T, what string, cands []problemCandidate, sets [][]int32, sample, again []int) {
	t.Helper()
	need := map[int32]bool{}
	for _, s := range sets[:len(cands)] {
		for _, id := range s {
			need[id] = true
		}
	}
	for _, s := range sets[len(cands):] {
		for _, id := range s {
			delete(need, id)
		}
	}
	for i, j := range sample {
		if j < 0 || j >= len(cands) || i > 0 && j <= sample[i-1] {
			t.Fatalf("%s: sample %v is not indexes of the candidates, in order", what, sample)
		}
		for _, id := range sets[j] {
			delete(need, id)
		}
	}
	if !slices.Equal(sample, again) {
		t.Fatalf("%s: the sample is not deterministic: %v, then %v", what, sample, again)
	}
	var missing []string
	for id := range need {
		missing = append(missing, itemName(id))
	}
	slices.Sort(missing)
	for _, item := range missing {
		t.Errorf("%s: no sampled candidate has %s", what, item)
	}
	if len(sample) == 0 || 10*len(sample) > len(cands) {
		t.Errorf("%s: sample of %d of %d candidates: not much of a saving", what, len(sample), len(cands))
	}
	t.Logf("%s: %d of %d", what, len(sample), len(cands))
}

// checkPaths checks that the code-path items of sets (pathItems's) of the
// sample and of the kernels compiled besides (compiled, their
// compiledItemIDs) hold what a code-path sample stands for: every family,
// every precision and every layout of every family and every knob value of
// every family; and that each family's candidates have preprocessor
// branches and lines, so that a change that left codePaths with nothing to
// see fails here.
func checkPaths(t *testing.T, what string, cands []problemCandidate, sets [][]int32, sample []int, compiled [][]int32) {
	t.Helper()
	have := map[string]bool{}
	for _, j := range sample {
		for _, id := range sets[j] {
			have[itemName(id)] = true
		}
	}
	for _, s := range compiled {
		for _, id := range s {
			have[itemName(id)] = true
		}
	}
	branches, lines := map[string]bool{}, map[string]bool{}
	for i, pc := range cands {
		f := pc.c.Family
		want := append([]string{"family " + f}, problemItems(f, pc.p)...)
		for k, v := range pc.c.Config {
			want = append(want, fmt.Sprintf("%s %s=%d", f, k, v))
		}
		for _, w := range want {
			if !have[w] {
				t.Fatalf("%s: the sample has no %q (of %s %s)", what, w, pc.p, pc.c.ID())
			}
		}
		for _, id := range sets[i] {
			name := itemName(id)
			if strings.HasPrefix(name, f+" #if") {
				branches[f] = true
			}
			if strings.HasPrefix(name, f+" line ") {
				lines[f] = true
			}
		}
	}
	for _, pc := range cands {
		if f := pc.c.Family; !branches[f] || !lines[f] {
			t.Errorf("%s: %s's kernels have no preprocessor branch (%v) or no line (%v)", what, f, branches[f], lines[f])
		}
	}
}

// TestFrontEndSample checks that the sm_90a front-end sample of wgmma over
// the flagship's problems has every code path, precision, layout and knob
// value (pathItems) and every staging path and A operand in every
// precision and in every layout (every problem under the full sweep), in
// far fewer kernels.
func TestFrontEndSample(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
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
	sets, err := frontEndSets(all)
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]int{}
	for i, pc := range all {
		index[pc.p.String()+" "+pc.c.ID()] = i
	}
	indexes := func(sample []problemCandidate) []int {
		var out []int
		for _, pc := range sample {
			out = append(out, index[pc.p.String()+" "+pc.c.ID()])
		}
		return out
	}
	sample, again := indexes(frontEndSample(t, "wgmma", all, nil)), indexes(frontEndSample(t, "wgmma again", all, nil))
	checkCover(t, "wgmma", all, sets, sample, again)
	checkPaths(t, "wgmma", all, sets, sample, nil)
	staging := func(pc problemCandidate) []string {
		if fullSweep() {
			return []string{fmt.Sprintf("%s/%s VecStage=%d RegisterA=%d", pc.p.Precision, pc.p.Layout, pc.c.Config["VecStage"], pc.c.Config["RegisterA"])}
		}
		return stagingItems(pc.p, pc.c.Config)
	}
	have := map[string]bool{}
	for _, pc := range pick(all, sample) {
		for _, s := range staging(pc) {
			have[s] = true
		}
	}
	for _, pc := range all {
		for _, s := range staging(pc) {
			if !have[s] {
				t.Errorf("wgmma: the sample has no %s", s)
				have[s] = true
			}
		}
	}
	if !slices.ContainsFunc(all, func(pc problemCandidate) bool { return pc.c.Config["VecStage"] == 1 }) || !slices.ContainsFunc(all, func(pc problemCandidate) bool { return pc.c.Config["RegisterA"] == 1 }) {
		t.Error("wgmma: no kept candidate stages through registers or has A in registers")
	}
}
