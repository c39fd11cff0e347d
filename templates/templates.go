// Package templates holds the CUDA kernel templates (text/template files, one
// per kernel family) embedded in the binary.
package templates

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"sort"
)

// FS holds every *.cu.tmpl file and the partial they share, Partial.
//
//go:embed *.cu.tmpl shape.tmpl
var FS embed.FS

// Partial is the file that defines the templates "dims", "shape" and
// "flags": the shape's #define block that the kernel templates share.
const Partial = "shape.tmpl"

// Version is a short hash of the names and contents of the given template
// files (every template when none is given): part of the tuning cache's key,
// it changes whenever one of them changes.
func Version(files ...string) string {
	names := files
	if len(names) == 0 {
		var err error
		if names, err = fs.Glob(FS, "*.cu.tmpl"); err != nil {
			panic(err) // the pattern is constant and valid
		}
	}
	names = append([]string(nil), names...)
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := FS.ReadFile(n)
		if err != nil {
			b = []byte("missing") // an unknown name hashes as such
		}
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
