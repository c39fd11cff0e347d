//go:build !unix || aix || solaris || illumos

package tunecache

import (
	"errors"
	"fmt"
)

// lockFile is not implemented here: the package relies on flock, and Put
// fails on systems without it.
func lockFile(path string) (unlock func(), err error) {
	return nil, fmt.Errorf("lock %s: %w", path, errors.ErrUnsupported)
}
