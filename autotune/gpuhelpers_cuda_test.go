//go:build cuda

package autotune

import (
	"os"
	"testing"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// gpuSetup opens NVRTC and returns it with the argv that starts this test
// binary as a worker and the limits of the sm_90 GPU the tests run on
// (sm_90a families included when this NVRTC can target them).
func gpuSetup(t *testing.T) (*nvrtc.Library, []string, kernels.Limits) {
	t.Helper()
	lib, err := nvrtc.Open()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	lim := kernels.DefaultLimits(90)
	lim.SM90a = lib.SupportsArch("sm_90a")
	return lib, []string{"env", "CONVGEN_TEST_WORKER=1", exe}, lim
}

// eachProblem calls f with every problem of each shape in the precisions
// given (every precision when none) and both layouts.
func eachProblem(t *testing.T, shapes []string, precs []problem.Precision, f func(p problem.Problem)) {
	t.Helper()
	if len(precs) == 0 {
		precs = problem.Precisions
	}
	for _, text := range shapes {
		shape, err := problem.ParseShape(text)
		if err != nil {
			t.Fatal(err)
		}
		for _, prec := range precs {
			for _, lay := range problem.Layouts {
				f(problem.Problem{Shape: shape, Precision: prec, Layout: lay})
			}
		}
	}
}

// checkTrials reports every trial that failed (a status other than OK,
// rejected or skipped) or passed with an error over p's bound, and returns
// how many passed.
func checkTrials(t *testing.T, p problem.Problem, trials []Trial) (passed int) {
	t.Helper()
	bound := p.Precision.ErrorBound()
	for _, tr := range trials {
		switch tr.Status {
		case StatusOK:
			passed++
			if tr.RelError > bound || tr.SampleError > bound {
				t.Errorf("%s passed with error %.2e/%.2e over the bound %.0e", tr.ID, tr.RelError, tr.SampleError, bound)
			}
		case StatusRejected, StatusSkipped:
		default:
			t.Errorf("%s: %s: %s", tr.ID, tr.Status, tr.Reason)
		}
	}
	return passed
}
