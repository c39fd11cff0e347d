package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestOutPrecisionFlag: -out-precision sets the problem's output type,
// which its String and the regenerating command line name; the input's own
// type is no out-precision (the problem, command and key of no flag); a bad
// type, a gradient op and -torch with one are usage errors naming them;
// "out_precision" in a config package becomes -out-precision, which beside
// -config is refused.
func TestOutPrecisionFlag(t *testing.T) {
	base := []string{"-shape", flagship, "-o", "conv", "-precision", "tf32"}
	c, err := parseArgs(append(slices.Clone(base), "-out-precision", "BF16"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.problem.OutPrecision != problem.StorageBF16 || !strings.HasSuffix(c.problem.String(), " out=bf16") {
		t.Errorf("problem %q (out %q), want out=bf16", c.problem, c.problem.OutPrecision)
	}
	if cmd := c.command(); !strings.Contains(cmd, " -out-precision bf16") {
		t.Errorf("command %q lacks -out-precision bf16", cmd)
	}
	plain, err := parseArgs(base, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	same, err := parseArgs(append(slices.Clone(base), "-out-precision", "fp32"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if same.problem.String() != plain.problem.String() || same.problem.OutPrecision != "" || same.command() != plain.command() || strings.Contains(plain.command(), "out-precision") {
		t.Errorf("-out-precision fp32 on tf32: problem %+v, command %q; want those without the flag: %+v, %q", same.problem, same.command(), plain.problem, plain.command())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-out-precision", "tf32"}, `-out-precision: output precision "tf32": must be one of fp32, fp16, bf16`},
		{[]string{"-out-precision", "fp16", "-op", "dgrad"}, "an output precision other than the input's applies only to op=fprop"},
		{[]string{"-out-precision", "fp16", "-torch", "convtorch"}, "-torch does not go with -out-precision fp16 yet"},
		{[]string{"-out-precision", "fp16", "-out-precision", "bf16"}, "out-precision"},
	} {
		_, err := parseArgs(append(slices.Clone(base), tc.args...), io.Discard)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
	args := ConfigPackage{Shape: flagship, Out: "conv", OutPrecision: "fp16"}.args(Config{}, "net/convgen.json")
	if i := slices.Index(args, "-out-precision"); i < 0 || i+1 >= len(args) || args[i+1] != "fp16" {
		t.Errorf("config args %q lack -out-precision fp16", args)
	}
	err = runConfig(t.Context(), "unused.json", []string{"-out-precision", "fp16"}, io.Discard, io.Discard)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "belongs in the config file") {
		t.Errorf("-out-precision beside -config: %v, want a usage error", err)
	}
}
