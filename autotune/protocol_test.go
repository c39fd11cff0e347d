package autotune

import (
	"encoding/json"
	"math"
	"testing"
)

// TestResponseFinite checks that a worker's response with NaN or infinite
// errors still crosses the JSON pipe (encoding/json refuses non-finite
// floats), the errors standing as the largest float64, which fails every
// bound, while finite errors pass unchanged.
func TestResponseFinite(t *testing.T) {
	r := response{RelError: math.NaN(), SampleError: math.Inf(1), RefError: 1.5e-7}
	if _, err := json.Marshal(r); err == nil {
		t.Fatal("json.Marshal accepted a NaN error: the test no longer shows why finite is needed")
	}
	r.finite()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("after finite: %v", err)
	}
	var back response
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.RelError != notFinite || back.SampleError != notFinite {
		t.Errorf("non-finite errors came back as %g and %g, want %g", back.RelError, back.SampleError, notFinite)
	}
	if back.RefError != 1.5e-7 {
		t.Errorf("a finite error changed: %g, want 1.5e-7", back.RefError)
	}
	r = response{RelError: math.Inf(-1)}
	r.finite()
	if r.RelError != notFinite {
		t.Errorf("-Inf became %g, want %g", r.RelError, notFinite)
	}
}
