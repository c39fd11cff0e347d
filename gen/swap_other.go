//go:build !linux

package gen

import (
	"errors"
	"os"
)

// exchange would swap the directories at a and b in one step; only Linux
// has renameat2, so Write falls back to two renames.
func exchange(a, b string) error {
	return errors.ErrUnsupported
}

// renameNew renames from to to, failing if to exists (checked first: the
// writer holds the lock).
func renameNew(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: os.ErrExist}
	}
	return os.Rename(from, to)
}
