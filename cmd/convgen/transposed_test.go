package main

import (
	"strings"
	"testing"
)

// TestTransposedOp: -op transposed reads -shape as ConvTranspose2d's and
// lists exactly the candidates of the data gradient that computes it (a
// GAN generator's last layer: 64 → 3 channels, 4×4, stride 2, 32² → 64²,
// which dgradscatter serves); bias=true, an output_padding not below the
// stride and -torch are refused with one line and exit code 2.
func TestTransposedOp(t *testing.T) {
	const tr = "N=8,C=64,H=32,W=32,K=3,R=4,S=4,stride=2,pad=1"
	const fwd = "N=8,C=3,H=64,W=64,K=64,R=4,S=4,stride=2,pad=1"
	got := runConvgen(t, "-op", "transposed", "-shape", tr, "-precision", "fp16", "-layout", "nhwc", "-list")
	want := runConvgen(t, "-op", "dgrad", "-shape", fwd, "-precision", "fp16", "-layout", "nhwc", "-list")
	if got.code != 0 || want.code != 0 {
		t.Fatalf("exit codes %d and %d: %s%s", got.code, want.code, got.stderr, want.stderr)
	}
	if got.stdout != want.stdout || !strings.Contains(got.stdout, "dgradscatter/") {
		t.Errorf("-op transposed lists\n%s\nwant the dgrad candidates of %s, dgradscatter's among them:\n%s", got.stdout, fwd, want.stdout)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-op", "transposed", "-shape", tr + ",bias=true", "-list"}, []string{"-op transposed", "bias=false"}},
		{[]string{"-op", "transposed", "-shape", tr + ",output_padding=2", "-list"}, []string{"output_padding=2", "less than the stride"}},
		{[]string{"-op", "transposed", "-shape", tr + ",pad=9", "-list"}, []string{"pad", "given twice"}},
		{[]string{"-op", "transposed", "-shape", strings.Replace(tr, "pad=1", "pad=40", 1), "-list"}, []string{"at least 1x1"}},
		{[]string{"-op", "transposed", "-shape", tr, "-torch", "m", "-o", "x"}, []string{"-torch", "not -op transposed"}},
		{[]string{"-op", "transposed", "-shape", tr, "-epilogue", "relu", "-list"}, []string{"-op transposed (computed as op dgrad)", "epilogue"}},
		{[]string{"-op", "transposed", "-shape", "N=1,C=6,H=8,W=8,K=4,R=3,S=3,groups=3", "-list"}, []string{"K=4 (out_channels)", "groups=3"}},
		{[]string{"-op", "transpose", "-shape", tr, "-list"}, []string{"-op", "transposed"}},
		{[]string{"-shape", tr + ",output_padding=1", "-list"}, []string{"unknown key", "-op transposed"}},
	} {
		r := runConvgen(t, c.args...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, r.code)
		}
		oneErrorLine(t, r, c.want...)
	}
}

// TestDgradOtherBiasHint: offline, a data gradient whose cache holds the
// same problem with the other bias only (bench/grad-cache.json's
// flagship, bias=true) fails with exit code 3 and says which bias to give,
// since a data gradient ignores it; the bias it names replays.
func TestDgradOtherBiasHint(t *testing.T) {
	const cache = "../../bench/grad-cache.json"
	const shape = "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2"
	args := []string{"-op", "dgrad", "-precision", "fp16", "-layout", "nhwc", "-cache", cache, "-device", "NVIDIA H100 80GB HBM3"}
	r := runConvgen(t, append(args, "-shape", shape+",bias=false", "-o", t.TempDir()+"/x")...)
	if r.code != 3 {
		t.Fatalf("exit code %d, want 3 (stderr %q)", r.code, r.stderr)
	}
	oneErrorLine(t, r, "no record", "with bias=true", "give bias=true")
	if r := runConvgen(t, append(args, "-shape", shape+",bias=true", "-o", t.TempDir()+"/y", "-q")...); r.code != 0 {
		t.Errorf("bias=true: exit code %d, stderr %q", r.code, r.stderr)
	}
}
