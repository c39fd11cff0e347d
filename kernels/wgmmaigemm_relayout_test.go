package kernels

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/internal/nvrtctest"
	"github.com/convgen/convgen/nvrtc"
	"github.com/convgen/convgen/problem"
)

// TestWGMMAIGEMMRelayout: a 16-bit NCHW forward (and tf32 with Relayout=1)
// renders as the relayout (the input copied to NHWC, padded channels, and
// the filter to KRSC where R·S > 1 or the channels are padded, by the
// prologue kernel or, launched alone, by the kernel's own blocks; then the
// NHWC forward storing NCHW), compiles for sm_90a to both entry points and
// their module globals (the tickets KERNEL_count, the prepared mark), keeps candidates and StoreRows twins (stored along the pixels) unless
// the output type differs, and
// the NHWC and tf32 renders carry none of it; a relayout past 32-bit
// offsets is declined.
func TestWGMMAIGEMMRelayout(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	f := WGMMAIGEMM{}
	lim := h100Limits()
	chain, err := epilogue.Parse("scale_shift,residual(0.5),relu")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec       string
		prec       problem.Precision
		out        problem.Storage
		chain      bool
		copyFilter bool
		paddedC    int
		subsample  bool // a 1x1 without padding at a stride: only the pixels read are copied
	}{
		{"N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1", problem.FP16, "", false, true, 64, false},
		{"N=2,C=64,H=14,W=14,K=64,R=1,S=1,stride=2", problem.FP16, "", false, false, 64, true},
		{"N=3,C=20,H=15,W=17,K=24,R=1,S=1,stride_h=2,stride_w=3", problem.BF16, "", false, true, 24, true},
		{"N=2,C=64,H=7,W=7,K=128,R=1,S=1", problem.BF16, "", true, false, 64, false},
		{"N=2,C=3,H=32,W=32,K=64,R=7,S=7,stride=2,pad=3", problem.FP16, "", false, true, 8, false},
		{"N=3,C=13,H=9,W=11,K=11,R=1,S=1", problem.BF16, "", false, true, 16, false},
		{"N=2,C=16,H=10,W=10,K=24,R=3,S=3,pad=1,bias=0", problem.FP16, problem.FP32.Storage(), false, true, 16, false},
		// tf32: Relayout=1 (pinned below), channels padded to 4.
		{"N=2,C=3,H=32,W=32,K=64,R=7,S=7,stride=2,pad=3", problem.TF32, "", false, true, 4, false},
		{"N=2,C=64,H=14,W=14,K=64,R=1,S=1,stride=2", problem.TF32, "", true, false, 64, true},
	} {
		shapes := parseShapes(t, []string{c.spec})
		p := problem.Problem{Shape: shapes[0], Precision: c.prec, Layout: problem.NCHW, Op: problem.OpFprop, OutPrecision: c.out}
		if c.chain {
			p.Epilogue = chain
		}
		if err := f.Serves(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		var cands []Candidate
		var twin *Candidate
		for _, cand := range kept(f.Space(p, lim)) {
			if p.Precision == problem.TF32 && cand.Config["Relayout"] != 1 {
				continue // tf32's element copies, searched alongside
			}
			cands = append(cands, cand)
			if cand.Config["StoreRows"] == 1 && twin == nil {
				twin = &cand
			}
		}
		if len(cands) == 0 || (twin != nil) != !p.OutDiffers() {
			t.Fatalf("%s: %d kept candidates, a StoreRows twin: %v (want some, and one unless the output type differs)", p, len(cands), twin != nil)
		}
		if twin != nil {
			// StoreRows (NCHW): staged channel by channel, stored along the
			// pixels, 16 bytes at a time where P·Q is a multiple of 16
			// bytes' pixels (8 in 16-bit types, 4 in tf32).
			k, err := f.Render(p, twin.Config)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			res, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90a"})
			if err != nil {
				t.Fatalf("%s StoreRows: %v", p, err)
			}
			ovec := 16 / p.Precision.ElementBytes()
			if vec := p.Shape.P()*p.Shape.Q()%ovec == 0; strings.Contains(res.PTX, "st.global.v4") != vec || !strings.Contains(k.Source, "StoreRows, NCHW") {
				t.Errorf("%s StoreRows: 16-byte stores %v, want them where P·Q %% %d == 0", p, !vec, ovec)
			}
		}
		k, err := f.Render(p, cands[0].Config)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, want := range []string{
			"relayout(in, filter, stages, ticket /", // launched alone: the blocks copy
			"if (RELAYOUT_PREPARED != ticket /",     // after the prologue: they only read
			"rl_add(&RELAYOUT_CLAIMED, ready, 1)",   // units claimed by the blocks running
			k.Name + "_prologue(",
			"in = RELAYOUT_X;",
			"#define C_IN " + strconv.Itoa(p.Shape.C),
			"#define C " + strconv.Itoa(c.paddedC) + "\n",
			"* PQ + m % PQ)", // NCHW stores
		} {
			if !strings.Contains(k.Source, want) {
				t.Errorf("%s: the source lacks %q", p, want)
			}
		}
		if got, want := strings.Contains(k.Source, "#define SUB_H "), c.subsample; got != want ||
			want && !strings.Contains(k.Source, fmt.Sprintf("#define H %d\n", p.Shape.P())) {
			t.Errorf("%s: subsampled: %v, want %v (the kernel on the P x Q copy)", p, got, want)
		}
		if got := strings.Contains(k.Source, "filter = RELAYOUT_W;"); got != c.copyFilter {
			t.Errorf("%s: filter copied: %v, want %v", p, got, c.copyFilter)
		}
		res, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90a"})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		entries := regexp.MustCompile(`\.entry\s+(\w+)`).FindAllStringSubmatch(res.PTX, -1)
		names := map[string]bool{}
		for _, e := range entries {
			names[e[1]] = true
		}
		if len(entries) != 2 || !names[k.Name] || !names[k.Name+"_prologue"] || !strings.Contains(res.PTX, k.Name+"_count") || !strings.Contains(res.PTX, k.Name+"_prepared") {
			t.Errorf("%s: entry points %v, want %s and its prologue, with the tickets (%s_count: launched one at a time) and the prepared mark", p, entries, k.Name, k.Name)
		}
		if !strings.Contains(res.PTX, ".align 16 .b8 "+k.Name+"_x[") {
			t.Errorf("%s: no 16-byte aligned module global %s_x in the PTX", p, k.Name)
		}
	}

	// The NHWC forward and tf32 in NCHW render as before: no relayout.
	for _, p := range []problem.Problem{
		{Shape: parseShapes(t, []string{"N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1"})[0], Precision: problem.FP16, Layout: problem.NHWC, Op: problem.OpFprop},
		{Shape: parseShapes(t, []string{"N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1"})[0], Precision: problem.TF32, Layout: problem.NCHW, Op: problem.OpFprop},
	} {
		cands := kept(f.Space(p, lim))
		if len(cands) == 0 {
			t.Fatalf("%s: no kept candidate", p)
		}
		k, err := f.Render(p, cands[0].Config)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(k.Source, "RELAYOUT") {
			t.Errorf("%s: relayed out", p)
		}
	}

	// Declined: a relayout past 32-bit offsets.
	for _, c := range []struct {
		spec string
		op   problem.Op
		want string
	}{
		{"N=64,C=1024,H=256,W=256,K=64,R=1,S=1", problem.OpFprop, "32-bit offsets"},
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: problem.FP16, Layout: problem.NCHW, Op: c.op}
		if err := f.Serves(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Serves = %v, want an error naming %q", p, err, c.want)
		}
	}
}

// TestWGMMAIGEMMPlaneA: a 16-bit NCHW 1x1 at stride 1 without padding,
// P·Q a multiple of 4 (8-byte copies where not of 8) and C of 8, is also
// searched reading its A straight from
// the channel planes (PlaneA=1: no copy, MN-major A read transposed),
// ranked ahead of the relayout; the twins render and compile for sm_90a
// (StoreRows too, with the residual chain); a PlaneA pin on any other
// problem is refused by its rule.
func TestWGMMAIGEMMPlaneA(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	f := WGMMAIGEMM{}
	lim := h100Limits()
	chain, err := epilogue.Parse("residual(0.5),relu")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec  string
		prec  problem.Precision
		chain bool
	}{
		{"N=2,C=64,H=16,W=16,K=128,R=1,S=1", problem.FP16, false},
		{"N=3,C=24,H=10,W=12,K=40,R=1,S=1,bias=false", problem.BF16, true},
		{"N=3,C=32,H=14,W=14,K=48,R=1,S=1", problem.FP16, true}, // P·Q = 196: 8-byte copies
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: c.prec, Layout: problem.NCHW}
		if c.chain {
			p.Epilogue = chain
		}
		cands := kept(f.Space(p, lim))
		slices.SortStableFunc(cands, func(a, b Candidate) int {
			ca, _ := PredictedCost(p, a, lim)
			cb, _ := PredictedCost(p, b, lim)
			return cmp.Compare(ca, cb)
		})
		if len(cands) == 0 || cands[0].Config["PlaneA"] != 1 {
			t.Fatalf("%s: the cheapest kept candidate is not PlaneA (%d kept)", p, len(cands))
		}
		var plain, rows *Candidate
		for i := range cands {
			if cands[i].Config["PlaneA"] == 1 && cands[i].Config["StoreRows"] == 1 && rows == nil {
				rows = &cands[i]
			}
			if cands[i].Config["PlaneA"] == 1 && cands[i].Config["StoreRows"] == 0 && plain == nil {
				plain = &cands[i]
			}
		}
		if plain == nil || rows == nil {
			t.Fatalf("%s: no PlaneA candidate with and without StoreRows", p)
		}
		for _, cand := range []*Candidate{plain, rows} {
			k, err := f.Render(p, cand.Config)
			if err != nil {
				t.Fatalf("%s %s: %v", p, cand.ID(), err)
			}
			if strings.Contains(k.Source, "RELAYOUT") || !strings.Contains(k.Source, "+ a_offset_mn(e, j") ||
				!strings.Contains(k.Source, "p, 1, 1, 1, 0;") {
				t.Errorf("%s %s: not PlaneA's copies and transposed A, or a relayout", p, cand.ID())
			}
			res, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90a"})
			if err != nil {
				t.Fatalf("%s %s: %v", p, cand.ID(), err)
			}
			if strings.Contains(res.PTX, k.Name+"_count") || !strings.Contains(res.PTX, "cp.async.cg.shared.global") {
				t.Errorf("%s %s: relayout tickets, or no 16-byte copies", p, cand.ID())
			}
			if half := p.Shape.P()*p.Shape.Q()%8 != 0; strings.Contains(k.Source, "cp_async8(st + a_offset_mn") != half || half && !strings.Contains(res.PTX, "cp.async.ca.shared.global") {
				t.Errorf("%s %s: 8-byte plane copies %v, want them where P·Q %% 8 != 0", p, cand.ID(), !half)
			}
		}
	}
	pin := Config{"BM": 128, "BN": 128, "BK": 64, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "PlaneA": 1}
	for _, c := range []struct {
		spec string
		prec problem.Precision
		lay  problem.Layout
		want string
	}{
		{"N=2,C=64,H=16,W=16,K=128,R=1,S=1,stride=2", problem.FP16, problem.NCHW, "stride 1"},
		{"N=2,C=64,H=7,W=7,K=128,R=1,S=1", problem.FP16, problem.NCHW, "a multiple of 4"},
		{"N=2,C=12,H=16,W=16,K=128,R=1,S=1", problem.FP16, problem.NCHW, "C = 12 of 8"},
		{"N=2,C=64,H=16,W=16,K=128,R=3,S=3,pad=1", problem.BF16, problem.NCHW, "1x1"},
		{"N=2,C=64,H=16,W=16,K=128,R=1,S=1", problem.FP16, problem.NHWC, "16-bit NCHW"},
		{"N=2,C=64,H=16,W=16,K=128,R=1,S=1", problem.TF32, problem.NCHW, "16-bit NCHW"},
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: c.prec, Layout: c.lay}
		planeARefused(t, lim, p, pin, c.want)
	}
}

// TestWGMMAIGEMMRelayoutDgrad: a 16-bit NCHW data gradient is relayed out
// too (the prologue, or the blocks, copy dY to NHWC, K zero-padded to a multiple of 8,
// and the filter to KRSC where R·S > 1 or K is padded; the NHWC dgrad,
// folded at a stride, stores dX NCHW): at stride 1, folded at stride 2
// (3×3, and a 1×1 whose idle phases are stored as zeros), with K = 13
// padded; every kept candidate's first renders and compiles for sm_90a,
// a StoreRows pin is refused; C not a multiple of 8 is declined; an NCHW
// StoreRows tile larger than the stages is refused.
func TestWGMMAIGEMMRelayoutDgrad(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	f := WGMMAIGEMM{}
	lim := h100Limits()
	for _, c := range []struct {
		spec       string
		prec       problem.Precision
		copyFilter bool
		folded     bool
	}{
		{"N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1,bias=0", problem.FP16, true, false},
		{"N=2,C=64,H=14,W=14,K=13,R=3,S=3,stride=2,pad=1,bias=0", problem.BF16, true, true},
		{"N=2,C=32,H=14,W=14,K=64,R=1,S=1,stride=2,bias=0", problem.FP16, false, true},
		{"N=2,C=64,H=7,W=7,K=128,R=1,S=1,bias=0", problem.BF16, false, false},
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: c.prec, Layout: problem.NCHW, Op: problem.OpDgrad}
		if err := f.Serves(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		cands := kept(f.Space(p, lim))
		if len(cands) == 0 {
			t.Fatalf("%s: no kept candidate", p)
		}
		k, err := f.Render(p, cands[0].Config)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, want := range []string{"relayout(in, filter, stages, ticket /", "rl_claim(ready)", k.Name + "_prologue(", "in = RELAYOUT_X;", "#define K_IN " + strconv.Itoa(p.Shape.K), "Data gradient"} {
			if !strings.Contains(k.Source, want) {
				t.Errorf("%s: the source lacks %q", p, want)
			}
		}
		if got := strings.Contains(k.Source, "filter = RELAYOUT_W;"); got != c.copyFilter {
			t.Errorf("%s: filter copied: %v, want %v", p, got, c.copyFilter)
		}
		if got := cands[0].Config["Fold"] == 1; got != c.folded {
			t.Errorf("%s: folded %v, want %v", p, got, c.folded)
		}
		if _, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90a"}); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		pin := maps.Clone(cands[0].Config)
		pin["StoreRows"] = 1
		if _, err := f.Render(p, pin); err == nil || !strings.Contains(err.Error(), "StoreRows") {
			t.Errorf("%s: a StoreRows pin: %v, want refused", p, err)
		}
	}
	// A pinned NCHW StoreRows tile too large for the stages is refused
	// (its FP32 channels: BN x (BM + 4) floats).
	big := problem.Problem{Shape: parseShapes(t, []string{"N=2,C=64,H=28,W=28,K=256,R=3,S=3,pad=1"})[0], Precision: problem.FP16, Layout: problem.NCHW}
	if _, err := f.Render(big, Config{"BM": 192, "BN": 256, "BK": 64, "Warpgroups": 3, "Stages": 3, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "StoreRows": 1}); err == nil || !strings.Contains(err.Error(), "does not fit over the stages") {
		t.Errorf("%s: an oversized StoreRows pin: %v, want refused", big, err)
	}
	p := problem.Problem{Shape: parseShapes(t, []string{"N=2,C=12,H=14,W=14,K=64,R=3,S=3,pad=1,bias=0"})[0], Precision: problem.FP16, Layout: problem.NCHW, Op: problem.OpDgrad}
	if err := f.Serves(p); err == nil || !strings.Contains(err.Error(), "C divisible by 8") {
		t.Errorf("%s: Serves = %v, want a refusal naming C", p, err)
	}
}

// TestWGMMAIGEMMPlaneADgrad: a 16-bit NCHW 1×1 data gradient at stride 1
// reads its A, dY, straight from the planes (PlaneA=1, no relayout) and its
// B, the filter, MN-major as every 16-bit data gradient does: PlaneA
// candidates are listed and kept, the first renders with both operands
// read transposed and compiles for sm_90a (16-byte plane copies; 8-byte
// where P·Q is a multiple of 4 only); C not a multiple of 8, a stride and
// a 3×3 are declined with the rule named.
func TestWGMMAIGEMMPlaneADgrad(t *testing.T) {
	t.Parallel() // independent of the other tests: overlaps them on every CPU (the test command's time)
	lib := nvrtctest.Open(t)
	f := WGMMAIGEMM{}
	lim := h100Limits()
	for _, c := range []struct {
		spec string
		prec problem.Precision
	}{
		{"N=2,C=64,H=16,W=16,K=128,R=1,S=1,bias=false", problem.FP16},
		{"N=3,C=40,H=10,W=12,K=13,R=1,S=1,bias=false", problem.BF16},
		{"N=3,C=32,H=14,W=14,K=48,R=1,S=1,bias=false", problem.FP16}, // P·Q = 196: 8-byte copies
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: c.prec, Layout: problem.NCHW, Op: problem.OpDgrad}
		var plane *Candidate
		for _, cand := range kept(f.Space(p, lim)) {
			if cand.Config["PlaneA"] == 1 {
				plane = &cand
				break
			}
		}
		if plane == nil {
			t.Fatalf("%s: no kept PlaneA candidate", p)
		}
		k, err := f.Render(p, plane.Config)
		if err != nil {
			t.Fatalf("%s %s: %v", p, plane.ID(), err)
		}
		for _, want := range []string{"+ a_offset_mn(e, j", "b_offset(e, jb)", "p, 1, 1, 1, 1;", "c < K;", "#define PQ (P * Q)"} {
			if !strings.Contains(k.Source, want) {
				t.Errorf("%s %s: the source lacks %q", p, plane.ID(), want)
			}
		}
		if strings.Contains(k.Source, "RELAYOUT") {
			t.Errorf("%s %s: relayed out", p, plane.ID())
		}
		res, err := memoCompile(lib, true, k.Source, nvrtc.Options{Name: k.Name + ".cu", Arch: "sm_90a"})
		if err != nil {
			t.Fatalf("%s %s: %v", p, plane.ID(), err)
		}
		if half := p.Shape.P()*p.Shape.Q()%8 != 0; !strings.Contains(res.PTX, "cp.async.cg.shared.global") || half && !strings.Contains(res.PTX, "cp.async.ca.shared.global") {
			t.Errorf("%s %s: not the plane copies (16-byte; 8-byte where P·Q %% 8 != 0)", p, plane.ID())
		}
	}
	pin := Config{"BM": 128, "BN": 128, "BK": 64, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "PlaneA": 1}
	for _, c := range []struct{ spec, want string }{
		{"N=2,C=12,H=16,W=16,K=128,R=1,S=1,bias=false", "C divisible by 8"}, // declined before PlaneA: dX's channels, the columns
		{"N=2,C=64,H=16,W=16,K=128,R=1,S=1,stride=2,bias=false", "stride 1"},
		{"N=2,C=64,H=16,W=16,K=128,R=3,S=3,pad=1,bias=false", "1x1"},
	} {
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: problem.FP16, Layout: problem.NCHW, Op: problem.OpDgrad}
		planeARefused(t, lim, p, pin, c.want)
	}
}

// planeARefused checks that wgmmaigemm lists no PlaneA candidate for p and
// refuses the PlaneA configuration pin with an error naming want.
func planeARefused(t *testing.T, lim Limits, p problem.Problem, pin Config, want string) {
	t.Helper()
	f := WGMMAIGEMM{}
	for _, cand := range f.Space(p, lim) {
		if cand.Config["PlaneA"] == 1 {
			t.Errorf("%s: PlaneA candidate %s listed", p, cand.ID())
		}
	}
	if _, err := f.Render(p, pin); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: PlaneA pin: %v, want a refusal naming %q", p, err, want)
	}
}
