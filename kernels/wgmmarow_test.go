package kernels

import (
	"strings"
	"testing"

	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

func TestWGMMARowServes(t *testing.T) {
	if err := (WGMMARow{}).Serves(flagship(t, problem.TF32, problem.NCHW)); err != nil {
		t.Fatalf("wgmmarow does not serve the tf32 nchw flagship: %v", err)
	}
	for _, bad := range []struct {
		prec   problem.Precision
		layout problem.Layout
		mut    func(*problem.Shape)
		want   string
	}{
		{problem.FP32, problem.NCHW, func(*problem.Shape) {}, "tf32 only"},
		{problem.TF32x3, problem.NCHW, func(*problem.Shape) {}, "tf32 only"},
		{problem.FP16, problem.NCHW, func(*problem.Shape) {}, "tf32 only"},
		{problem.TF32, problem.NHWC, func(*problem.Shape) {}, "nchw"},
		{problem.TF32, problem.NCHW, func(s *problem.Shape) { s.StrideW = 2 }, "stride_w 4"},
		{problem.TF32, problem.NCHW, func(s *problem.Shape) { s.DilationW = 2 }, "dilation_w 1"},
		{problem.TF32, problem.NCHW, func(s *problem.Shape) { s.W = 300 }, "Q="},
		{problem.TF32, problem.NCHW, func(s *problem.Shape) { s.K = 100 }, "K divisible by 8"},
	} {
		q := flagship(t, bad.prec, bad.layout)
		bad.mut(&q.Shape)
		err := (WGMMARow{}).Serves(q)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: Serves = %v, want an error mentioning %q", q, err, bad.want)
		}
	}
}

func TestWGMMARowSpace(t *testing.T) {
	p := flagship(t, problem.TF32, problem.NCHW)
	on := checkArchGate(t, WGMMARow{}, p)
	cands := (WGMMARow{}).Space(p, on)
	checkCandidates(t, p, cands, on)
	k := kept(cands)
	if len(k) != 12 { // TileK 48 and 96 x Warpgroups 1-3 x Lag 1-2
		t.Errorf("%d of %d flagship candidates kept, want 12", len(k), len(cands))
	}
	for _, c := range k {
		kern := renderTF32WGMMA(t, p, c)
		blocks := kern.Grid[0] * kern.Grid[1]
		if kern.Block[0] != 128*(c.Config["Warpgroups"]+1) || kern.Grid[0]*c.Config["RowsPerBlock"] < 256*55 ||
			(kern.Grid[0]-1)*c.Config["RowsPerBlock"] >= 256*55 || blocks > on.SMs || blocks*20 < 19*on.SMs {
			t.Errorf("%s: grid %v, block %v: want every row in one wave of %d SMs", c.ID(), kern.Grid, kern.Block, on.SMs)
		}
		if kern.SharedBytes > on.MaxSharedPerBlock {
			t.Errorf("%s: %d B of shared memory", c.ID(), kern.SharedBytes)
		}
	}
	// The 128-channel tile leaves too few ring slots beside its filter.
	k128 := flagship(t, problem.TF32, problem.NCHW)
	k128.Shape.K = 128
	n := 0
	for _, c := range (WGMMARow{}).Space(k128, on) {
		if c.Config["TileK"] == 128 {
			n++
			if !strings.HasPrefix(c.Rejected, "shared memory:") {
				t.Errorf("%s: rejected %q, want a shared memory: reason", c.ID(), c.Rejected)
			}
		}
	}
	if n == 0 {
		t.Error("no TileK=128 candidate for K=128")
	}
}

func TestWGMMARowRenderErrors(t *testing.T) {
	p := flagship(t, problem.TF32, problem.NCHW)
	good := Config{"TileK": 96, "Warpgroups": 3, "Lag": 2, "RowsPerBlock": 107, "Slots": 7}
	if _, err := (WGMMARow{}).Render(p, good); err != nil {
		t.Fatalf("%s: %v", good, err)
	}
	with := func(k string, v int) Config {
		c := Config{}
		for kk, vv := range good {
			c[kk] = vv
		}
		if v < 0 {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{with("Slots", -1), "lacks knob Slots"},
		{with("Slots", 4), "Slots must be at least"},
		{with("TileK", 40), "TileK"},
		{with("Warpgroups", 0), "Warpgroups"},
		{with("Lag", 0), "Lag"},
		{with("RowsPerBlock", 0), "RowsPerBlock"},
	} {
		_, err := (WGMMARow{}).Render(p, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Render error %v, want one mentioning %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := (WGMMARow{}).Render(flagship(t, problem.TF32, problem.NHWC), good); err == nil {
		t.Error("Render accepted an nhwc problem")
	}
}

// TestWGMMARowBoundsAsserted compiles the tf32 NCHW flagship winner's
// configuration through NVRTC's front end, then its source with the ring's
// slack of before (36 floats: memcheck found the last slot's k steps 17 and
// 35 reading past the allocation) and with a shared memory size other than
// Go's: the template's static_asserts must reject both.
func TestWGMMARowBoundsAsserted(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	p := flagship(t, problem.TF32, problem.NCHW)
	k, err := (WGMMARow{}).Render(p, Config{"TileK": 96, "Warpgroups": 3, "Lag": 2, "RowsPerBlock": 107, "Slots": 7})
	if err != nil {
		t.Fatal(err)
	}
	opt := nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90" + k.ArchSuffix}
	if _, err := memoCompile(lib, true, k.Source, opt); err != nil {
		t.Fatalf("%s: %v", k.Name, err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{"GROUP_FLOATS + 288)", "GROUP_FLOATS + 36)", "k step 17: A stays in its slot and the slack"},
		{"== 231472,", "== 230464,", "dynamic shared memory"},
	} {
		if strings.Count(k.Source, tc.from) != 1 {
			t.Fatalf("%s: the source has not one %q", k.Name, tc.from)
		}
		_, err := memoCompile(lib, true, strings.Replace(k.Source, tc.from, tc.to, 1), opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s with %q: compile error %v, want the static_assert %q", k.Name, tc.to, err, tc.want)
		}
	}
}
