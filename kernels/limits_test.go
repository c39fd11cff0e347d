package kernels

import (
	"fmt"
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestOccupancyUsesLimitsSMs: the occupancy rules count the device's SMs
// (Limits.SMs), never a constant: with 1000 SMs every occupancy rejection
// names 1000 SMs, and some configurations are rejected that 132 SMs keep.
func TestOccupancyUsesLimitsSMs(t *testing.T) {
	var cases []problem.Problem
	for _, prec := range problem.Precisions {
		cases = append(cases, flagship(t, prec, problem.NCHW))
	}
	small, err := problem.ParseShape("N=32,C=256,H=14,W=14,K=1024,R=1,S=1")
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, problem.Problem{Shape: small, Precision: problem.FP32, Layout: problem.NHWC})
	families := map[string]bool{}
	for _, p := range cases {
		lim := DefaultLimits(90)
		lim.SM90a = true
		lim.SMs = 1000
		cands, err := Enumerate(p, lim)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cands {
			if !strings.HasPrefix(c.Rejected, "occupancy:") {
				continue
			}
			families[c.Family] = true
			if !strings.Contains(c.Rejected, fmt.Sprintf("%d SMs", lim.SMs)) {
				t.Errorf("%s %s: %q does not count the device's %d SMs", p, c.ID(), c.Rejected, lim.SMs)
			}
		}
	}
	if !families["mma"] && !families["mmahalf"] {
		t.Errorf("no mma.sync candidate rejected for occupancy on 1000 SMs (families: %v)", families)
	}
}
