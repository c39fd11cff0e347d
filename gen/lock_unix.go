//go:build unix && !aix && !solaris && !illumos

package gen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock on the file at path, creating it if
// missing, and returns the function that releases it and removes the file.
// flock locks belong to the open file description, so the lock also
// excludes other goroutines of this process, each of which opens the file
// anew. A waiter whose file was removed by the holder before it got the
// lock starts over on the file now at path.
func lockFile(path string) (unlock func(), err error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			return nil, err
		}
		for {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		held, herr := f.Stat()
		now, nerr := os.Stat(path)
		if herr == nil && nerr == nil && os.SameFile(held, now) {
			return func() {
				os.Remove(path) // before unlocking: waiters on this file start over
				unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
			}, nil
		}
		f.Close()
		switch {
		case herr != nil:
			return nil, herr
		case nerr != nil && !errors.Is(nerr, fs.ErrNotExist):
			return nil, nerr
		}
	}
}

// checkRemovable says whether this process may delete the entries of dir.
func checkRemovable(dir string) error {
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return &fs.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}
