package kernels

import (
	"fmt"
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/nvrtc"
)

// TestSharedBytesAsserted: the direct and generic kernels assert at compile
// time that the dynamic shared memory Go launches them with is their
// layout's size. Rendered as is they compile; with a launch size that
// disagrees (the asserted figure off by 16 bytes) NVRTC rejects them with
// the assertion's message.
func TestSharedBytesAsserted(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	// The direct golden kernel that compiles fastest (one channel staged
	// at a time): any direct kernel has the assertion.
	direct, ok := goldenKernels(t)["direct_p8_q16_k48_x8_sc1"]
	if !ok || direct.Family != "direct" {
		t.Fatal("no direct golden kernel direct_p8_q16_k48_x8_sc1")
	}
	ks := []Kernel{direct, goldenGeneric(t)}
	for _, k := range ks {
		want := fmt.Sprintf(") == %d,", k.SharedBytes)
		if strings.Count(k.Source, want) != 1 {
			t.Fatalf("%s: no static_assert of the shared memory size %d", k.Name, k.SharedBytes)
		}
		opt := nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_80"}
		if _, err := memoCompile(lib, false, k.Source, opt); err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		bad := strings.Replace(k.Source, want, fmt.Sprintf(") == %d,", k.SharedBytes+16), 1)
		_, err := memoCompile(lib, false, bad, opt)
		if err == nil || !strings.Contains(err.Error(), "dynamic shared memory") {
			t.Errorf("%s with a wrong shared memory size: compile error %v, want the static_assert's", k.Name, err)
		}
	}
}
