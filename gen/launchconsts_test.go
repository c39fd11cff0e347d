package gen

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/convgen/convgen/kernels/launch"
)

// scriptConst is how a script outside Go reads shape.go's constants: the
// regular expression of ../shared/tools/check-against-pytorch.py, a
// constant whose line ends after its value.
var scriptConst = regexp.MustCompile(`(?m)^\s*(\w+)\s*=\s*("[^"]*"|[-0-9.e+]+|true|false)\s*$`)

// readConsts returns the constants of src that scriptConst reads, name →
// value (quotes removed).
func readConsts(src []byte) map[string]string {
	c := map[string]string{}
	for _, m := range scriptConst.FindAllSubmatch(src, -1) {
		v := string(m[2])
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		c[string(m[1])] = v
	}
	return c
}

// TestLaunchConstsForScripts checks that a script reads every one-op
// package's launch from shape.go, with the binding's values, and finds
// PrologueName exactly where the module has a prologue.
func TestLaunchConstsForScripts(t *testing.T) {
	withPrologue := fp16NHWC(t)
	withPrologue.Package = "prologue"
	withPrologue.CUBIN = append([]byte("\x00ELF "+withPrologue.Kernel+"\x00"), []byte(withPrologue.Kernel+launch.PrologueSuffix+"\x00")...)
	for _, b := range append(allBindings(t), withPrologue) {
		c := readConsts(files(t, b)[shapeFile])
		want := map[string]string{
			"KernelName": b.Kernel,
			"GridX":      strconv.Itoa(b.Grid[0]), "GridY": strconv.Itoa(b.Grid[1]), "GridZ": strconv.Itoa(b.Grid[2]),
			"BlockX": strconv.Itoa(b.Block[0]), "BlockY": strconv.Itoa(b.Block[1]), "BlockZ": strconv.Itoa(b.Block[2]),
			"SharedBytes": strconv.Itoa(b.SharedBytes),
		}
		for name, v := range want {
			if c[name] != v {
				t.Errorf("%s: a script reads %s = %q from shape.go, want %q", b.Package, name, c[name], v)
			}
		}
		name, ok := c["PrologueName"]
		if wantPro := b.Package == "prologue"; ok != wantPro || (ok && name != b.Kernel+launch.PrologueSuffix) {
			t.Errorf("%s: PrologueName %q (present %v), want present %v", b.Package, name, ok, wantPro)
		}
	}
}
