package kernels_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// suiteShape is one line of a suite file in bench/suites.
type suiteShape struct {
	suite, name string
	shape       problem.Shape
	err         error // what Validate said, for shapes convgen refuses
}

// suiteBatch is the batch size given to lines without their own N.
const suiteBatch = 32

// readSuites parses every suite file: "name | shape" lines, shapes without
// N taking suiteBatch.
func readSuites(t *testing.T) []suiteShape {
	t.Helper()
	files, err := filepath.Glob("../bench/suites/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no suite files in ../bench/suites (%v)", err)
	}
	var out []suiteShape
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			name, spec, ok := strings.Cut(line, "|")
			if !ok {
				t.Fatalf("%s: %q is not 'name | shape'", file, line)
			}
			spec = strings.TrimSpace(spec)
			if !strings.Contains(strings.ToUpper(spec), "N=") {
				spec = fmt.Sprintf("N=%d,%s", suiteBatch, spec)
			}
			s := suiteShape{suite: strings.TrimSuffix(filepath.Base(file), ".txt"), name: strings.TrimSpace(name)}
			s.shape, s.err = problem.ParseShape(spec)
			out = append(out, s)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestSuitesServed checks that every shape of the public suites that
// convgen accepts has at least one statically kept candidate in every
// precision and layout, for sm_80 and for sm_90, and that each kept
// family's first candidate renders. convgen refuses none of them: shapes
// with a tensor of 2^31 elements or more (kb87-pointwise) are served by
// generic's 64-bit path, and only by it.
func TestSuitesServed(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	shapes := readSuites(t)
	if len(shapes) < 40 {
		t.Fatalf("only %d suite shapes read", len(shapes))
	}
	for _, s := range shapes {
		if s.err != nil {
			t.Errorf("%s/%s: refused: %v", s.suite, s.name, s.err)
			continue
		}
		wide := s.shape.Needs64BitIndex()
		for _, arch := range []int{80, 90} {
			for _, prec := range problem.Precisions {
				for _, lay := range problem.Layouts {
					p := problem.Problem{Shape: s.shape, Precision: prec, Layout: lay}
					cands, err := kernels.Enumerate(p, kernels.DefaultLimits(arch))
					if err != nil {
						t.Errorf("%s/%s sm_%d %s: %v", s.suite, s.name, arch, p, err)
						continue
					}
					rendered := map[string]bool{}
					for _, c := range cands {
						if c.Rejected != "" || rendered[c.Family] {
							continue
						}
						if wide && c.Family != "generic" {
							t.Errorf("%s/%s sm_%d %s: %s kept for a shape that needs 64-bit indices", s.suite, s.name, arch, p, c.Family)
						}
						if _, err := kernels.RenderCandidate(p, c); err != nil {
							t.Errorf("%s/%s sm_%d: render %s: %v", s.suite, s.name, arch, c.ID(), err)
						}
						rendered[c.Family] = true
					}
					if len(rendered) == 0 {
						t.Errorf("%s/%s sm_%d %s: every candidate rejected", s.suite, s.name, arch, p)
					}
				}
			}
		}
	}
}

// TestSuitesCompile NVRTC-compiles the first kept candidate of the
// fastest-listed family for a rotating sample of the suite shapes, for
// sm_80 and sm_90 in turn (both for each shape under the full sweep): each
// precision, layout and architecture appears, and every shape is compiled
// in some mode under the full sweep (CONVGEN_FULL_SWEEP=1).
func TestSuitesCompile(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	var accepted []suiteShape
	for _, s := range readSuites(t) {
		if s.err == nil {
			accepted = append(accepted, s)
		}
	}
	step := 7 // about 6 shapes of the 45: a few seconds on two cores
	if os.Getenv("CONVGEN_FULL_SWEEP") == "1" {
		step = 1
	}
	type job struct {
		id, target string
		k          kernels.Kernel
	}
	var jobs []job
	modes := 0
	for i := 0; i < len(accepted); i += step {
		s := accepted[i]
		prec := problem.Precisions[modes%len(problem.Precisions)]
		lay := problem.Layouts[(modes/len(problem.Precisions))%len(problem.Layouts)]
		modes++
		archs := []int{80, 90}
		if step > 1 {
			archs = archs[modes%2 : modes%2+1] // the sample's shapes alternate between them
		}
		for _, arch := range archs {
			p := problem.Problem{Shape: s.shape, Precision: prec, Layout: lay}
			cands, err := kernels.Enumerate(p, kernels.DefaultLimits(arch))
			if err != nil {
				t.Errorf("%s/%s: %v", s.suite, s.name, err)
				continue
			}
			for _, c := range cands {
				if c.Rejected != "" {
					continue
				}
				k, err := kernels.RenderCandidate(p, c)
				if err != nil {
					t.Fatalf("render %s: %v", c.ID(), err)
				}
				target := fmt.Sprintf("sm_%d", arch)
				jobs = append(jobs, job{fmt.Sprintf("%s/%s %s %s", s.suite, s.name, target, c.ID()), target, k})
				break
			}
		}
	}
	// Two compiles at a time (the test machine's two cores).
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := lib.Compile(j.k.Source, nvrtc.Options{Name: j.k.Name + ".cu", Arch: j.target + j.k.ArchSuffix})
			switch {
			case err != nil:
				t.Errorf("%s: %v", j.id, err)
			case len(res.CUBIN) == 0:
				t.Errorf("%s: empty CUBIN", j.id)
			default:
				t.Logf("%s: ok", j.id)
			}
		}()
	}
	wg.Wait()
}
