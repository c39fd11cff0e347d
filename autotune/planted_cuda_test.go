//go:build cuda

package autotune

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// TestMain lets the test binary act as the tuner's worker process.
func TestMain(m *testing.M) {
	if os.Getenv("CONVGEN_TEST_WORKER") == "1" {
		if err := ServeWorker(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestPlantedFailures: an out-of-bounds write is recorded as a fault, an
// endless loop as a timeout, a kernel that writes nothing as wrong, one that
// does not compile as a compile failure, and the run goes on to measure and
// pick a real candidate.
func TestPlantedFailures(t *testing.T) {
	lib, err := nvrtc.Open()
	if err != nil {
		t.Fatal(err)
	}
	shape, err := problem.ParseShape("N=4,C=3,H=40,W=40,K=32,R=5,S=5,stride=2,pad=2")
	if err != nil {
		t.Fatal(err)
	}
	p := problem.Problem{Shape: shape, Precision: problem.FP32, Layout: problem.NCHW}
	var pin string
	cands, err := kernels.Enumerate(p, kernels.DefaultLimits(90))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		if c.Rejected == "" {
			pin = c.ID()
			break
		}
	}
	if pin == "" {
		t.Fatal("no candidate kept for the test shape")
	}
	extra := []kernels.Kernel{
		plantedKernel("planted_oob", "out[(1ll << 40) + threadIdx.x] = 1.0f;"),
		plantedKernel("planted_hang", "volatile float* o = out; while (o[0] != 1.5f) { }"),
		plantedKernel("planted_lazy", "if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = 0.0f;"),
		plantedKernel("planted_broken", "this is not CUDA;"),
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	worker := []string{"env", "CONVGEN_TEST_WORKER=1", exe}
	res, err := Tune(context.Background(), lib, Options{Problem: p, Worker: worker, Only: []string{pin},
		Extra: extra, Timeout: 15 * time.Second, Runs: 20, Seed: 7, Progress: os.Stderr})
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	want := map[string]Status{"planted/planted_oob": StatusFault, "planted/planted_hang": StatusTimeout,
		"planted/planted_lazy": StatusWrong, "planted/planted_broken": StatusCompile, pin: StatusOK}
	seen := 0
	for _, tr := range res.Trials {
		if st, ok := want[tr.ID]; ok {
			seen++
			if tr.Status != st {
				t.Errorf("%s: status %s (%s), want %s", tr.ID, tr.Status, tr.Reason, st)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("saw %d of %d expected trials", seen, len(want))
	}
	if res.Winner == nil || res.Winner.ID != pin {
		t.Fatalf("winner %v, want %s", res.Winner, pin)
	}
	if res.Winner.MedianMS <= 0 || res.Winner.RelError > 1e-5 {
		t.Errorf("winner median %.4f ms, error %.2e", res.Winner.MedianMS, res.Winner.RelError)
	}
}
