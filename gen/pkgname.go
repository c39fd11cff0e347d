package gen

import (
	"errors"
	"fmt"
	"go/token"

	"github.com/convgen/convgen/internal/clip"
)

// CheckPackageName says whether name can be the package clause of a
// generated package that other packages import: a Go identifier other
// than a keyword, the blank identifier, main (a command), init (reserved
// for initialisers: "cannot import package as init") and C (cgo's
// pseudo-package). The error, which says why, begins with
// `package name "NAME"`.
func CheckPackageName(name string) error {
	var why error
	switch {
	case name == "":
		why = errors.New("empty")
	case token.IsKeyword(name):
		why = errors.New("a Go keyword")
	case !token.IsIdentifier(name):
		why = errors.New("not a Go identifier (letters, digits and _, not starting with a digit)")
	case name == "_":
		why = errors.New("the blank identifier")
	case name == "main":
		why = errors.New("package main is a command and cannot be imported")
	case name == "init":
		why = errors.New("a package named init cannot be imported (init is reserved for initialisers)")
	case name == "C":
		why = errors.New(`C is cgo's pseudo-package ("C")`)
	default:
		return nil
	}
	return fmt.Errorf("package name %s: %w", clip.Quote(name), why)
}
