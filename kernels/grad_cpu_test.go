package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/convgen/convgen/convrt"
	"github.com/convgen/convgen/problem"
)

// The dgrad and wgrad kernels run here, without a GPU, compiled as C++ with
// cpuShim (see TestDepthwiseOnCPU) and launched on a grid of half their
// blocks, so that every kernel's grid-stride loop over its blocks runs too.
// Go writes their inputs, random values of the element type, to files;
// the C++ main runs the kernel and writes its outputs back (poisoned with
// NaN first, so an unwritten element shows); Go compares them with the
// float64 gradients computed here by scattering the forward convolution's
// terms (dX[n,c,h,w] += dY·W, dW[k,c,r,s] += dY·X, dBias[k] += dY), a form
// independent of the kernels' gather and reduction. It checks the indexing,
// predication and reductions of the rendered source, not the GPU's
// arithmetic; the GPU check is autotune's TestGradShapes.

// gradMain reads the two inputs, launches the kernel and writes the
// outputs; %[1]s is the kernel, then threads, the grid it runs, shared
// bytes, the element counts of out, in, filter and bias, and the output
// element's C type.
const gradMain = `
template <class T> static void cpu_read(const char* name, std::vector<T>& v) {
    FILE* f = fopen(name, "rb");
    if (!f || fread(v.data(), sizeof(T), v.size(), f) != v.size()) { fprintf(stderr, "read %%s\n", name); exit(2); }
    fclose(f);
}
template <class T> static void cpu_write(const char* name, const std::vector<T>& v) {
    FILE* f = fopen(name, "wb");
    if (!f || fwrite(v.data(), sizeof(T), v.size(), f) != v.size()) { fprintf(stderr, "write %%s\n", name); exit(2); }
    fclose(f);
}
int main() {
    std::vector<elem_t> out(%[5]d), in(%[6]d), flt(%[7]d);
    std::vector<float> bias(%[8]d + 1, NAN);
    cpu_read("in.bin", in);
    cpu_read("flt.bin", flt);
    for (auto& v : out) v = from_float(NAN);
    cpu_launch(%[3]d, %[2]d, %[4]d, [&] { %[1]s(out.data(), in.data(), flt.data(), (%[9]s*)(%[8]d ? bias.data() : nullptr)); });
    cpu_write("out.bin", out);
    bias.pop_back();
    cpu_write("bias.bin", bias);
    return 0;
}
`

// gradCodec reads and writes p's element type.
type gradCodec struct {
	bytes  int
	encode func(float32) uint32
	decode func(uint32) float64
}

func codecOf(p problem.Precision) gradCodec {
	switch p {
	case problem.FP16:
		return gradCodec{2, func(f float32) uint32 { return uint32(convrt.FP16FromFloat32(f)) }, func(u uint32) float64 { return convrt.FP16ToFloat64(uint16(u)) }}
	case problem.BF16:
		return gradCodec{2, func(f float32) uint32 { return uint32(convrt.BF16FromFloat32(f)) }, func(u uint32) float64 { return convrt.BF16ToFloat64(uint16(u)) }}
	}
	return gradCodec{4, math.Float32bits, func(u uint32) float64 { return float64(math.Float32frombits(u)) }}
}

// randomTensor is n random elements in [-1, 1) of the codec's type: their
// bytes and their values.
func (c gradCodec) randomTensor(rng *rand.Rand, n int) ([]byte, []float64) {
	b := make([]byte, n*c.bytes)
	v := make([]float64, n)
	for i := range n {
		u := c.encode(float32(2*rng.Float64() - 1))
		if c.bytes == 2 {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(u))
		} else {
			binary.LittleEndian.PutUint32(b[4*i:], u)
		}
		v[i] = c.decode(u)
	}
	return b, v
}

// values decodes a tensor's bytes.
func (c gradCodec) values(b []byte) []float64 {
	v := make([]float64, len(b)/c.bytes)
	for i := range v {
		if c.bytes == 2 {
			v[i] = c.decode(uint32(binary.LittleEndian.Uint16(b[2*i:])))
		} else {
			v[i] = c.decode(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	return v
}

// gradIndex gives the offsets of X (or dX), dY and W (or dW) elements in
// p's layout.
type gradIndex struct{ p problem.Problem }

func (g gradIndex) x(n, c, h, w int) int {
	s := g.p.Shape
	if g.p.Layout == problem.NHWC {
		return ((n*s.H+h)*s.W+w)*s.C + c
	}
	return ((n*s.C+c)*s.H+h)*s.W + w
}

func (g gradIndex) y(n, k, p, q int) int {
	s := g.p.Shape
	if g.p.Layout == problem.NHWC {
		return ((n*s.P()+p)*s.Q()+q)*s.K + k
	}
	return ((n*s.K+k)*s.P()+p)*s.Q() + q
}

func (g gradIndex) w(k, c, r, t int) int {
	s := g.p.Shape
	cg := s.C / s.Groups
	if g.p.Layout == problem.NHWC {
		return ((k*s.R+r)*s.S+t)*cg + c
	}
	return ((k*cg+c)*s.R+r)*s.S + t
}

// gradReference computes p's gradients in float64 from in and flt (the
// kernel's second and third operands) by visiting every term of the forward
// convolution: out is dX (dgrad) or dW (wgrad), bias dBias (wgrad with bias).
func gradReference(p problem.Problem, in, flt []float64) (out, bias []float64) {
	s := p.Shape
	ix := gradIndex{p}
	ops := p.Operands()
	out, bias = make([]float64, ops[0].Elems), make([]float64, ops[3].Elems)
	cg, kg := s.C/s.Groups, s.K/s.Groups
	for n := range s.N {
		for k := range s.K {
			for pp := range s.P() {
				for q := range s.Q() {
					dy := 0.0
					if p.Op == problem.OpDgrad {
						dy = in[ix.y(n, k, pp, q)]
					} else {
						dy = flt[ix.y(n, k, pp, q)]
						if s.Bias {
							bias[k] += dy
						}
					}
					for c := range cg {
						for r := range s.R {
							h := pp*s.StrideH - s.PadH + r*s.DilationH
							if h < 0 || h >= s.H {
								continue
							}
							for t := range s.S {
								w := q*s.StrideW - s.PadW + t*s.DilationW
								if w < 0 || w >= s.W {
									continue
								}
								xc := k/kg*cg + c
								if p.Op == problem.OpDgrad {
									out[ix.x(n, xc, h, w)] += dy * flt[ix.w(k, c, r, t)]
								} else {
									out[ix.w(k, c, r, t)] += dy * in[ix.x(n, xc, h, w)]
								}
							}
						}
					}
				}
			}
		}
	}
	return out, bias
}

// gradShapes are the small odd shapes the CPU runs cover: groups and
// depthwise, stride 2 and per-axis strides, dilation 2, asymmetric pads,
// odd channel counts, N = 1, R ≠ S, 1×1, no bias.
var gradShapes = []string{
	"N=2,C=3,H=9,W=11,K=5,R=3,S=3,pad=1",
	"N=1,C=6,H=10,W=9,K=4,R=3,S=2,stride=2,pad_h=1,pad_w=0,groups=2",
	"N=2,C=4,H=12,W=10,K=4,R=3,S=3,pad=2,dilation=2,groups=4,bias=false",
	"N=1,C=5,H=11,W=13,K=7,R=2,S=3,stride_h=2,stride_w=3,pad_h=0,pad_w=2,dilation_w=2",
	"N=3,C=3,H=7,W=7,K=6,R=1,S=1,groups=3",
	"N=1,C=2,H=8,W=8,K=3,R=5,S=5,stride=2,pad=2",
	// 3,520 output pixels: wgrad's threads sum several chunks of theirs.
	"N=2,C=2,H=40,W=44,K=3,R=3,S=3,pad=1",
}

// gradCPUConfigs are the configurations the CPU runs use per family: every
// value of every knob but the 512-thread blocks (the same code, slow on
// the CPU's threads).
var gradCPUConfigs = map[string][]Config{
	"dgrad": {{"Threads": 64, "Elems": 1}, {"Threads": 128, "Elems": 4}, {"Threads": 256, "Elems": 2}},
	"wgrad": {{"Threads": 64, "Outs": 1}, {"Threads": 128, "Outs": 8}, {"Threads": 64, "Outs": 4}, {"Threads": 256, "Outs": 2}},
}

// TestGradOnCPU runs dgrad and wgrad kernels of gradShapes on the CPU and
// checks every output against the float64 gradients: each shape and op in
// one of FP32 and FP16 and one layout, in turn (each op meets both
// precisions in both layouts over the shapes), with the op's
// configurations of gradCPUConfigs in turn (each op runs every one of its
// configurations, the 256-thread ones, the slowest on the CPU's threads,
// once or twice); under CONVGEN_FULL_SWEEP=1 every precision, both layouts
// and every configuration. It needs g++ 12 or newer.
func TestGradOnCPU(t *testing.T) {
	t.Parallel() // CPU-bound and independent: overlaps the other CPU runs (the test command's time)
	gxx, dir := cpuCompiler(t)
	full := os.Getenv("CONVGEN_FULL_SWEEP") == "1"
	precs := []problem.Precision{problem.FP32, problem.FP16}
	if full {
		precs = problem.Precisions
	}
	bounds := map[problem.Precision]float64{problem.FP32: 1e-5, problem.TF32: 1e-5, problem.TF32x3: 1e-5, problem.FP16: 2e-3, problem.BF16: 1e-2}
	type job struct {
		id string
		p  problem.Problem
		k  Kernel
	}
	var jobs []job
	turn := map[problem.Op]int{} // each op's configurations in turn
	for i, spec := range gradShapes {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for o, op := range []problem.Op{problem.OpDgrad, problem.OpWgrad} {
			for j, prec := range precs {
				for l, lay := range problem.Layouts {
					if !full && (j != (i+o)%2 || l != (i/2+o)%2) {
						continue // one precision and layout per shape and op, in turn: each op meets FP32 and FP16 in both layouts
					}
					p := problem.Problem{Shape: s, Precision: prec, Layout: lay, Op: op}
					f, err := FamilyByName(op.String())
					if err != nil {
						t.Fatal(err)
					}
					cfgs := gradCPUConfigs[f.Name()]
					if !full {
						cfgs = []Config{cfgs[turn[op]%len(cfgs)]}
						turn[op]++
					}
					for _, cfg := range cfgs {
						k, err := f.Render(p, cfg)
						if err != nil {
							t.Fatalf("%s %s: %v", p, cfg, err)
						}
						jobs = append(jobs, job{fmt.Sprintf("%s %s/%s", p, f.Name(), cfg), p, k})
					}
				}
			}
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if msg := runGradOnCPU(gxx, filepath.Join(dir, fmt.Sprintf("g%d", i)), j.p, j.k, bounds[j.p.Precision], int64(i)); msg != "" {
				t.Errorf("%s: %s", j.id, msg)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d gradient kernels run on the CPU", len(jobs))
}

// runGradOnCPU builds and runs kernel k of p in directory dir and checks
// its outputs against gradReference within bound (relative to the largest
// reference value); it returns what is wrong, or "".
func runGradOnCPU(gxx, dir string, p problem.Problem, k Kernel, bound float64, seed int64) string {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err.Error()
	}
	ops := p.Operands()
	codec := codecOf(p.Precision)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	inBytes, in := codec.randomTensor(rng, ops[1].Elems)
	fltBytes, flt := codec.randomTensor(rng, ops[2].Elems)
	for name, b := range map[string][]byte{"in.bin": inBytes, "flt.bin": fltBytes} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err.Error()
		}
	}
	src := sharedDecl.ReplaceAllString(k.Source, "float* $1 = cpu_smem;")
	src = cvtToF32.ReplaceAllString(src, "$1 = cpu_h2f($2);")
	src = cvtToF16.ReplaceAllString(src, "$1 = cpu_f2h($2);")
	biasType := "elem_t"
	if p.Op == problem.OpWgrad {
		biasType = "float"
	}
	// Half the blocks, so that each thread's grid-stride loop takes a
	// second step.
	grid := max(1, (k.Grid[0]+1)/2)
	src = cpuShim + src + fmt.Sprintf(gradMain, k.Name, k.Block[0], grid, k.SharedBytes,
		ops[0].Elems, ops[1].Elems, ops[2].Elems, ops[3].Elems, biasType)
	cpp := filepath.Join(dir, "k.cpp")
	if err := os.WriteFile(cpp, []byte(src), 0o644); err != nil {
		return err.Error()
	}
	exe := filepath.Join(dir, "k")
	if out, err := cpuBuild(gxx, exe, cpp); err != nil {
		return fmt.Sprintf("g++: %v\n%s", err, firstLines(string(out), 30))
	}
	run := exec.Command(exe)
	run.Dir = dir
	if out, err := run.CombinedOutput(); err != nil {
		return fmt.Sprintf("run: %v: %s", err, out)
	}
	outBytes, err := os.ReadFile(filepath.Join(dir, "out.bin"))
	if err != nil {
		return err.Error()
	}
	biasBytes, err := os.ReadFile(filepath.Join(dir, "bias.bin"))
	if err != nil {
		return err.Error()
	}
	got := codec.values(outBytes)
	gotBias := codecOf(problem.FP32).values(biasBytes)
	want, wantBias := gradReference(p, in, flt)
	var msgs []string
	for _, c := range []struct {
		name      string
		got, want []float64
	}{{ops[0].Name, got, want}, {"dBias", gotBias, wantBias}} {
		if len(c.got) != len(c.want) {
			msgs = append(msgs, fmt.Sprintf("%s: %d values, want %d", c.name, len(c.got), len(c.want)))
			continue
		}
		var maxErr, maxRef float64
		bad := 0
		for i := range c.want {
			if math.IsNaN(c.got[i]) {
				bad++
				continue
			}
			maxErr = math.Max(maxErr, math.Abs(c.got[i]-c.want[i]))
			maxRef = math.Max(maxRef, math.Abs(c.want[i]))
		}
		if bad > 0 || maxErr > bound*maxRef {
			msgs = append(msgs, fmt.Sprintf("%s: %d of %d not written, max error %.3g of max |value| %.3g (bound %.0e)", c.name, bad, len(c.want), maxErr, maxRef, bound))
		}
	}
	return strings.Join(msgs, "; ")
}

// widen turns the source of a 32-bit dgrad or wgrad kernel into its 64-bit
// path (IDX64), as the template renders it for a shape that needs one:
// idx_t long long and the element counts as long long literals.
func widen(t *testing.T, src string) string {
	t.Helper()
	out := strings.Replace(src, "#define IDX64 0", "#define IDX64 1", 1)
	out = strings.Replace(out, "typedef int idx_t;", "typedef long long idx_t;", 1)
	out = countDefine.ReplaceAllString(out, "${1}LL")
	if out == src || !strings.Contains(out, "typedef long long idx_t;") {
		t.Fatalf("cannot widen the source:\n%s", firstLines(src, 40))
	}
	return out
}

// countDefine matches the element and block counts the 64-bit path writes
// as long long literals.
var countDefine = regexp.MustCompile(`(?m)^(#define (?:TOTAL|BLOCKS|M|DW_TOTAL|DW_BLOCKS) \d+)`)

// TestGradIndex64OnCPU runs the 64-bit path of dgrad and wgrad (long long
// offsets, as shapes with tensors of 2^31 elements or more render it) on
// small shapes on the CPU against float64, in FP32 and FP16 (by default
// each op in each precision once, on two of the shapes, in both layouts:
// the large one for wgrad's sums over several chunks; the whole shape ×
// op × precision grid under the full sweep): TestGradOnCPU covers the
// 32-bit path, TestGradIndex64 that large shapes render this one.
func TestGradIndex64OnCPU(t *testing.T) {
	t.Parallel() // CPU-bound and independent: overlaps the other CPU runs (the test command's time)
	gxx, dir := cpuCompiler(t)
	big := gradProblem(t, kb87Spec, problem.FP16, problem.NHWC, problem.OpWgrad)
	k, err := Wgrad{}.Render(big, Config{"Threads": 64, "Outs": 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"#define IDX64 1", "typedef long long idx_t;"} {
		if !strings.Contains(k.Source, line) {
			t.Fatalf("the 64-bit path no longer renders %q: update widen", line)
		}
	}
	bounds := map[problem.Precision]float64{problem.FP32: 1e-5, problem.FP16: 2e-3}
	full := os.Getenv("CONVGEN_FULL_SWEEP") == "1"
	i := 0
	for si, spec := range []string{gradShapes[1], gradShapes[3], gradShapes[6]} {
		for oi, op := range []problem.Op{problem.OpDgrad, problem.OpWgrad} {
			for pi, prec := range []problem.Precision{problem.FP32, problem.FP16} {
				if !full && si != oi+pi {
					continue // by default each op in each precision once, on two of the shapes (all under the full sweep)
				}
				lay := problem.Layouts[i%2]
				if !full {
					lay = problem.Layouts[(oi+pi)%2] // each op in both layouts
				}
				p := gradProblem(t, spec, prec, lay, op)
				f, err := FamilyByName(op.String())
				if err != nil {
					t.Fatal(err)
				}
				cfgs := gradCPUConfigs[f.Name()]
				k, err := f.Render(p, cfgs[i%len(cfgs)])
				if err != nil {
					t.Fatal(err)
				}
				k.Source = widen(t, k.Source)
				if msg := runGradOnCPU(gxx, filepath.Join(dir, fmt.Sprintf("w%d", i)), p, k, bounds[prec], int64(100+i)); msg != "" {
					t.Errorf("%s 64-bit %s: %s", p, k.Config, msg)
				}
				i++
			}
		}
	}
}
