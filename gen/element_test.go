package gen

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"

	"github.com/convgen/convgen/problem"
)

// TestHalfBindings checks what sets a 2-byte binding apart from a float32
// one; fp16 has golden files besides, bf16 has not.
func TestHalfBindings(t *testing.T) {
	for _, tc := range []struct {
		b   Binding
		nan string
	}{
		{fp16NHWC(t), "0x7e00"},
		{oddBF16(t), "0x7fc0"},
	} {
		t.Run(tc.b.Package, func(t *testing.T) {
			fs := files(t, tc.b)
			for name, want := range map[string][]string{
				shapeFile: {"ElementBytes = 2\n"},
				docFile:   {"one dense array of " + string(tc.b.Problem.Precision) + " (ElementBytes = 2 bytes each;"},
				kernelTestFile: {
					"type elem = uint16\n",
					"const nanBits = " + tc.nan + "\n",
					"cu.MemsetD16(dOut, nanBits, OutputElems)",
					"return " + string(tc.b.Problem.Precision) + "FromFloat32(float32(v))",
					"return " + string(tc.b.Problem.Precision) + "ToFloat64(e)",
				},
			} {
				for _, w := range want {
					if !strings.Contains(string(fs[name]), w) {
						t.Errorf("%s lacks %q", name, w)
					}
				}
			}
			if src := string(fs[kernelTestFile]); strings.Contains(src, "MemsetD32") || strings.Contains(src, "float32(e)") {
				t.Errorf("%s still treats elements as float32", kernelTestFile)
			}
		})
	}
}

// conversionTest is the test, run in a throwaway package, of the conversions
// that declElem generates. The package adds the constants of the type: its
// mantissa bits, smallest normal exponent, largest finite value and known
// conversions.
const conversionTest = `package conv

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestKnownValues(t *testing.T) {
	for _, c := range known {
		if got := toElem(c.v); got != c.want {
			t.Errorf("toElem(%v) = %#04x, want %#04x", c.v, got, c.want)
		}
	}
	if got := toElem(math.NaN()); got != nanBits {
		t.Errorf("toElem(NaN) = %#04x, want nanBits %#04x", got, nanBits)
	}
	if !math.IsNaN(fromElem(nanBits)) {
		t.Errorf("fromElem(nanBits) = %v, want NaN", fromElem(nanBits))
	}
}

// TestRoundTrip: every bit pattern decodes to a value that encodes back to
// it; NaNs stay NaN.
func TestRoundTrip(t *testing.T) {
	for b := range 1 << 16 {
		h := elem(b)
		v := fromElem(h)
		if math.IsNaN(v) {
			if !math.IsNaN(fromElem(toElem(v))) {
				t.Fatalf("NaN %#04x: toElem(fromElem) = %#04x is not NaN", h, toElem(v))
			}
			continue
		}
		if got := toElem(v); got != h {
			t.Fatalf("toElem(fromElem(%#04x) = %v) = %#04x", h, v, got)
		}
	}
}

// TestHalfUlp: decode(encode(x)) is within half an ulp of x for random
// float32 x in the type's finite range, and a tie goes to an even mantissa.
func TestHalfUlp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2_000_000; i++ {
		x := float64(math.Float32frombits(rng.Uint32()))
		if i%2 == 0 { // also many small values: near the subnormals
			x = math.Ldexp(rng.Float64()-0.5, rng.IntN(2*(-minExp+mantBits))+minExp-mantBits)
			x = float64(float32(x))
		}
		if math.IsNaN(x) || math.Abs(x) > maxFinite {
			continue
		}
		e := toElem(x)
		y := fromElem(e)
		exp := math.Ilogb(x)
		if x == 0 || exp < minExp {
			exp = minExp
		}
		ulp := math.Ldexp(1, exp-mantBits)
		d := math.Abs(y - x)
		if d > ulp/2 {
			t.Fatalf("x = %v: encoded %#04x = %v, off by %v > half an ulp %v", x, e, y, d, ulp/2)
		}
		if d == ulp/2 && e&1 != 0 {
			t.Fatalf("x = %v: a tie, encoded %#04x = %v: mantissa not even", x, e, y)
		}
		if math.Signbit(y) != math.Signbit(x) {
			t.Fatalf("x = %v: encoded %#04x = %v: the sign changed", x, e, y)
		}
	}
}
`

// conversionCases are the type's constants and known conversions for
// conversionTest.
var conversionCases = map[problem.Precision]string{
	problem.FP16: `package conv

import "math"

const mantBits, minExp, maxFinite = 10, -14, 65504

var known = []struct {
	v    float64
	want elem
}{
	{1, 0x3c00},
	{-2, 0xc000},
	{65504, 0x7bff},
	{0.1, 0x2e66},                   // mantissa 614.4: down
	{1e-8, 0x0000},                  // below half the smallest subnormal (5.96e-8)
	{6e-8, 0x0001},                  // the smallest subnormal, 2^-24
	{0x1p-25, 0x0000},               // half of it: a tie, to even 0
	{3 * 0x1p-25, 0x0002},           // 1.5 subnormals: a tie, to even 2
	{0x3ffp-24, 0x03ff},             // the largest subnormal
	{0x1p-14, 0x0400},               // the smallest normal
	{0x7ffp-25, 0x0400},             // a tie between the largest subnormal and the smallest normal
	{1 + 0x1p-11, 0x3c00},           // halfway between 1 and 1+2^-10: to even 1
	{1 + 3*0x1p-11, 0x3c02},         // halfway between 1+2^-10 and 1+2^-9: to even
	{1 + 0x1p-11 + 0x1p-20, 0x3c01}, // just above halfway: up
	{65519, 0x7bff},                 // below halfway to 65536: the largest finite
	{65520, 0x7c00},                 // halfway: to even, which is infinite
	{1e6, 0x7c00},
	{-1e6, 0xfc00},
	{math.Inf(1), 0x7c00},
	{math.Inf(-1), 0xfc00},
	{math.Copysign(0, -1), 0x8000},
	{-0x1p-24, 0x8001},
}
`,
	problem.BF16: `package conv

import "math"

const mantBits, minExp, maxFinite = 7, -126, 0x1.fep127

var known = []struct {
	v    float64
	want elem
}{
	{1, 0x3f80},
	{-2, 0xc000},
	{1.00390625, 0x3f80},  // 0x3f808000: a tie, to the even 0x3f80
	{1.01171875, 0x3f82},  // 0x3f818000: a tie, to the even 0x3f82
	{1.0078125, 0x3f81},   // 0x3f810000: exact
	{1.005859375, 0x3f81}, // 0x3f80c000: above halfway, up
	{0.1, 0x3dcd},         // 0x3dcccccd: up
	{0x1.fep127, 0x7f7f},  // the largest finite
	{0x1.ffp127, 0x7f80},  // halfway to 2^128: to even, which is infinite
	{math.Inf(1), 0x7f80},
	{math.Inf(-1), 0xff80},
	{math.Copysign(0, -1), 0x8000},
	{0x1p-133, 0x0001}, // the smallest subnormal
}
`,
}

// TestElementConversions generates the 2-byte conversions into a throwaway
// package and tests them there: known values, every bit pattern back and
// forth, and half-ulp accuracy with ties to even.
func TestElementConversions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	for _, p := range []problem.Precision{problem.FP16, problem.BF16} {
		t.Run(string(p), func(t *testing.T) {
			e, err := elementOf(p)
			if err != nil {
				t.Fatal(err)
			}
			f := jen.NewFile("conv")
			declElem(f, e)
			src, err := render(f)
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			for name, data := range map[string]string{
				"go.mod":          "module example.com/conv\n\ngo 1.26\n",
				"conv.go":         string(src),
				"cases_test.go":   conversionCases[p],
				"convert_test.go": conversionTest,
			} {
				if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			env := append(slices.Clone(os.Environ()), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
			goCmd(t, root, env, "vet", ".")
			goCmd(t, root, env, "test", "-count=1", ".")
		})
	}
}
