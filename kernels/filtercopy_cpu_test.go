package kernels

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// The filter copies of wgmmaigemm's data gradients (FlipFilter's flipped
// filter, PhaseFilter's per-phase filters) run here without a GPU: the
// rendered source up to the copy's claims (its constants, tables and
// rl_unit; every other device function dropped) is compiled as C++ with
// cpuShim, and every unit is copied by a block of 128, 256 and 384
// threads (the prologue's size and the kernels' own, for a launch without
// the prologue). The copy made 16 bytes at a time (VecCopy) must equal,
// bit for bit, the element copy's, which the GPU tests have checked
// against float64 through the kernels, and leave nothing of the poison
// the copy starts from; the flipped filter is also checked against its
// definition, W'[c][R−1−r][S−1−s][k] = W[k][r][s][c] (rounded to TF32 in
// tf32).

// filterCopyMain copies every unit (RL_UNITS) with blocks of each size,
// writing RELAYOUT_W to copy-THREADS.bin after each; %[1]s is the filter's
// element count, %[2]s the buffer's bytes.
const filterCopyMain = `
int main() {
    std::vector<elem_t> filter(%[1]d);
    unsigned s = 12345;
    for (auto& v : filter) {
        s = s * 1664525u + 1013904223u;
#if HALF
        v = (elem_t)(s >> 16) & 0x7bff;  // finite fp16/bf16 bit patterns
#else
        v = ((float)(s >> 8) / 16777216.0f - 0.5f) * 3.0f;
#endif
    }
    FILE* f = fopen("filter.bin", "wb");
    fwrite(filter.data(), sizeof(elem_t), filter.size(), f);
    fclose(f);
    for (int threads : {128, 256, 384}) {
        memset(RELAYOUT_W, 0xff, sizeof(RELAYOUT_W));  // poison: NaN in every type
        cpu_launch(RL_UNITS, threads, %[2]d, [&] { blockDim = {threads, 1, 1}; rl_unit(nullptr, filter.data(), reinterpret_cast<elem_t*>(cpu_smem), blockIdx.x); });
        char name[32];
        snprintf(name, sizeof name, "copy-%%d.bin", threads);
        f = fopen(name, "wb");
        fwrite(RELAYOUT_W, 1, sizeof(RELAYOUT_W), f);
        fclose(f);
    }
    return 0;
}
`

// filterCopySource is the C++ program that runs kernel k's filter copy:
// k's source up to its claims (rl_acquire), with every device function
// but tf32, fold_tap and rl_unit dropped.
func filterCopySource(t *testing.T, k Kernel, filterElems int) string {
	t.Helper()
	end := strings.Index(k.Source, "__device__ __forceinline__ unsigned long long rl_acquire(")
	if end < 0 {
		t.Fatalf("%s: no filter copy's claims in the source", k.Name)
	}
	src := k.Source[:end]
	keep := map[string]bool{"tf32": true, "fold_tap": true, "rl_unit": true}
	const fn = "__device__ __forceinline__ "
	var b strings.Builder
	for {
		i := strings.Index(src, fn)
		if i < 0 {
			b.WriteString(src)
			break
		}
		open := strings.IndexByte(src[i:], '(')
		sig := strings.Fields(src[i+len(fn) : i+open])
		name := sig[len(sig)-1]
		body := i + strings.IndexByte(src[i:], '{')
		depth, j := 0, body
		for ; j < len(src); j++ {
			if src[j] == '{' {
				depth++
			} else if src[j] == '}' {
				if depth--; depth == 0 {
					break
				}
			}
		}
		start := i
		if line := strings.LastIndexByte(strings.TrimRight(src[:i], "\n"), '\n'); strings.HasPrefix(src[line+1:i], "template <") {
			start = line + 1 // the function's template line goes with it
		}
		if keep[name] {
			b.WriteString(src[:j+1])
		} else {
			b.WriteString(src[:start])
		}
		src = src[j+1:]
	}
	shim := cpuShim + "#define __constant__\nstatic thread_local cpu_dim3 blockDim;\nstatic inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }\n"
	return shim + b.String() + fmt.Sprintf(filterCopyMain, filterElems, 64*66*4)
}

// runFilterCopy builds and runs kernel k's filter copy on the CPU in dir
// and returns the filter and the copies made by blocks of 128, 256 and 384
// threads.
func runFilterCopy(t *testing.T, gxx, dir string, k Kernel, filterElems int) (filter []byte, copies [][]byte) {
	t.Helper()
	cpp := filepath.Join(dir, "copy.cpp")
	if err := os.WriteFile(cpp, []byte(filterCopySource(t, k, filterElems)), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "copy")
	if out, err := cpuBuild(gxx, exe, cpp); err != nil {
		t.Fatalf("%s: g++: %v\n%s", k.Name, err, firstLines(string(out), 30))
	}
	run := exec.Command(exe)
	run.Dir = dir
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("%s: run: %v: %s", k.Name, err, out)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	filter = read("filter.bin")
	for _, threads := range []int{128, 256, 384} {
		copies = append(copies, read(fmt.Sprintf("copy-%d.bin", threads)))
	}
	return filter, copies
}

// TestWGMMAIGEMMFilterCopyOnCPU runs the element and the vector (VecCopy)
// copies of filterCopyCases's flipped and phase filters on the CPU and
// compares them.
func TestWGMMAIGEMMFilterCopyOnCPU(t *testing.T) {
	t.Parallel()
	gxx, dir := cpuCompiler(t)
	for i, c := range filterCopyCases {
		if !fullSweep() && !filterCopySampled[i] {
			continue // every case with the full sweep
		}
		p := problem.Problem{Shape: parseShapes(t, []string{c.spec})[0], Precision: c.prec, Layout: problem.NHWC, Op: problem.OpDgrad}
		s := p.Shape
		n := s.K * s.R * s.S * s.C
		elems, vec := renderTwins(t, p, c.cfg, "VecCopy")
		sub := filepath.Join(dir, fmt.Sprint(i))
		for _, d := range []string{sub + "e", sub + "v"} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		filter, ref := runFilterCopy(t, gxx, sub+"e", elems, n)
		eb := p.Precision.ElementBytes()
		poison := bytes.Repeat([]byte{0xff}, eb)
		for j := 0; j < n; j++ {
			if bytes.Equal(ref[1][j*eb:(j+1)*eb], poison) {
				t.Fatalf("%s: the element copy left W' element %d unwritten", p, j)
			}
		}
		if strings.Contains(c.cfg, "FlipFilter=1") {
			// W'[c][R-1-r][S-1-s][k] = W[k][r][s][c], rounded in tf32.
			rs := s.R * s.S
			for k := 0; k < s.K; k++ {
				for t0 := 0; t0 < rs; t0++ {
					for ch := 0; ch < s.C; ch++ {
						w := filter[((k*rs+t0)*s.C+ch)*eb:][:eb]
						got := ref[1][((ch*rs+rs-1-t0)*s.K+k)*eb:][:eb]
						if want := roundTF32Bytes(w, p.Precision); !bytes.Equal(got, want) {
							t.Fatalf("%s: W'[%d][tap %d][%d] = %x, want %x (W[%d][tap %d][%d])", p, ch, rs-1-t0, k, got, want, k, t0, ch)
						}
					}
				}
			}
		}
		for j := range ref {
			if !bytes.Equal(ref[j], ref[1]) {
				t.Errorf("%s: the element copy differs with blocks of %d threads", p, []int{128, 256, 384}[j])
			}
		}
		_, got := runFilterCopy(t, gxx, sub+"v", vec, n)
		for j, threads := range []int{128, 256, 384} {
			if !bytes.Equal(got[j], ref[1]) {
				first := 0
				for first < len(ref[1]) && got[j][first] == ref[1][first] {
					first++
				}
				t.Errorf("%s %s,VecCopy=1: blocks of %d threads: the vector copy differs from the element copy (first at W' element %d)", p, c.cfg, threads, first/eb)
			}
		}
	}
}

// filterCopySampled are the filterCopyCases the default test runs on the
// CPU (each one a g++ build of two kernels): bf16's three warpgroups,
// tf32's odd C and K (36, 68), and a phase filter at asymmetric strides;
// the others (tf32's plain flipped 3×3 among them) with the full sweep.
var filterCopySampled = map[int]bool{2: true, 5: true, 7: true}

// roundTF32Bytes is the little-endian element w as the copies store it:
// rounded to TF32 (half a unit added to a finite value) in tf32, as it is
// otherwise.
func roundTF32Bytes(w []byte, prec problem.Precision) []byte {
	if prec != problem.TF32 {
		return w
	}
	u := uint32(w[0]) | uint32(w[1])<<8 | uint32(w[2])<<16 | uint32(w[3])<<24
	if u&0x7f800000 != 0x7f800000 {
		u += 0x1000
	}
	return []byte{byte(u), byte(u >> 8), byte(u >> 16), byte(u >> 24)}
}
