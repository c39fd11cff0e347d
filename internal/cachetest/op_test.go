package cachetest

import (
	"testing"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// TestOpRecordKey: OpRecord's kernel is of the problem of the record's
// key, whatever the problem: of a record of another shape and precision
// than the flagship's, the winner re-rendered for the key's problem has
// the recorded hash, launch and name (so replay takes it), the key drops
// the forward's chain, and the record validates.
func TestOpRecordKey(t *testing.T) {
	for _, tc := range []struct{ name, shape, precision, layout string }{
		{"flagship", "", "", ""},
		{"another problem", "N=8,C=16,H=28,W=28,K=32,R=3,S=3,pad=1", "tf32", "nhwc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fwd := Record(t, H200, 132)
			if tc.shape != "" {
				shape, err := problem.ParseShape(tc.shape)
				if err != nil {
					t.Fatal(err)
				}
				fwd.Key.Shape, fwd.Key.Precision, fwd.Key.Layout = shape.String(), tc.precision, tc.layout
			}
			fwd.Key.Epilogue = "relu"
			for _, op := range []problem.Op{problem.OpDgrad, problem.OpWgrad} {
				rec := OpRecord(t, fwd, op)
				p := KeyProblem(t, rec.Key)
				p.Op = op
				if rec.Key.Op != op.String() || rec.Key.Epilogue != "" || rec.Key.Shape != fwd.Key.Shape || rec.Key.Precision != fwd.Key.Precision {
					t.Errorf("%s: key %+v", op, rec.Key)
				}
				k, err := kernels.RenderCandidate(p, kernels.Candidate{Family: rec.Winner.Family, Config: rec.Winner.Config})
				if err != nil {
					t.Fatalf("%s: render the winner for %s: %v", op, p, err)
				}
				if kernels.Hash(k) != rec.KernelSHA256 || k.Name != rec.Kernel || k.Launch != rec.Launch {
					t.Errorf("%s: the record's kernel (%s, %+v) is not its key's problem's (%s, %+v)", op, rec.Kernel, rec.Launch, k.Name, k.Launch)
				}
				if err := rec.Validate(); err != nil {
					t.Errorf("%s: %v", op, err)
				}
			}
		})
	}
	// The flagship's and another problem's gradient kernels differ, so the
	// check above tells a key's problem from the flagship.
	fwd := Record(t, H200, 132)
	other := fwd
	other.Key.Shape = "N=8,C=16,H=28,W=28,K=32,R=3,S=3,pad=1"
	if s, err := problem.ParseShape(other.Key.Shape); err != nil {
		t.Fatal(err)
	} else {
		other.Key.Shape = s.String()
	}
	if a, b := OpRecord(t, fwd, problem.OpDgrad), OpRecord(t, other, problem.OpDgrad); a.KernelSHA256 == b.KernelSHA256 {
		t.Error("the dgrad records of two shapes have one kernel hash")
	}
}
