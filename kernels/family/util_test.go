package family

import (
	"slices"
	"testing"
)

// TestDivisors checks Divisors against the definition for every n up to
// 2000 and, in its O(√n) steps, on the largest channel count a shape
// allows.
func TestDivisors(t *testing.T) {
	for n := -1; n <= 2000; n++ {
		var want []int
		for i := 1; i <= n; i++ {
			if n%i == 0 {
				want = append(want, i)
			}
		}
		if got := Divisors(n); !slices.Equal(got, want) {
			t.Fatalf("Divisors(%d) = %v, want %v", n, got, want)
		}
	}
	// 536870911 = 2^29 - 1 = 233 · 1103 · 2089.
	if got, want := Divisors(536870911), []int{1, 233, 1103, 2089, 256999, 486737, 2304167, 536870911}; !slices.Equal(got, want) {
		t.Errorf("Divisors(2^29-1) = %v, want %v", got, want)
	}
}
