//go:build !unix || aix || solaris || illumos

package gen

import "errors"

// lockFile is not implemented here (no flock): Write then does not
// serialise writers of one directory, nor clean up the temporaries of
// killed runs, which it cannot tell from a running writer's.
func lockFile(path string) (unlock func(), err error) {
	return nil, errors.ErrUnsupported
}

// checkRemovable has no check here: removing the old files is tried when
// Write replaces the directory.
func checkRemovable(dir string) error {
	return nil
}
