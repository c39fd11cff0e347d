package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestOpFlag: -op names the computation, which the problem carries and the
// regenerating command line repeats (not for the default fprop, whose
// command line stays as before); a bad op, an epilogue on a gradient and
// -torch with a gradient are usage errors naming the flag.
func TestOpFlag(t *testing.T) {
	base := []string{"-shape", flagship, "-o", "conv"}
	for _, tc := range []struct {
		op   string
		want problem.Op
	}{{"dgrad", problem.OpDgrad}, {"WGRAD", problem.OpWgrad}, {"fprop", problem.OpFprop}} {
		c, err := parseArgs(append(slices.Clone(base), "-op", tc.op), io.Discard)
		if err != nil {
			t.Fatalf("-op %s: %v", tc.op, err)
		}
		if c.problem.Op != tc.want {
			t.Errorf("-op %s: op %v", tc.op, c.problem.Op)
		}
		if has := strings.Contains(c.command(), " -op "+tc.want.String()); has != (tc.want != problem.OpFprop) {
			t.Errorf("-op %s: command %q", tc.op, c.command())
		}
	}
	plain, err := parseArgs(base, io.Discard)
	if err != nil || plain.problem.Op != problem.OpFprop || strings.Contains(plain.command(), "-op") {
		t.Errorf("without -op: %v, op %v, command %q", err, plain.problem.Op, plain.command())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-op", "tgrad"}, "-op: op \"tgrad\": must be one of fprop, dgrad, wgrad"},
		{[]string{"-op", "wgrad", "-epilogue", "relu"}, "an epilogue chain applies only to op=fprop"},
		{[]string{"-op", "dgrad", "-torch", "conv_torch"}, "-torch goes with -op fprop"},
	} {
		_, err := parseArgs(append(slices.Clone(base), tc.args...), io.Discard)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
	args := ConfigPackage{Shape: flagship, Out: "conv", Op: "wgrad"}.args(Config{}, "net/convgen.json")
	if i := slices.Index(args, "-op"); i < 0 || i+1 >= len(args) || args[i+1] != "wgrad" {
		t.Errorf("config args %q lack -op wgrad", args)
	}
}
