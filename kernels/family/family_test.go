package family

import "testing"

// TestBlockSlots: clusters fill ClusterSMs (the H100's 120 of 132 SMs) in
// whole clusters, blocks without clusters every SM, and a GPU whose SMs'
// grouping is unknown its SMs.
func TestBlockSlots(t *testing.T) {
	h100 := DefaultLimits(90)
	other := h100
	other.SMs, other.ClusterSMs = 114, 0
	for _, c := range []struct {
		lim                     Limits
		cluster, resident, want int
	}{
		{h100, 8, 1, 120},
		{h100, 4, 1, 120},
		{h100, 8, 2, 240},
		{h100, 1, 1, 132},
		{h100, 1, 3, 396},
		{other, 8, 1, 112},
		{other, 1, 1, 114},
	} {
		if got := c.lim.BlockSlots(c.cluster, c.resident); got != c.want {
			t.Errorf("SMs %d, ClusterSMs %d: BlockSlots(%d, %d) = %d, want %d", c.lim.SMs, c.lim.ClusterSMs, c.cluster, c.resident, got, c.want)
		}
	}
}
