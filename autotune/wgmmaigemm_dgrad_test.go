//go:build cuda

package autotune

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// TestWGMMAIGEMMDgrad tunes op=dgrad through wgmmaigemm alone (wgmma with
// the filter read MN-major, imm-trans-b, in fp16 and bf16; copied element
// by element into K-major rows in tf32) in fp16, bf16 and tf32 NHWC on
// ResNet-50's stride-1 s1-3x3 (56², C=K=64) and s3-3x3 (14², C=K=256) and
// a 1x1 (56², C=64 → K=256) at N=32, and an odd dilated shape (partial
// pixel and channel tiles, padding 2 with dilation 2): pinned to three of
// the family's kept configurations (the first, middle and last), plus
// split-K kernels rendered by the test (the reduction over a cluster of 2
// or 4 blocks) and, on the odd shape in fp16 and tf32, the producer
// warpgroup, and in tf32 A through registers (ARegs). Every kernel must
// pass the float64 checks within the
// precision's bound; the medians are logged. sm_90 only; 12 tuning runs,
// about 53 kernels.
func TestWGMMAIGEMMDgrad(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	cases := []struct {
		shape string
		tiles []splitTile
	}{
		{"N=32,C=64,H=56,W=56,K=64,R=3,S=3,pad=1", []splitTile{{128, 2, 128, 1, 4, 2}}},
		{"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1", []splitTile{{128, 2, 128, 1, 4, 2}, {64, 1, 128, 2, 4, 4}}},
		{"N=32,C=64,H=56,W=56,K=256,R=1,S=1", []splitTile{{64, 1, 64, 1, 4, 2}}},
		{"N=3,C=24,H=9,W=11,K=40,R=3,S=3,pad=2,dilation=2", []splitTile{{64, 1, 64, 1, 4, 2}}},
	}
	for i, tc := range cases {
		shape, err := problem.ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		for _, prec := range []problem.Precision{problem.FP16, problem.BF16, problem.TF32} {
			p := problem.Problem{Shape: shape, Precision: prec, Layout: problem.NHWC, Op: problem.OpDgrad}
			t.Run(p.String(), func(t *testing.T) {
				kept := keptOf(t, p, lim, "wgmmaigemm")
				if len(kept) == 0 {
					t.Fatal("no kept wgmmaigemm dgrad candidate")
				}
				pins := []string{kept[0].ID()}
				for _, c := range []kernels.Candidate{kept[len(kept)/2], kept[len(kept)-1]} {
					if c.ID() != pins[len(pins)-1] {
						pins = append(pins, c.ID())
					}
				}
				cfgs := make([]kernels.Config, 0, len(tc.tiles)+1)
				for _, st := range tc.tiles {
					cfgs = append(cfgs, st.config(prec))
				}
				if i == len(cases)-1 && prec != problem.BF16 {
					cfgs = append(cfgs, kernels.Config{"BM": 128, "BN": 64, "BK": 128 / prec.ElementBytes(), "Warpgroups": 1, "Stages": 4,
						"BlocksPerSM": 1, "Producer": 1, "Swizzle": 1})
				}
				if prec == problem.TF32 {
					// A through registers (ARegs), split and, on the odd
					// shape, with the producer warpgroup.
					c := tc.tiles[0].config(prec)
					c["ARegs"] = 1
					cfgs = append(cfgs, c)
					if i == len(cases)-1 {
						cfgs = append(cfgs, kernels.Config{"BM": 128, "BN": 64, "BK": 32, "Warpgroups": 1, "Stages": 4,
							"BlocksPerSM": 1, "Producer": 1, "Swizzle": 1, "ARegs": 1})
					}
				}
				var extra []kernels.Kernel
				configOf := map[string]string{}
				for _, cfg := range cfgs {
					k, err := kernels.RenderCandidate(p, kernels.Candidate{Family: "wgmmaigemm", Config: cfg})
					if err != nil {
						t.Fatalf("render %s: %v", cfg, err)
					}
					if k.Grid[2] != max(1, cfg["SplitK"]) || !strings.Contains(k.Name, "_dgrad_") {
						t.Fatalf("%s: kernel %s, grid %v; want a dgrad kernel with z = SplitK", cfg, k.Name, k.Grid)
					}
					extra = append(extra, k)
					configOf[k.Family+"/"+k.Name] = k.Config.String()
				}
				res := tunePins(t, lib, worker, p, pins, extra, 23)
				if res.Winner == nil || res.Winner.Family != "wgmmaigemm" {
					t.Errorf("winner %v, want a wgmmaigemm kernel", res.Winner)
				}
				for _, tr := range res.Trials {
					if tr.Family != "wgmmaigemm" || (tr.Status == StatusSkipped || tr.Status == StatusRejected) {
						continue
					}
					cfg := configOf[tr.ID]
					if cfg == "" {
						cfg = tr.ID
					}
					t.Logf("%s: %s, %.4f ms, error %.2e (sampled %.2e)", cfg, tr.Status, tr.MedianMS, tr.RelError, tr.SampleError)
				}
			})
		}
	}
}

// TestWGMMAIGEMMDgradFold tunes folded tf32 data gradients (Fold=1: the
// stride phases as the GEMM's columns, B gathered element by element)
// through wgmmaigemm alone, in both layouts: the flagship's geometry at a
// small size (C=3, 11x11, stride 4), one whose row phases 2 and 3 meet no
// tap (their dX must come out zero), asymmetric strides with odd C and K
// (NCHW only in NHWC's stead where K is not a multiple of 4), a 7x7
// stride-2 stem, a ResNet-like stride-2 3x3 with C=64 (folded columns in
// several tiles) and a stride-1 3x3 in NCHW (NCHW dgrad is always folded).
// Pinned: the first and last kept configurations, and on the first shape
// the tile of its 48 columns with A through registers and with the
// producer warpgroup. Every kernel must pass the float64 checks within
// tf32's bound. 11 tuning runs, about 30 kernels.
func TestWGMMAIGEMMDgradFold(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	tf32, nhwc, nchw := problem.TF32, problem.NHWC, problem.NCHW
	runDgradCases(t, []dgradCase{
		{"N=2,C=3,H=31,W=29,K=16,R=11,S=11,stride=4,pad=2", []precLayout{{tf32, nhwc}, {tf32, nchw}}},
		{"N=2,C=6,H=15,W=16,K=20,R=2,S=3,stride=4,pad=1,dilation_h=4,bias=false", []precLayout{{tf32, nhwc}, {tf32, nchw}}},
		{"N=3,C=5,H=19,W=23,K=17,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_w=2", []precLayout{{tf32, nchw}}},
		{"N=2,C=3,H=40,W=40,K=64,R=7,S=7,stride=2,pad=3", []precLayout{{tf32, nhwc}, {tf32, nchw}}},
		{"N=4,C=64,H=28,W=28,K=32,R=3,S=3,stride=2,pad=1", []precLayout{{tf32, nhwc}, {tf32, nchw}}},
		{"N=4,C=24,H=14,W=14,K=40,R=3,S=3,pad=1", []precLayout{{tf32, nchw}}},
	}, func(t *testing.T, p problem.Problem) {
		kept := keptOf(t, p, lim, "wgmmaigemm")
		if len(kept) == 0 {
			t.Fatal("no kept folded wgmmaigemm candidate")
		}
		pins := []string{kept[0].ID()}
		if last := kept[len(kept)-1].ID(); last != pins[0] {
			pins = append(pins, last)
		}
		var extra []kernels.Kernel
		if p.Shape.C == 3 && p.Shape.StrideH == 4 {
			for _, cfg := range []kernels.Config{
				{"BM": 128, "BN": 48, "BK": 32, "Warpgroups": 2, "Stages": 4, "BlocksPerSM": 1, "Producer": 0, "Swizzle": 1, "Fold": 1, "ARegs": 1},
				{"BM": 128, "BN": 48, "BK": 32, "Warpgroups": 1, "Stages": 4, "BlocksPerSM": 1, "Producer": 1, "Swizzle": 1, "Fold": 1},
			} {
				k, err := kernels.RenderCandidate(p, kernels.Candidate{Family: "wgmmaigemm", Config: cfg})
				if err != nil {
					t.Fatalf("render %s: %v", cfg, err)
				}
				extra = append(extra, k)
			}
		}
		tuneFoldedPins(t, lib, worker, p, pins, extra, 31)
	})
}

// TestWGMMAIGEMMDgradFoldHalf tunes folded 16-bit data gradients
// (wgmmaigemm, Fold=1, NHWC: B copied 16 bytes of one phase's channels,
// MN-major) in fp16 and bf16: a ResNet-like 3x3 stride 2 (folded columns in
// several tiles), a 1x1 stride 2 (three of four phases meet no tap: their
// dX must come out zero), asymmetric strides with dilation on an odd map
// (columns past CF in the last tile), a 5x5 at stride 4 and a wider 3x3
// stride 2. Pinned: the first, middle and last kept configurations (Fold
// never splits K); every kernel must pass the float64 checks within the
// precision's bound. 7 tuning runs, about 21 kernels.
func TestWGMMAIGEMMDgradFoldHalf(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	fp16, bf16, nhwc := problem.FP16, problem.BF16, problem.NHWC
	runDgradCases(t, []dgradCase{
		{"N=4,C=64,H=28,W=28,K=32,R=3,S=3,stride=2,pad=1", []precLayout{{fp16, nhwc}, {bf16, nhwc}}},
		{"N=3,C=48,H=14,W=14,K=64,R=1,S=1,stride=2,bias=false", []precLayout{{fp16, nhwc}, {bf16, nhwc}}},
		{"N=3,C=16,H=19,W=23,K=24,R=3,S=5,stride_h=2,stride_w=3,pad_h=1,pad_w=2,dilation_w=2", []precLayout{{fp16, nhwc}}},
		{"N=2,C=8,H=21,W=18,K=32,R=5,S=5,stride=4,pad=2,bias=false", []precLayout{{bf16, nhwc}}},
		{"N=8,C=128,H=14,W=14,K=128,R=3,S=3,stride=2,pad=1", []precLayout{{fp16, nhwc}}},
	}, func(t *testing.T, p problem.Problem) {
		kept := keptOf(t, p, lim, "wgmmaigemm")
		if len(kept) == 0 {
			t.Fatal("no kept folded wgmmaigemm candidate")
		}
		tuneFoldedPins(t, lib, worker, p, firstMiddleLast(kept), nil, 37)
	})
}

// TestWGMMAIGEMMStoreRows measures the epilogue through shared memory
// (StoreRows=1: the tile's FP32 rows staged over the stages, 16-byte
// stores along a pixel's channels) against the register epilogue's
// 4-byte channel pairs on ResNet-50 N=32 layers where the stores weigh
// (1x1 layers, a data gradient) and a 3x3 one, fp16 and tf32 NHWC: for
// each, the three cheapest kept unsplit, unfolded Producer=0 tiles by the
// cost model and their StoreRows twins (rendered by the test), all
// checked against float64 within the precision's bound, medians logged
// side by side.
func TestWGMMAIGEMMStoreRows(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	lim.SMs = 132
	for _, c := range []struct {
		spec string
		prec problem.Precision
		op   problem.Op
	}{
		{"N=32,C=64,H=56,W=56,K=64,R=1,S=1", problem.FP16, problem.OpFprop},
		{"N=32,C=64,H=56,W=56,K=256,R=1,S=1", problem.FP16, problem.OpFprop},
		{"N=32,C=256,H=56,W=56,K=64,R=1,S=1", problem.FP16, problem.OpFprop},
		{"N=32,C=512,H=7,W=7,K=2048,R=1,S=1", problem.FP16, problem.OpFprop},
		{"N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1", problem.FP16, problem.OpFprop},
		{"N=32,C=64,H=56,W=56,K=256,R=1,S=1", problem.TF32, problem.OpFprop},
		{"N=32,C=64,H=56,W=56,K=64,R=1,S=1,bias=false", problem.FP16, problem.OpDgrad},
		{"N=32,C=1024,H=14,W=14,K=256,R=1,S=1,bias=false", problem.FP16, problem.OpDgrad},
	} {
		s, err := problem.ParseShape(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		p := problem.Problem{Shape: s, Precision: c.prec, Layout: problem.NHWC, Op: c.op}
		t.Run(p.String(), func(t *testing.T) {
			kept := keptOf(t, p, lim, "wgmmaigemm")
			slices.SortStableFunc(kept, func(a, b kernels.Candidate) int {
				ca, _ := kernels.PredictedCost(p, a, lim)
				cb, _ := kernels.PredictedCost(p, b, lim)
				return cmp.Compare(ca, cb)
			})
			var pins []string
			var extra []kernels.Kernel
			for _, k := range kept {
				if len(pins) == 3 {
					break
				}
				if k.Config["SplitK"] > 1 || k.Config["Fold"] == 1 || k.Config["Producer"] != 0 {
					continue
				}
				twin := maps.Clone(k.Config)
				twin["StoreRows"] = 1
				kern, err := kernels.RenderCandidate(p, kernels.Candidate{Family: "wgmmaigemm", Config: twin})
				if err != nil {
					continue // its tile does not fit over the stages
				}
				pins = append(pins, k.ID())
				extra = append(extra, kern)
			}
			if len(pins) == 0 {
				t.Fatal("no tile with a StoreRows twin")
			}
			res := tunePins(t, lib, worker, p, pins, extra, 41)
			for _, tr := range res.Trials {
				if tr.Status == StatusOK {
					t.Logf("%s: %.4f ms, error %.2e", tr.Config, tr.MedianMS, tr.RelError)
				}
			}
		})
	}
}

// TestWGMMAIGEMMStoreRowsChains: StoreRows kernels apply epilogue chains
// on their way out (the residual's run read 16 bytes at a time): fp16 and
// bf16 NHWC, a 1x1 and a 3x3 with odd sizes, the chains scale_shift,relu,
// residual(0.5),relu, residual and gelu_tanh,leaky_relu(0.1), each pinned
// to the first two kept StoreRows twins and the first plain tile; every
// kernel must pass the float64 checks (the chain applied by the
// reference) within the precision's bound. 16 tuning runs, 48 kernels.
func TestWGMMAIGEMMStoreRowsChains(t *testing.T) {
	lib, worker, lim := sm90aSetup(t)
	lim.SMs = 132
	shapes := []string{"N=3,C=64,H=13,W=15,K=40,R=1,S=1", "N=2,C=32,H=17,W=11,K=48,R=3,S=3,pad=1,stride=2"}
	chains := []string{"scale_shift,relu", "residual(0.5),relu", "residual", "gelu_tanh,leaky_relu(0.1)"}
	for i, spec := range shapes {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for j, chain := range chains {
			c, err := epilogue.Parse(chain)
			if err != nil {
				t.Fatal(err)
			}
			for _, prec := range []problem.Precision{problem.FP16, problem.BF16} {
				if (i+j)%2 == 1 && prec == problem.BF16 {
					continue // bf16 on half the (shape, chain) pairs
				}
				p := problem.Problem{Shape: s, Precision: prec, Layout: problem.NHWC, Epilogue: c}
				t.Run(p.String()+"_"+chain, func(t *testing.T) {
					var pins []string
					plain := ""
					for _, k := range keptOf(t, p, lim, "wgmmaigemm") {
						switch {
						case k.Config["StoreRows"] == 1 && len(pins) < 2:
							pins = append(pins, k.ID())
						case k.Config["StoreRows"] == 0 && plain == "":
							plain = k.ID()
						}
					}
					if len(pins) == 0 || plain == "" {
						t.Fatalf("kept StoreRows twins %v, plain %q", pins, plain)
					}
					res := tunePins(t, lib, worker, p, append(pins, plain), nil, 43)
					for _, tr := range res.Trials {
						if tr.Status == StatusOK {
							t.Logf("%s: %.4f ms, error %.2e", tr.ID, tr.MedianMS, tr.RelError)
						}
					}
				})
			}
		}
	}
}
