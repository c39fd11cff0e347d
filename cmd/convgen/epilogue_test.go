package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestEpilogueFlag: -epilogue parses to the canonical chain, which the
// problem carries and the regenerating command line repeats; without it the
// problem has no chain and the command line stays as before; a bad chain
// is a usage error naming the flag and the element.
func TestEpilogueFlag(t *testing.T) {
	base := []string{"-shape", flagship, "-o", "conv"}
	c, err := parseArgs(append(slices.Clone(base), "-epilogue", "scale_shift, residual(1), leaky_relu(0.10000000001)"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.problem.Epilogue.String(); got != "scale_shift,residual,leaky_relu(0.1)" {
		t.Errorf("chain %q, want the canonical scale_shift,residual,leaky_relu(0.1)", got)
	}
	if cmd := c.command(); !strings.Contains(cmd, " -epilogue scale_shift,residual,leaky_relu(0.1)") {
		t.Errorf("command %q lacks the canonical -epilogue", cmd)
	}
	if !strings.Contains(c.problem.String(), "epilogue=scale_shift,residual,leaky_relu(0.1)") {
		t.Errorf("problem %q does not name the chain", c.problem)
	}
	plain, err := parseArgs(base, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.problem.Epilogue) != 0 || strings.Contains(plain.command(), "epilogue") || strings.Contains(plain.problem.String(), "epilogue") {
		t.Errorf("without -epilogue: chain %v, command %q, problem %q", plain.problem.Epilogue, plain.command(), plain.problem)
	}
	for _, tc := range []struct{ chain, want string }{
		{"relu,foo", `-epilogue: epilogue: element 2 "foo": unknown name "foo"; known names: scale_shift, residual, relu`},
		{"clamp(1,-1)", "clamp's lo 1 exceeds its hi -1"},
		{"gelu(tanh)", "gelu_tanh"},
	} {
		_, err := parseArgs(append(slices.Clone(base), "-epilogue", tc.chain), io.Discard)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("-epilogue %q: %v, want a usage error with %q", tc.chain, err, tc.want)
		}
	}
}

// TestEpilogueConfig: a config package's "epilogue" becomes its -epilogue,
// and -epilogue on the command line beside -config is refused (it belongs
// to each package).
func TestEpilogueConfig(t *testing.T) {
	args := ConfigPackage{Shape: flagship, Out: "conv", Epilogue: "scale_shift,relu"}.args(Config{}, "net/convgen.json")
	i := slices.Index(args, "-epilogue")
	if i < 0 || i+1 >= len(args) || args[i+1] != "scale_shift,relu" {
		t.Errorf("args %q lack -epilogue scale_shift,relu", args)
	}
	if args := (ConfigPackage{Shape: flagship, Out: "conv"}).args(Config{}, "net/convgen.json"); slices.Contains(args, "-epilogue") {
		t.Errorf("args %q have -epilogue for a package without one", args)
	}
	err := runConfig(t.Context(), "unused.json", []string{"-epilogue", "relu"}, io.Discard, io.Discard)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "belongs in the config file") {
		t.Errorf("-epilogue beside -config: %v, want a usage error", err)
	}
}
