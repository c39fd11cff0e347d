package autotune

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestExplorationOrder checks that a sampled search gives every family the
// same share of its first samples, whatever the size of each family's space,
// visits every kept candidate once, and is deterministic for a seed.
func TestExplorationOrder(t *testing.T) {
	var trials []Trial
	var kept []int
	for i := range 60 {
		trials = append(trials, Trial{Family: "generic"})
		kept = append(kept, i)
	}
	for i := range 6 {
		trials = append(trials, Trial{Family: "igemm"})
		kept = append(kept, 60+i)
	}
	trials = append(trials, Trial{Family: "rejected"}) // not kept: never visited
	order := explorationOrder(kept, trials, rand.New(rand.NewPCG(1, 1)))
	if len(order) != len(kept) {
		t.Fatalf("order has %d candidates, want %d", len(order), len(kept))
	}
	sorted := slices.Sorted(slices.Values(order))
	if !slices.Equal(sorted, kept) {
		t.Fatalf("order %v is not a permutation of the kept candidates", order)
	}
	igemm := 0
	for _, i := range order[:12] {
		if trials[i].Family == "igemm" {
			igemm++
		}
	}
	if igemm != 6 {
		t.Errorf("%d of the first 12 samples are igemm's, want 6 (one family in turn)", igemm)
	}
	again := explorationOrder(kept, trials, rand.New(rand.NewPCG(1, 1)))
	if !slices.Equal(order, again) {
		t.Error("the order differs for the same seed")
	}
}

// TestSweepOrder checks the order of a full sweep (-trials 0, or a space no
// larger than -trials): families in turn, each in enumeration order, so
// that a time budget ending the sweep early has measured every family.
func TestSweepOrder(t *testing.T) {
	trials := []Trial{{Family: "wgmma"}, {Family: "wgmma"}, {Family: "wgmma"}, {Family: "wgmmarow"}, {Family: "wgmmarow"}, {Family: "generic"}}
	kept := []int{0, 1, 2, 3, 4, 5}
	got := explorationOrder(kept, trials, nil)
	want := []int{0, 3, 5, 1, 4, 2}
	if !slices.Equal(got, want) {
		t.Errorf("sweep order %v, want %v", got, want)
	}
}

// TestOneLine: a fallback note (an NVRTC log, say) becomes one line that a
// tuning record accepts: no newline, white space runs as one space,
// clipped.
func TestOneLine(t *testing.T) {
	got := oneLine("wgradmma.cu(162): error: __cluster_dims__ is not supported\n   extern \"C\"\t__global__\n\n1 error")
	if want := `wgradmma.cu(162): error: __cluster_dims__ is not supported extern "C" __global__ 1 error`; got != want {
		t.Errorf("oneLine = %q, want %q", got, want)
	}
	if long := oneLine(strings.Repeat("x ", 3000)); len(long) > 2000+len("…") {
		t.Errorf("oneLine kept %d bytes", len(long))
	}
}

// TestExplorationVariants: a family's variants (its Stage or Fold values)
// take turns like families, so that a small variant is sampled early.
func TestExplorationVariants(t *testing.T) {
	var trials []Trial
	var kept []int
	for i := range 40 {
		trials = append(trials, Trial{Family: "wgradmma", Config: map[string]int{"Stage": i % 2, "BM": i}})
		kept = append(kept, i)
	}
	for i := range 3 {
		trials = append(trials, Trial{Family: "wgradmma", Config: map[string]int{"Stage": 3, "BM": i}})
		kept = append(kept, 40+i)
	}
	order := explorationOrder(kept, trials, rand.New(rand.NewPCG(2, 1)))
	stage3 := 0
	for _, i := range order[:9] {
		if trials[i].Config["Stage"] == 3 {
			stage3++
		}
	}
	if stage3 != 3 {
		t.Errorf("%d of the first 9 samples are Stage=3, want 3 (variants in turn)", stage3)
	}
}

// TestExplorationCostOrder: a family whose candidates all have a predicted
// cost is explored cheapest first (ties in enumeration order), whatever
// the seed, still in turn with the others; a family without one is
// shuffled as before.
func TestExplorationCostOrder(t *testing.T) {
	var trials []Trial
	var kept []int
	costs := []float64{5, 1, 4, 1, 3, 2}
	for i, c := range costs {
		trials = append(trials, Trial{Family: "wgmmaigemm", cost: c, hasCost: true})
		kept = append(kept, i)
	}
	for range 6 {
		trials = append(trials, Trial{Family: "generic"})
		kept = append(kept, len(trials)-1)
	}
	for seed := range uint64(3) {
		order := explorationOrder(kept, trials, rand.New(rand.NewPCG(seed, 1)))
		var costed []int
		for j, i := range order {
			if trials[i].Family == "wgmmaigemm" {
				costed = append(costed, i)
				if j%2 != 0 {
					t.Errorf("seed %d: the costed family's candidate at %d, want every other place (families in turn)", seed, j)
				}
			}
		}
		if want := []int{1, 3, 5, 4, 2, 0}; !slices.Equal(costed, want) {
			t.Errorf("seed %d: costed family in order %v, want %v (cheapest first, ties in enumeration order)", seed, costed, want)
		}
	}
	// One candidate without a cost (a pin's extra kernel, say): the
	// family is shuffled, not sorted on part of its costs.
	trials[0].hasCost = false
	shuffled := false
	for seed := range uint64(8) {
		var costed []int
		for _, i := range explorationOrder(kept, trials, rand.New(rand.NewPCG(seed, 1))) {
			if trials[i].Family == "wgmmaigemm" {
				costed = append(costed, i)
			}
		}
		shuffled = shuffled || !slices.Equal(costed, []int{1, 3, 5, 4, 2, 0})
	}
	if !shuffled {
		t.Error("a family with an uncosted candidate came out cost-sorted for every seed")
	}
}
