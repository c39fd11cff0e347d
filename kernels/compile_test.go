package kernels

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
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
// NVRTC can target, and, for every (precision, layout) of the flagship some
// family serves, a covering sample of each family's kept candidates
// (compileSample: every value of every knob at least once). Under the full
// sweep (CONVGEN_FULL_SWEEP=1, scripts/test -full) it compiles every kept
// candidate and every reference kernel.
func TestCompile(t *testing.T) {
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
	for _, pc := range compileSample(t, cands) {
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

// shardEnv, set to "i/n", makes a compile test compile every n-th of its
// jobs from the i-th on, in a child process.
const shardEnv = "CONVGEN_COMPILE_SHARD"

// shardOf assigns jobs to shards so that their compile times balance: the
// longest sources (a proxy for NVRTC's time) first, each to the shard with
// the least source so far (ties to the lower shard): every process of a
// test computes the same assignment from the same jobs. Dealing the jobs
// out in turn had left one of two shards idle for a quarter of the test.
func shardOf(jobs []compileJob, shards int) []int {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(jobs[b].kernel.Source) - len(jobs[a].kernel.Source) })
	load := make([]int, shards)
	out := make([]int, len(jobs))
	for _, i := range order {
		least := 0
		for s := 1; s < shards; s++ {
			if load[s] < load[least] {
				least = s
			}
		}
		out[i] = least
		load[least] += len(jobs[i].kernel.Source)
	}
	return out
}

// runCompileJobs runs compile on every job and reports the jobs it says
// are wrong (a non-empty string). NVRTC 11 serialises compiles inside one
// process, so it spreads the jobs over one child process per CPU (this test
// binary re-running t, which must build the same jobs in the same order, on
// a shard); in a child it compiles its shard.
func runCompileJobs(t *testing.T, jobs []compileJob, compile func(compileJob) string) {
	t.Helper()
	total := len(jobs)
	shard, shards := 0, 1
	if spec := os.Getenv(shardEnv); spec != "" {
		if _, err := fmt.Sscanf(spec, "%d/%d", &shard, &shards); err != nil || shards < 1 || shard < 0 || shard >= shards {
			t.Fatalf("%s=%q: want i/n", shardEnv, spec)
		}
	} else if n := runtime.NumCPU(); n > 1 && len(jobs) > 2*n {
		compileShards(t, n, len(jobs))
		return
	}
	var mine []compileJob
	assigned := shardOf(jobs, shards)
	for i, j := range jobs {
		if assigned[i] == shard {
			mine = append(mine, j)
		}
	}
	jobs = mine

	// Stop handing out work shortly before the test binary's deadline, so
	// that running out of time is a clear failure rather than a panic
	// without the results.
	stopAt := time.Time{}
	if d, ok := t.Deadline(); ok {
		stopAt = d.Add(-45 * time.Second)
	}
	workers := runtime.NumCPU()
	if shards > 1 {
		workers = 1
	}
	start := time.Now()
	errs := make([]string, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = compile(jobs[i])
			}
		}()
	}
	handed := 0
	for i := range jobs {
		if !stopAt.IsZero() && time.Now().After(stopAt) {
			break
		}
		next <- i
		handed++
	}
	close(next)
	wg.Wait()
	if handed < len(jobs) {
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

// compileShards runs t's test in n child processes, one shard each, and
// reports their failures.
func compileShards(t *testing.T, n, total int) {
	t.Helper()
	// The children build the same jobs: they depend only on the
	// enumeration and on FullSweepEnv, which the children inherit.
	name := t.Name()
	args := []string{"-test.run=^" + regexp.QuoteMeta(name) + "$", "-test.v"}
	if d, ok := t.Deadline(); ok {
		args = append(args, fmt.Sprintf("-test.timeout=%s", time.Until(d).Round(time.Second)))
	}
	start := time.Now()
	outs := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d/%d", shardEnv, i, n))
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("compile shard %d/%d: %v\n%s", i, n, errs[i], outs[i])
			continue
		}
		if !strings.Contains(string(outs[i]), "--- PASS: "+name) {
			t.Errorf("compile shard %d/%d did not pass:\n%s", i, n, outs[i])
		}
		for _, line := range strings.Split(string(outs[i]), "\n") {
			if strings.Contains(line, "compiled ") {
				t.Logf("shard %d/%d: %s", i, n, strings.TrimSpace(line))
			}
		}
	}
	t.Logf("%d kernels in %d processes in %s", total, n, time.Since(start).Round(time.Second))
}

// compileOne compiles one kernel and returns what is wrong with the result,
// or "".
func compileOne(lib *nvrtc.Library, arch string, lim Limits, j compileJob) string {
	k := j.kernel
	arch += k.ArchSuffix
	res, err := lib.Compile(k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: arch})
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
// the flagship it serves, in which every knob value, every (precision,
// layout) and every staging path and A operand (VecStage × RegisterA)
// appear at least once (frontEndSample), plus the sm_90a golden kernels.
// ptxas (which would check the inline PTX) needs NVRTC 12+, where
// TestCompile compiles these families instead.
func TestCompileWGMMAFrontEnd(t *testing.T) {
	lib := nvrtctest.Open(t)
	if lib.SupportsArch("sm_90a") {
		t.Skip("this NVRTC targets sm_90a: TestCompile compiles the wgmma configurations")
	}
	lim := DefaultLimits(90)
	lim.SM90a = true
	var jobs []compileJob
	probs := map[string]problem.Problem{} // by job ID, for the candidates' checks
	keptTotal := 0
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
		for _, pc := range frontEndSample(t, cands) {
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
// candidates over several problems: coverSample's, with every staging path
// and A operand (VecStage × RegisterA) of every problem besides. Under the
// full sweep (CONVGEN_FULL_SWEEP=1) it has every knob value within every
// staging path of every problem, not every candidate: the whole sm_90a
// spaces (thousands of configurations) are compiled where NVRTC 12+
// targets sm_90a, by TestCompile.
func frontEndSample(t *testing.T, cands []problemCandidate) []problemCandidate {
	t.Helper()
	staging := func(pc problemCandidate) string {
		return fmt.Sprintf("%s/%s VecStage=%d RegisterA=%d", pc.p.Precision, pc.p.Layout, pc.c.Config["VecStage"], pc.c.Config["RegisterA"])
	}
	extra := func(pc problemCandidate) []string {
		if !fullSweep() {
			return []string{staging(pc)}
		}
		items, _ := coverItems(pc) // coverSample reports its error
		for i, item := range items {
			items[i] = staging(pc) + " " + item
		}
		return items
	}
	sample, err := coverSample(cands, extra)
	if err != nil {
		t.Fatalf("covering sample: %v", err)
	}
	return sample
}

// frontEndOne runs one sm_90a kernel of problem p through NVRTC's front end
// and returns what is wrong with its PTX, or "". Without p (golden kernels)
// it checks only what needs no knowledge of the problem.
func frontEndOne(lib *nvrtc.Library, kern Kernel, p problem.Problem, haveProblem bool) string {
	res, err := lib.CompilePTX(kern.Source, nvrtc.Options{Name: kern.Name + ".cu", Arch: "sm_90" + kern.ArchSuffix})
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

// compileForArchs compiles every job for sm_80 and for sm_90, each under its
// default limits, on runCompileJobs's workers, with compileOne's checks.
func compileForArchs(t *testing.T, lib *nvrtc.Library, jobs []compileJob) {
	t.Helper()
	archs := []int{80, 90}
	var both []compileJob
	for _, j := range jobs {
		for _, a := range archs {
			both = append(both, compileJob{fmt.Sprintf("%s for sm_%d", j.id, a), j.kernel})
		}
	}
	runCompileJobs(t, both, func(j compileJob) string {
		a := 90
		if strings.HasSuffix(j.id, "for sm_80") {
			a = 80
		}
		return compileOne(lib, fmt.Sprintf("sm_%d", a), DefaultLimits(a), j)
	})
}
