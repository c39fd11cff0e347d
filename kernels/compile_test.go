package kernels

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// compileJob is one kernel for a compile test.
type compileJob struct {
	id     string
	kernel Kernel
}

// TestCompile renders and compiles for sm_90 the reference kernel of every
// precision and every layout (referenceSample), the golden kernels this
// NVRTC can target, and, over the (precision, layout) problems of the
// flagship, a covering sample of the families' kept candidates
// (compileSample: every family with every precision and every layout it
// serves, every value of every knob and every code path of every kept
// candidate at least once, the golden kernels' counted, their flagship
// problems too; a (precision, layout) pair whose code differs from the
// others' has a code path of its own). Under the full sweep
// (CONVGEN_FULL_SWEEP=1, scripts/test -full) it compiles every kept
// candidate and every reference kernel.
func TestCompile(t *testing.T) {
	// Not parallel: the longest compile test runs first, on every CPU (its
	// shards), rather than last beside the others (the test command's time).
	lib := nvrtctest.Open(t)
	const arch = "sm_90"
	if !lib.SupportsArch(arch) {
		t.Fatalf("NVRTC %s does not support %s", lib.VersionString(), arch)
	}
	lim := DefaultLimits(90)
	// sm_90a families (wgmma) compile where this NVRTC can target sm_90a.
	lim.SM90a = lib.SupportsArch("sm_90a")
	var jobs []compileJob
	for _, p := range referenceSample(t) {
		k, err := Reference(p)
		if err != nil {
			t.Fatalf("Reference: %v", err)
		}
		jobs = append(jobs, compileJob{"reference " + string(p.Precision) + " " + string(p.Layout), k})
	}
	nref := len(jobs)
	var cands []problemCandidate
	for _, s := range servedFlagship(t, lim) {
		for _, c := range kept(s.cands) {
			cands = append(cands, problemCandidate{s.prob, c})
		}
	}
	// The golden kernels are compiled too: the sample need not repeat
	// their knob values and code paths.
	for _, pc := range compileSample(t, cands, compiledGolden(t, nil, lim.SM90a)) {
		k, err := RenderCandidate(pc.p, pc.c)
		if err != nil {
			t.Fatalf("%s: render: %v", pc.c.ID(), err)
		}
		jobs = append(jobs, compileJob{string(pc.p.Precision) + " " + string(pc.p.Layout) + " " + pc.c.ID(), k})
	}
	nsample := len(jobs) - nref
	jobs = appendGolden(t, jobs, func(k Kernel) bool { return k.ArchSuffix == "" || lim.SM90a })
	t.Logf("%d kernels: %d reference, %d of the %d kept candidates (full sweep: %v), %d golden",
		len(jobs), nref, nsample, len(cands), fullSweep(), len(jobs)-nref-nsample)
	// Golden kernels are fixed renderings, some of which the static checks
	// reject on today's limits (mma_3xtf32_nhwc_p8_q32_k96_w32x48_s2 wants
	// 288,576 B of shared memory): they must compile, not fit a block.
	unbounded := lim
	unbounded.MaxSharedPerBlock, unbounded.RegistersPerSM = math.MaxInt32, math.MaxInt32
	runCompileJobs(t, jobs, func(j compileJob) string {
		if strings.HasPrefix(j.id, goldenPrefix) {
			return compileOne(lib, arch, unbounded, j)
		}
		return compileOne(lib, arch, lim, j)
	})
}

// referenceSample returns the flagship problems whose checking kernel
// TestCompile compiles: every precision and every layout at least once
// (greedyCover), or every (precision, layout) under the full sweep.
func referenceSample(t *testing.T) []problem.Problem {
	var all []problem.Problem
	var sets [][]string
	for _, prec := range problem.Precisions {
		for _, layout := range problem.Layouts {
			all = append(all, flagship(t, prec, layout))
			sets = append(sets, []string{"precision " + string(prec), "layout " + string(layout)})
		}
	}
	if fullSweep() {
		return all
	}
	var out []problem.Problem
	for _, i := range greedyCover(sets) {
		out = append(out, all[i])
	}
	return out
}

// shardEnv, set to "i/n/c", makes a compile test a worker (the i-th of n)
// for its c-th runCompileJobs call (from 0), in a child process: it
// compiles the jobs that the parent hands it (compileShards) and skips its
// other calls (the parent runs those).
const shardEnv = "CONVGEN_COMPILE_SHARD"

// compileCalls counts each test's runCompileJobs calls so far, by test (a
// child re-runs its whole test, so it must tell the call it was started for
// from the others: a test's second sharded call's children had compiled
// the first call's jobs again).
var compileCalls = struct {
	sync.Mutex
	n map[*testing.T]int
}{n: map[*testing.T]int{}}

// nextCompileCall returns the index of t's runCompileJobs call now starting.
func nextCompileCall(t *testing.T) int {
	compileCalls.Lock()
	defer compileCalls.Unlock()
	c := compileCalls.n[t]
	compileCalls.n[t] = c + 1
	return c
}

// compileUnits is the order in which compileShards hands out jobs: the
// longest sources (a proxy for NVRTC's time) first, so that the last ones
// handed out are short, each unit a source with the indexes of every job
// that compiles it (in one worker, so that nvrtcMemo compiles it once).
// Handing the jobs out as the workers finish, rather than dealing them out
// beforehand by source size, had left no worker idle at the end (direct's
// kernels take several times their sources' share).
func compileUnits(jobs []compileJob) [][]int {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(jobs[b].kernel.Source) - len(jobs[a].kernel.Source) })
	var units [][]int
	unit := map[string]int{}
	for _, i := range order {
		if u, ok := unit[jobs[i].kernel.Source]; ok {
			units[u] = append(units[u], i)
			continue
		}
		unit[jobs[i].kernel.Source] = len(units)
		units = append(units, []int{i})
	}
	return units
}

// nvrtcMemo holds NVRTC's results in this process, by source and options
// (memoCompile): a test's jobs can repeat a source (a reference kernel for
// two problems, the same helpers for two layouts, a kernel checked once by
// frontEndOne and once more by the test), which shardOf puts in one shard,
// so that NVRTC compiles it once. The results are only read.
var nvrtcMemo sync.Map // memoKey → func() (*nvrtc.Result, error)

type memoKey struct {
	ptxOnly bool
	source  [sha256.Size]byte
	options string
}

// memoCompile is lib.Compile(src, opt), or lib.CompilePTX(src, opt) if
// ptxOnly, compiled once per process (nvrtcMemo), on the pool of NVRTC
// servers in the test binary's own process (poolCompile).
func memoCompile(lib *nvrtc.Library, ptxOnly bool, src string, opt nvrtc.Options) (*nvrtc.Result, error) {
	key := memoKey{ptxOnly, sha256.Sum256([]byte(src)), strings.Join(append([]string{lib.Path(), opt.Name, opt.Arch}, opt.Extra...), "\x00")}
	f, _ := nvrtcMemo.LoadOrStore(key, sync.OnceValues(func() (*nvrtc.Result, error) {
		if res, err, ok := poolCompile(lib, nvrtcRequest{ptxOnly, src, opt}); ok {
			return res, err
		}
		if ptxOnly {
			return lib.CompilePTX(src, opt)
		}
		return lib.Compile(src, opt)
	}))
	return f.(func() (*nvrtc.Result, error))()
}

// runCompileJobs runs compile on every job and reports the jobs it says
// are wrong (a non-empty string). NVRTC 11 serialises compiles inside one
// process, so it spreads the jobs over one child process per CPU (this test
// binary re-running t, which must build the same jobs in the same order)
// that compile the jobs the parent hands them (compileShards); in a child
// it is such a worker.
func runCompileJobs(t *testing.T, jobs []compileJob, compile func(compileJob) string) {
	t.Helper()
	total := len(jobs)
	call := nextCompileCall(t)
	shard, shards, shardCall := 0, 1, 0
	if spec := os.Getenv(shardEnv); spec != "" {
		if _, err := fmt.Sscanf(spec, "%d/%d/%d", &shard, &shards, &shardCall); err != nil || shards < 1 || shard < 0 || shard >= shards || shardCall < 0 {
			t.Fatalf("%s=%q: want i/n/c", shardEnv, spec)
		}
		if call != shardCall {
			return // another call's child: the parent runs this call
		}
	} else if n := runtime.NumCPU(); n > 1 && len(jobs) > 2*n {
		compileShards(t, n, call, jobs)
		return
	}

	// Stop compiling shortly before the test binary's deadline, so that
	// running out of time is a clear failure rather than a panic without
	// the results.
	stopAt := time.Time{}
	if d, ok := t.Deadline(); ok {
		stopAt = d.Add(-45 * time.Second)
	}
	late := func() bool { return !stopAt.IsZero() && time.Now().After(stopAt) }
	start := time.Now()
	errs := make([]string, len(jobs))
	done := make([]bool, len(jobs))
	skipped := 0
	workers := runtime.NumCPU()
	if shards > 1 {
		// A worker: the parent writes the indexes of each unit to fd 3, a
		// line, and waits for a line on fd 4 before writing the next.
		workers = 1
		in, out := bufio.NewScanner(os.NewFile(3, "jobs")), os.NewFile(4, "done")
		for in.Scan() {
			for _, f := range strings.Split(in.Text(), ",") {
				i, err := strconv.Atoi(f)
				if err != nil || i < 0 || i >= len(jobs) {
					t.Fatalf("worker %d/%d: bad job %q from the parent", shard, shards, f)
				}
				if late() {
					skipped++
					continue
				}
				errs[i], done[i] = compile(jobs[i]), true
			}
			if _, err := fmt.Fprintln(out, "done"); err != nil {
				t.Fatalf("worker %d/%d: %v", shard, shards, err)
			}
		}
		if err := in.Err(); err != nil {
			t.Fatalf("worker %d/%d: %v", shard, shards, err)
		}
	} else {
		next := make(chan int)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					errs[i], done[i] = compile(jobs[i]), true
				}
			}()
		}
		for i := range jobs {
			if late() {
				skipped = len(jobs) - i
				break
			}
			next <- i
		}
		close(next)
		wg.Wait()
	}
	handed := 0
	for _, d := range done {
		if d {
			handed++
		}
	}
	if skipped > 0 {
		t.Errorf("out of time: compiled only %d of %d kernels in %s before the test deadline; run with a larger -timeout (e.g. -timeout 60m)",
			handed, len(jobs), time.Since(start).Round(time.Second))
	}

	failed := 0
	for i, e := range errs {
		if e == "" {
			continue
		}
		failed++
		if failed <= 20 {
			t.Errorf("%s: %s", jobs[i].id, e)
		}
	}
	if failed > 20 {
		t.Errorf("... and %d more failures", failed-20)
	}
	t.Logf("compiled %d of %d kernels (%d failed) with NVRTC %s, %d workers, in %s",
		handed-failed, total, failed, nvrtctest.Open(t).VersionString(), workers, time.Since(start).Round(time.Millisecond))
}

// compileShards runs t's test in n child processes, workers for t's
// call-th runCompileJobs call, hands them the jobs' compileUnits as they
// finish them, and reports their failures.
func compileShards(t *testing.T, n, call int, jobs []compileJob) {
	t.Helper()
	// The children build the same jobs: they depend only on the
	// enumeration, on FullSweepEnv, which the children inherit, and on the
	// samples (sampleEnv), which they are given.
	name := t.Name()
	args := []string{"-test.run=^" + regexp.QuoteMeta(name) + "$", "-test.v"}
	if d, ok := t.Deadline(); ok {
		args = append(args, fmt.Sprintf("-test.timeout=%s", time.Until(d).Round(time.Second)))
	}
	start := time.Now()
	units := compileUnits(jobs)
	var mu sync.Mutex
	nextUnit := func() ([]int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if len(units) == 0 {
			return nil, false
		}
		u := units[0]
		units = units[1:]
		return u, true
	}
	outs := make([][]byte, n)
	errs := make([]error, n)
	lost := make([][]int, n) // units handed to a worker that did not say it was done
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], lost[i], errs[i] = compileWorker(args, fmt.Sprintf("%s=%d/%d/%d", shardEnv, i, n, call), sampleEnv+"="+testSamples(t), nextUnit)
		}()
	}
	wg.Wait()
	for i, u := range lost {
		if u != nil {
			t.Errorf("compile worker %d/%d did not compile job %v (%s)", i, n, u, jobs[u[0]].id)
		}
	}
	if len(units) > 0 {
		t.Errorf("%d jobs (%s, ...) were handed to no compile worker", len(units), jobs[units[0][0]].id)
	}
	for i := range n {
		if errs[i] != nil {
			t.Errorf("compile worker %d/%d: %v\n%s", i, n, errs[i], outs[i])
			continue
		}
		if !strings.Contains(string(outs[i]), "--- PASS: "+name) {
			t.Errorf("compile worker %d/%d did not pass:\n%s", i, n, outs[i])
		}
		for _, line := range strings.Split(string(outs[i]), "\n") {
			if strings.Contains(line, "compiled ") {
				t.Logf("worker %d/%d: %s", i, n, strings.TrimSpace(line))
			}
		}
	}
	t.Logf("%d kernels in %d processes in %s", len(jobs), n, time.Since(start).Round(time.Second))
}

// compileWorker runs this test binary with args and env added as a worker
// (runCompileJobs): it writes the units that next returns to the child's
// fd 3, one line each, the next one once the child has said on its fd 4
// that it is done with the last, then closes fd 3; it returns the child's
// output and the unit it handed the child that the child did not finish
// (nil if none).
func compileWorker(args []string, env1, env2 string, next func() ([]int, bool)) (output []byte, lost []int, err error) {
	jobsR, jobsW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	doneR, doneW, err := os.Pipe()
	if err != nil {
		jobsR.Close()
		jobsW.Close()
		return nil, nil, err
	}
	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), env1, env2)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = []*os.File{jobsR, doneW}
	err = cmd.Start()
	jobsR.Close() // the child's ends
	doneW.Close()
	if err != nil {
		jobsW.Close()
		doneR.Close()
		return nil, nil, err
	}
	done := bufio.NewScanner(doneR)
	for {
		u, ok := next()
		if !ok {
			break
		}
		line := make([]string, len(u))
		for i, j := range u {
			line[i] = strconv.Itoa(j)
		}
		if _, err := fmt.Fprintln(jobsW, strings.Join(line, ",")); err != nil || !done.Scan() {
			lost = u // the child is gone: Wait says why, if it can
			break
		}
	}
	jobsW.Close()
	err = cmd.Wait()
	doneR.Close()
	return out.Bytes(), lost, err
}

// compileOne compiles one kernel and returns what is wrong with the result,
// or "".
func compileOne(lib *nvrtc.Library, arch string, lim Limits, j compileJob) string {
	k := j.kernel
	arch += k.ArchSuffix
	res, err := memoCompile(lib, false, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: arch})
	if err != nil {
		msg := err.Error()
		if len(msg) > 2000 {
			msg = msg[:2000] + "…"
		}
		return "compile: " + msg
	}
	var problems []string
	if len(res.CUBIN) == 0 {
		problems = append(problems, "empty CUBIN")
	}
	if !strings.Contains(res.PTX, ".target "+arch) {
		problems = append(problems, "PTX lacks .target "+arch)
	}
	r, ok := res.Resources[k.Name]
	threads := k.Block[0] * k.Block[1] * k.Block[2]
	switch {
	case !ok:
		problems = append(problems, fmt.Sprintf("no resources for %s (have %d kernels)", k.Name, len(res.Resources)))
	case r.Registers <= 0 || r.Registers > 255:
		problems = append(problems, fmt.Sprintf("%d registers per thread, want 1..255", r.Registers))
	case r.Registers*threads > lim.RegistersPerSM:
		problems = append(problems, fmt.Sprintf("%d registers × %d threads > %d per SM: the block cannot launch", r.Registers, threads, lim.RegistersPerSM))
	case r.SharedBytes+k.SharedBytes > lim.MaxSharedPerBlock:
		problems = append(problems, fmt.Sprintf("%d B static + %d B dynamic shared memory > %d", r.SharedBytes, k.SharedBytes, lim.MaxSharedPerBlock))
	}
	if k.Family == "igemm" && ok && (r.SpillStores > 0 || r.SpillLoads > 0) {
		problems = append(problems, fmt.Sprintf("register spills: %d B stored, %d B loaded", r.SpillStores, r.SpillLoads))
	}
	if (strings.HasPrefix(k.Family, "mma") || k.Family == "igemm") && !strings.Contains(res.PTX, "mma.sync") {
		problems = append(problems, "tensor-core family but the PTX has no mma.sync")
	}
	if strings.HasPrefix(k.Family, "wgmma") && !strings.Contains(res.PTX, "wgmma.mma_async") {
		problems = append(problems, k.Family+" family but the PTX has no wgmma.mma_async")
	}
	return strings.Join(problems, "; ")
}

// TestCompileWGMMAFrontEnd checks, where NVRTC cannot target sm_90a (CI's
// 11.8), that the sm_90a families' kernels pass NVRTC's C++ front end for
// compute_90 and emit the family's wgmma into their PTX: for each family, a
// covering sample of its kept candidates over every (precision, layout) of
// the flagship it serves, in which every knob value, every code path,
// every precision and every layout, and every staging path and A operand
// (VecStage × RegisterA) in every precision and in every layout appear at
// least once, in the sample or in the family's sm_90a golden kernels,
// which it compiles too (frontEndSample; under the full sweep every
// staging path of every (precision, layout), with every knob value).
// ptxas (which would check the inline PTX) needs NVRTC 12+, where
// TestCompile compiles these families instead.
func TestCompileWGMMAFrontEnd(t *testing.T) {
	// Not parallel, as TestCompile: one of the longest compile tests, on
	// every CPU (its sample's renders, then its shards).
	lib := nvrtctest.Open(t)
	if lib.SupportsArch("sm_90a") {
		t.Skip("this NVRTC targets sm_90a: TestCompile compiles the wgmma configurations")
	}
	lim := DefaultLimits(90)
	lim.SM90a = true
	var jobs []compileJob
	probs := map[string]problem.Problem{} // by job ID, for the candidates' checks
	keptTotal := 0
	golden := map[string][]Kernel{} // the sm_90a golden kernels, by family
	for _, j := range appendGolden(t, nil, func(k Kernel) bool { return k.ArchSuffix == "a" }) {
		golden[j.kernel.Family] = append(golden[j.kernel.Family], j.kernel)
	}
	for _, fam := range Families() {
		var cands []problemCandidate
		for _, prec := range problem.Precisions {
			for _, layout := range problem.Layouts {
				p := flagship(t, prec, layout)
				if fam.Serves(p) != nil {
					continue
				}
				all := fam.Space(p, lim)
				if len(all) == 0 || !strings.HasPrefix(sm90aGate(fam, p), "arch:") {
					continue // not an sm_90a family: TestCompile compiles it
				}
				k := kept(all)
				if fam.Name() == "wgmma" && prec == problem.TF32 {
					// Not searched, but rendered on request (a pin).
					_, ra := tf32RegisterA(t, p, lim)
					k = append(k, Candidate{Family: fam.Name(), Config: ra})
				}
				if len(k) == 0 {
					t.Errorf("%s %s %s: no candidate kept", fam.Name(), prec, layout)
				}
				if fam.Name() == "wgmma" && prec == problem.TF32x3 && !slices.ContainsFunc(k, func(c Candidate) bool { return c.Config["RegisterA"] == 1 }) {
					t.Errorf("%s %s: no RegisterA candidate kept", prec, layout)
				}
				keptTotal += len(k)
				for _, c := range k {
					cands = append(cands, problemCandidate{p, c})
				}
			}
		}
		for _, pc := range frontEndSample(t, fam.Name(), cands, golden[fam.Name()]) {
			kern, err := RenderCandidate(pc.p, pc.c)
			if err != nil {
				t.Fatalf("%s: %v", pc.c.ID(), err)
			}
			id := string(pc.p.Precision) + " " + string(pc.p.Layout) + " " + pc.c.ID()
			jobs = append(jobs, compileJob{id, kern})
			probs[id] = pc.p
		}
	}
	n := len(jobs)
	jobs = appendGolden(t, jobs, func(k Kernel) bool { return k.ArchSuffix == "a" })
	t.Logf("%d sm_90a kernels through NVRTC %s's front end: %d of %d kept candidates (full sweep: %v), %d golden",
		len(jobs), lib.VersionString(), n, keptTotal, fullSweep(), len(jobs)-n)
	runCompileJobs(t, jobs, func(j compileJob) string {
		p, ok := probs[j.id]
		return frontEndOne(lib, j.kernel, p, ok)
	})
}

// sm90aGate returns the verdict on p's first candidate of f under the sm_90
// defaults without SM90a: an "arch:" reason for the sm_90a families.
func sm90aGate(f Family, p problem.Problem) string {
	cands := f.Space(p, DefaultLimits(90))
	if len(cands) == 0 {
		return ""
	}
	return cands[0].Rejected
}

// frontEndSample is TestCompileWGMMAFrontEnd's sample of one family's kept
// candidates over several problems (key names it for sharedSample, which
// computes it once per test): compileSample's (every precision and every
// layout, every knob value and every code path), with every staging path
// and A operand (VecStage × RegisterA) in every precision and in every
// layout besides (stagingItems), the items of golden (kernels compiled
// besides, compiledItemIDs) counted. Under the full sweep
// (CONVGEN_FULL_SWEEP=1) it has every staging path of every problem and,
// in addition, every knob value within every staging path of every
// problem, not every candidate (golden not counted): the whole sm_90a
// spaces (thousands of configurations) are compiled where NVRTC 12+
// targets sm_90a, by TestCompile.
func frontEndSample(t *testing.T, key string, cands []problemCandidate, golden []Kernel) []problemCandidate {
	t.Helper()
	return pick(cands, sharedSample(t, "frontend "+key, len(cands), func() ([]int, error) {
		sets, err := frontEndSets(cands)
		if err != nil {
			return nil, err
		}
		var covered [][]int32
		if !fullSweep() {
			covered = compiledItemIDs(t, golden, func(p problem.Problem, k Kernel) []string { return stagingItems(p, k.Config) })
		}
		return greedyCoverIDs(sets, covered), nil
	}))
}

// stagingItems is a frontEndSample item of a kernel of p with cfg: its
// staging path and A operand (VecStage × RegisterA) with p's precision and
// with p's layout.
func stagingItems(p problem.Problem, cfg Config) []string {
	sa := fmt.Sprintf("VecStage=%d RegisterA=%d", cfg["VecStage"], cfg["RegisterA"])
	return []string{string(p.Precision) + " " + sa, string(p.Layout) + " " + sa}
}

// frontEndSets is what each of cands contributes to frontEndSample.
func frontEndSets(cands []problemCandidate) ([][]int32, error) {
	staging := func(pc problemCandidate) string {
		return fmt.Sprintf("%s/%s VecStage=%d RegisterA=%d", pc.p.Precision, pc.p.Layout, pc.c.Config["VecStage"], pc.c.Config["RegisterA"])
	}
	return sampleSets(cands, pathItemIDs, func(pc problemCandidate) []string {
		if !fullSweep() {
			return stagingItems(pc.p, pc.c.Config)
		}
		items, _ := coverItems(pc) // pathItems reports its error
		for i, item := range items {
			items[i] = staging(pc) + " " + item
		}
		return append(items, staging(pc))
	})
}

// frontEndOne runs one sm_90a kernel of problem p through NVRTC's front end
// and returns what is wrong with its PTX, or "". Without p (golden kernels)
// it checks only what needs no knowledge of the problem.
func frontEndOne(lib *nvrtc.Library, kern Kernel, p problem.Problem, haveProblem bool) string {
	res, err := memoCompile(lib, true, kern.Source, nvrtc.Options{Name: kern.Name + ".cu", Arch: "sm_90" + kern.ArchSuffix})
	if err != nil {
		msg := err.Error()
		if len(msg) > 2000 {
			msg = msg[:2000] + "…"
		}
		return "front end: " + msg
	}
	var problems []string
	if !strings.Contains(res.PTX, ".entry "+kern.Name) || !strings.Contains(res.PTX, "wgmma.mma_async.sync.aligned") {
		problems = append(problems, "PTX lacks the entry "+kern.Name+" or a wgmma.mma_async")
	}
	if !haveProblem {
		return strings.Join(problems, "; ")
	}
	prec, layout, cfg := p.Precision, p.Layout, kern.Config
	n := cfg["TileK"] // the wgmma's N: wgmma's and wgmmahalf's TileK, wgmmaigemm's BN
	if kern.Family == "wgmmaigemm" {
		n = cfg["BN"]
	}
	want := fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32", n)
	if kern.Family == "wgmmahalf" || kern.Family == "wgmmaigemm" && prec.ElementBytes() == 2 { // wgmma's 16-bit kernels run TF32
		typ := map[problem.Precision]string{problem.FP16: "f16", problem.BF16: "bf16"}[prec]
		want = fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s", n, typ, typ)
	}
	if !strings.Contains(res.PTX, want) {
		problems = append(problems, fmt.Sprintf("PTX lacks %q", want))
	}
	// Register staging loads whole 16-byte chunks (the flagship's rows
	// allow them in both layouts and element sizes).
	if (cfg["VecStage"] == 1 || kern.Family == "wgmmahalf") && !strings.Contains(res.PTX, "ld.global.nc.v4.u32") {
		problems = append(problems, "register staging without 16-byte loads in the PTX")
	}
	// RegisterA loads its A fragments from shared memory and issues wgmmas
	// with four A registers.
	if cfg["RegisterA"] == 1 && (!regexp.MustCompile(`ld\.shared\.[uf]32`).MatchString(res.PTX) ||
		!regexp.MustCompile(regexp.QuoteMeta(want)+` \{[^}]*\}, \{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd`).MatchString(res.PTX)) {
		problems = append(problems, "RegisterA without ld.shared or a wgmma with A in registers in the PTX")
	}
	// RegisterA with cp.async on NCHW images of a width divisible by 4 (the
	// flagship's) stages the patch 16 bytes at a time.
	if cfg["RegisterA"] == 1 && cfg["VecStage"] == 0 && layout == problem.NCHW && !strings.Contains(res.PTX, "cp.async.cg.shared.global") {
		problems = append(problems, "RegisterA without 16-byte cp.async in the PTX")
	}
	return strings.Join(problems, "; ")
}

// compileForArchs compiles jobs for sm_80 and for sm_90, each under its
// default limits, on runCompileJobs's workers, with compileOne's checks:
// under the full sweep every job for both; by default each job for one of
// them, in turn within its family (Kernel.Family: sm_90, then sm_80), and
// a family's only job for both, so that every family of the jobs compiles
// for both and every kernel for one. The architecture is a compile target,
// not a branch of the templates (igemm's split-K refuses sm_80 with an
// #error, which TestIGEMMSplitKCompile checks).
func compileForArchs(t *testing.T, lib *nvrtc.Library, jobs []compileJob) {
	t.Helper()
	archs := []int{80, 90}
	count := map[string]int{} // jobs by family
	for _, j := range jobs {
		count[j.kernel.Family]++
	}
	var both []compileJob
	seen := map[string]int{} // jobs by family so far
	for _, j := range jobs {
		f := j.kernel.Family
		for _, a := range archs {
			if !fullSweep() && count[f] > 1 && a != archs[1-seen[f]%2] {
				continue
			}
			both = append(both, compileJob{fmt.Sprintf("%s for sm_%d", j.id, a), j.kernel})
		}
		seen[f]++
	}
	runCompileJobs(t, both, func(j compileJob) string {
		a := 90
		if strings.HasSuffix(j.id, "for sm_80") {
			a = 80
		}
		return compileOne(lib, fmt.Sprintf("sm_%d", a), DefaultLimits(a), j)
	})
}
