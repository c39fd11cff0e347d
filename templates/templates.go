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

// FS holds every *.cu.tmpl file.
//
//go:embed *.cu.tmpl
var FS embed.FS

// Version is a short hash of every template's name and content: it changes
// whenever any template changes, and is part of the tuning cache's key.
func Version() string {
	names, err := fs.Glob(FS, "*.cu.tmpl")
	if err != nil {
		panic(err) // the pattern is constant and valid
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := FS.ReadFile(n)
		if err != nil {
			panic(err) // embedded files are always readable
		}
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
