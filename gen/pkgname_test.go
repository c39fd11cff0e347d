package gen

import (
	"strings"
	"testing"
)

func TestCheckPackageName(t *testing.T) {
	for _, ok := range []string{"alexnet", "fp32", "conv_1", "Conv", "x"} {
		if err := CheckPackageName(ok); err != nil {
			t.Errorf("CheckPackageName(%q) = %v, want nil", ok, err)
		}
	}
	for _, tc := range []struct{ name, want string }{
		{"", "empty"},
		{"init", "cannot be imported"}, // issue 22, item 8: "cannot import package as init"
		{"main", "command"},
		{"func", "keyword"},
		{"type", "keyword"},
		{"_", "blank"},
		{"C", "cgo"},
		{"1bad", "not a Go identifier"},
		{"alex-net", "not a Go identifier"},
		{"a b", "not a Go identifier"},
		{strings.Repeat("x", 1000) + "-", "(1001 bytes)"},
	} {
		err := CheckPackageName(tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "package name ") {
			t.Errorf("CheckPackageName(%.40q) = %v, want an error starting `package name` and mentioning %q", tc.name, err, tc.want)
		}
		if err != nil && len(err.Error()) > 300 {
			t.Errorf("CheckPackageName(%.40q): error of %d bytes", tc.name, len(err.Error()))
		}
	}
}

// TestFilesRefusesInit checks that Files, not only the command line, refuses
// a package that could not be imported (issue 22, item 8).
func TestFilesRefusesInit(t *testing.T) {
	b := fp16NHWC(t)
	b.Package = "init"
	if fs, err := Files(b); err == nil || !strings.Contains(err.Error(), `package name "init"`) {
		t.Fatalf("Files with package init: %d files, error %v; want a package-name error", len(fs), err)
	}
}
