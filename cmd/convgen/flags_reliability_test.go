package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// small is a valid shape that every precision serves.
const small = "N=1,C=3,H=8,W=8,K=4,R=3,S=3"

// parseErr runs parseFlags and returns its error, failing the test if there
// is none or if it is not a usage error.
func parseErr(t *testing.T, args ...string) string {
	t.Helper()
	c, err := parseFlags(args, io.Discard)
	if err == nil {
		t.Fatalf("parseFlags(%.200q) = %+v, want an error", args, c)
	}
	var ue usageError
	if !errors.As(err, &ue) {
		t.Errorf("parseFlags(%.200q): %v is not a usage error (exit status 2)", args, err)
	}
	return err.Error()
}

func mentions(t *testing.T, msg string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not mention %q", msg, w)
		}
	}
}

// TestPackageNames covers issue 22, item 8: -pkg init and -o init gave an
// unimportable package, and -o func blamed -pkg when no -pkg was given.
func TestPackageNames(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
		not  []string // must not appear: -pkg is not to blame without -pkg
	}{
		{"-pkg init", []string{"-o", "conv", "-pkg", "init"}, []string{`-pkg: package name "init"`, "cannot be imported"}, nil},
		{"-pkg main", []string{"-o", "conv", "-pkg", "main"}, []string{`-pkg: package name "main"`, "command"}, nil},
		{"-pkg func", []string{"-o", "conv", "-pkg", "func"}, []string{`-pkg: package name "func"`, "keyword"}, nil},
		{"-pkg _", []string{"-o", "conv", "-pkg", "_"}, []string{`-pkg: package name "_"`, "blank"}, nil},
		{"-pkg C", []string{"-o", "conv", "-pkg", "C"}, []string{`-pkg: package name "C"`, "cgo"}, nil},
		{"-pkg 1bad", []string{"-o", "conv", "-pkg", "1bad"}, []string{`-pkg: package name "1bad"`, "not a Go identifier"}, nil},
		{"-pkg empty", []string{"-o", "conv", "-pkg="}, []string{`-pkg: package name ""`, "empty"}, nil},
		{"-o init", []string{"-o", "init"}, []string{"-o init:", `package name "init"`, "derived from the directory's name", "cannot be imported", "with -pkg NAME"}, []string{"-pkg:", `-pkg "`}},
		{"-o dir/init", []string{"-o", filepath.Join("a", "init")}, []string{"-o a/init:", `package name "init"`, "with -pkg NAME"}, []string{"-pkg:"}},
		{"-o func", []string{"-o", "func"}, []string{"-o func:", `package name "func"`, "keyword", "with -pkg NAME"}, []string{"-pkg:", `-pkg "func"`}},
		{"-o Main", []string{"-o", "Main"}, []string{"-o Main:", `package name "main"`, "with -pkg NAME"}, []string{"-pkg:"}},
		{"-o 123", []string{"-o", "123"}, []string{"-o 123:", "no package name can be derived", `"123"`, "with -pkg NAME"}, []string{"-pkg:"}},
		{"-o _", []string{"-o", "_"}, []string{"-o _:", "no package name can be derived", "with -pkg NAME"}, []string{"-pkg:"}},
		{"-o /", []string{"-o", "/"}, []string{"-o /:", "no package name can be derived", "with -pkg NAME"}, []string{"-pkg:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := parseErr(t, append([]string{"-shape", small}, tt.args...)...)
			mentions(t, msg, tt.want...)
			for _, n := range tt.not {
				if strings.Contains(msg, n) {
					t.Errorf("error %q mentions %q, but no -pkg was given", msg, n)
				}
			}
		})
	}
	for _, ok := range [][]string{
		{"-o", "init", "-pkg", "conv"}, // -pkg names the package: the directory's name does not matter
		{"-o", "func", "-pkg", "conv"},
		{"-o", "2d-conv"}, // leading digits and the dash are dropped: package dconv
		{"-compile-only", "-o", "init"},
		{"-compile-only", "-pkg", "init"},
	} {
		if _, err := parseFlags(append([]string{"-shape", small}, ok...), io.Discard); err != nil {
			t.Errorf("parseFlags(%q): %v", ok, err)
		}
	}
	c, err := parseFlags([]string{"-shape", small, "-o", "2d-conv"}, io.Discard)
	if err != nil || c.pkg != "dconv" {
		t.Errorf("-o 2d-conv: package %q, error %v; want dconv", c.pkg, err)
	}
}

// TestPackageNameExitStatus runs the command: -o init is a usage error
// (exit status 2) that writes nothing.
func TestPackageNameExitStatus(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-shape", small, "-o", filepath.Join(dir, "init"), "-cache", filepath.Join(dir, "c.json")}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), `package name "init"`) || stdout.Len() != 0 {
		t.Errorf("-o init: exit %d, stdout %q, stderr %q; want 2 and a package-name error", code, stdout.String(), stderr.String())
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("-o init left %v", got)
	}
}

// TestInvalidConvolutionRefused covers issue 22, item 1 on the command
// line: a filter larger than the padded input is a usage error.
func TestInvalidConvolutionRefused(t *testing.T) {
	for _, shape := range []string{
		"N=1,C=3,H=5,W=5,K=8,R=7,S=7,stride=4",
		"N=1,C=3,H=10,W=10,K=96,R=11,S=11,stride=2",
		"N=1,C=3,H=10,W=10,K=8,R=3,S=3,dilation=6,stride=8",
	} {
		for _, extra := range [][]string{{"-o", "conv"}, {"-compile-only", "-arch", "sm_90"}} {
			msg := parseErr(t, append([]string{"-shape", shape}, extra...)...)
			mentions(t, msg, "P=", "at least 1", "H+2*pad_h >= dilation_h*(R-1)+1")
		}
	}
}

// TestShapeKeyGivenTwiceAsWritten covers issue 22, item 8: "given twice"
// named the key lower-cased.
func TestShapeKeyGivenTwiceAsWritten(t *testing.T) {
	msg := parseErr(t, "-shape", small+",Stride_H=2,stride_h=1", "-o", "conv")
	mentions(t, msg, `key "stride_h" given twice (first as "Stride_H")`)
	msg = parseErr(t, "-shape", "N=1,C=3,H=8,W=8,K=4,R=3,S=3,n=2", "-o", "conv")
	mentions(t, msg, `key "n" given twice (first as "N")`)
}

// TestErrorsClipLongInput covers issue 22, item 8: errors echoed inputs of
// any length (128 KB on one line).
func TestErrorsClipLongInput(t *testing.T) {
	long := strings.Repeat("z", 128<<10)
	digits := strings.Repeat("7", 128<<10)
	tests := []struct {
		name string
		args []string
	}{
		{"shape pair", []string{"-shape", long, "-o", "conv"}},
		{"shape key", []string{"-shape", small + "," + long + "=1", "-o", "conv"}},
		{"shape value", []string{"-shape", small + ",stride=" + long, "-o", "conv"}},
		{"-precision", []string{"-shape", small, "-o", "conv", "-precision", long}},
		{"-layout", []string{"-shape", small, "-o", "conv", "-layout", long}},
		{"-arch", []string{"-shape", small, "-o", "conv", "-arch", long}},
		{"-pkg", []string{"-shape", small, "-o", "conv", "-pkg", long + "-"}},
		{"-o", []string{"-shape", small, "-o", digits}},
		{"-runs", []string{"-shape", small, "-o", "conv", "-runs", long}},
		{"-seed", []string{"-shape", small, "-o", "conv", "-seed", digits}},
		{"-time", []string{"-shape", small, "-o", "conv", "-time", long}},
		{"-retune", []string{"-shape", small, "-o", "conv", "-retune=" + long}},
		{"given twice", []string{"-shape", long, "-shape", small, "-o", "conv"}},
		{"given twice, second", []string{"-shape", small, "-shape", long, "-o", "conv"}},
		{"unknown long flag", []string{"-shape", small, "-o", "conv", "--" + long}},
		{"unknown flag, one dash", []string{"-shape", small, "-o", "conv", "-" + long}},
		{"bad syntax", []string{"-shape", small, "-o", "conv", "---" + long}},
		{"positional", []string{"-shape", small, "-o", "conv", long}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := parseErr(t, tt.args...)
			// Well under maxErrorLen: each input is clipped, not the message cut.
			if len(msg) > 400 || strings.Contains(msg, "message cut") {
				t.Errorf("error of %d bytes: %.400q", len(msg), msg)
			}
			if !clipped.MatchString(msg) {
				t.Errorf("error %q: want the input clipped with an ellipsis and its length in bytes", msg)
			}
		})
	}
}

// clipped matches an input clipped by package clip: an ellipsis and the
// length, of at least 128 KiB here.
var clipped = regexp.MustCompile(`… \(1[0-9]{5} bytes\)`)

// TestBoundedError checks the last resort: a message longer than
// maxErrorLen is cut, at a rune boundary, and says so.
func TestBoundedError(t *testing.T) {
	long := errors.New(strings.Repeat("é", maxErrorLen))
	msg := boundedError{long}.Error()
	if len(msg) > maxErrorLen || !utf8.ValidString(msg) || !strings.HasSuffix(msg, "… (message cut)") {
		t.Errorf("bounded message: %d bytes, valid UTF-8 %t, %q", len(msg), utf8.ValidString(msg), msg)
	}
	if got := (boundedError{errors.New("short")}).Error(); got != "short" {
		t.Errorf("bounded short message = %q", got)
	}
	if !errors.Is(boundedError{long}, long) {
		t.Error("boundedError does not unwrap")
	}
}

// TestListAndArchFlags covers the CLI probe's remarks of session 24:
// -list ignored -pin and -retune silently, and -arch took sm_10.
func TestListAndArchFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-shape", small, "-list", "-pin", "generic/BlockK=4"},
		{"-shape", small, "-list", "-retune"},
	} {
		mentions(t, parseErr(t, args...), "-list", "-pin and -retune")
	}
	for _, arch := range []string{"sm_10", "sm_75", "sm_70a"} {
		mentions(t, parseErr(t, "-shape", small, "-list", "-arch", arch), arch, "sm_80 or newer")
	}
	for _, arch := range []string{"sm_80", "sm_90", "sm_90a", "sm_100"} {
		if _, err := parseFlags([]string{"-shape", small, "-list", "-arch", arch}, io.Discard); err != nil {
			t.Errorf("-list -arch %s: %v", arch, err)
		}
	}
}
