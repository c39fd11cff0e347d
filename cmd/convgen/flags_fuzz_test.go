package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/convgen/convgen/gen"
)

// fuzzSep separates the arguments of one fuzzed command line.
const fuzzSep = "\x00"

// FuzzParseFlags parses arbitrary argument vectors (the fuzzed string split
// at NUL bytes): parseFlags never panics, an error is a usage error of at
// most maxErrorLen bytes and leaves stdout empty, and an accepted command
// line has a valid shape and, unless -compile-only, a usable package name.
func FuzzParseFlags(f *testing.F) {
	for _, args := range [][]string{
		{"-shape", flagship, "-o", "conv"},
		{"--shape=" + flagship, "-out=pkg", "-cache=c.json", "-precision=FP32", "-layout=NCHW", "-q"},
		{"-shape", flagship, "-precision", "tf32", "-layout", "nhwc", "-o", "x", "-pkg", "conv", "-arch", "sm_90", "-device", "NVIDIA H200"},
		{"-shape", flagship, "-compile-only", "-arch", "sm_90a", "-pin", "direct/A=1", "-source-dir", "src"},
		{"-shape", flagship, "-o", "x", "-trials", "0", "-time", "1m", "-seed", "7", "-jobs", "2", "-runs", "20", "-compile-timeout", "10s"},
		// Issue 22, item 1: filter larger than the padded input, stride > 1.
		{"-shape", "N=1,C=3,H=5,W=5,K=8,R=7,S=7,stride=4", "-o", "conv"},
		{"-shape", "N=1,C=3,H=10,W=10,K=96,R=11,S=11,stride=2", "-compile-only", "-arch", "sm_90"},
		{"-shape", "N=1,C=3,H=10,W=10,K=8,R=3,S=3,dilation=6,stride=8", "-o", "conv"},
		// Issue 22, item 8.
		{"-shape", flagship, "-o", "init"},
		{"-shape", flagship, "-o", "conv", "-pkg", "init"},
		{"-shape", flagship, "-o", "func"},
		{"-shape", flagship + ",Stride_H=2,stride_h=1", "-o", "conv"},
		{"-shape", flagship, "-shape", flagship, "-o", "conv"},
		{"-shape", strings.Repeat("N=1,", 300), "-o", "conv"},
		{"-shape", flagship, "-o", "conv", "--" + strings.Repeat("x", 300)},
		{"-shape", flagship, "-o", "conv", "-runs", strings.Repeat("9", 300)},
		{"-shape", flagship, "-o", ".", "-h"},
		{"-shape"},
		{"---x", "--", "-shape"},
		{"-o", "\xff\xfe", "-pkg", "é"},
		{},
	} {
		f.Add(strings.Join(args, fuzzSep))
	}
	f.Fuzz(func(t *testing.T, line string) {
		var args []string
		if line != "" {
			args = strings.Split(line, fuzzSep)
		}
		var stdout bytes.Buffer
		c, err := parseFlags(args, &stdout)
		if errors.Is(err, errHelp) {
			return
		}
		if err != nil {
			var ue usageError
			if !errors.As(err, &ue) {
				t.Errorf("parseFlags(%.300q): %v is not a usage error", args, err)
			}
			if n := len(err.Error()); n > maxErrorLen {
				t.Errorf("parseFlags(%.300q): error of %d bytes (at most %d)", args, n, maxErrorLen)
			}
			if stdout.Len() != 0 {
				t.Errorf("parseFlags(%.300q) wrote %q on stdout with an error", args, stdout.String())
			}
			return
		}
		s := c.problem.Shape
		if err := s.Validate(); err != nil || s.P() < 1 || s.Q() < 1 {
			t.Errorf("parseFlags(%.300q) accepted shape %+v (P=%d, Q=%d): %v", args, s, s.P(), s.Q(), err)
		}
		if !c.compile {
			if err := gen.CheckPackageName(c.pkg); err != nil {
				t.Errorf("parseFlags(%.300q) accepted package %q: %v", args, c.pkg, err)
			}
			if c.out == "" {
				t.Errorf("parseFlags(%.300q) accepted no -o without -compile-only", args)
			}
		}
		if c.runs < 20 || c.trials < 0 || c.jobs < 0 || c.budget < 0 || c.compileTO <= 0 || c.cache == "" {
			t.Errorf("parseFlags(%.300q) accepted %+v", args, c)
		}
	})
}
