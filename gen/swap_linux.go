//go:build linux

package gen

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// exchange swaps the directories at a and b in one step (renameat2 with
// RENAME_EXCHANGE). Where the file system cannot, the error wraps
// errors.ErrUnsupported.
func exchange(a, b string) error {
	return renameat2(a, b, unix.RENAME_EXCHANGE)
}

// renameNew renames from to to, failing if to exists (renameat2 with
// RENAME_NOREPLACE, else a check and rename(2)).
func renameNew(from, to string) error {
	err := renameat2(from, to, unix.RENAME_NOREPLACE)
	if !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	if _, err := os.Lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: os.ErrExist}
	}
	return os.Rename(from, to)
}

func renameat2(from, to string, flags uint) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, flags)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		// EINVAL: the file system does not support the flag.
		return fmt.Errorf("renameat2 %s %s: %w (%w)", from, to, errors.ErrUnsupported, err)
	}
	return &os.LinkError{Op: "renameat2", Old: from, New: to, Err: err}
}
