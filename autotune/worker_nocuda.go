//go:build !cuda

package autotune

import (
	"io"

	"github.com/convgen/convgen/gpu"
)

// ServeWorker is the measuring side of the tuner; this build has no CUDA.
func ServeWorker(r io.Reader, w io.Writer) error { return gpu.ErrNoCUDA }
