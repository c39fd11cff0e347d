//go:build !cuda

package convrt

import "fmt"

// CUStream is gorgonia.org/cu's Stream, which StreamOf converts. In this
// build, without the cuda tag, gorgonia.org/cu cannot be imported and
// CUStream is an empty stand-in.
type CUStream struct{}

// CUDevicePtr is gorgonia.org/cu's DevicePtr, which PtrOf converts. In this
// build, without the cuda tag, it is a stand-in of the same kind.
type CUDevicePtr uintptr

// StreamOf converts a gorgonia.org/cu stream to the Stream that Forward
// takes. In this build, without the cuda tag, there is no stream to convert
// and it returns 0.
func StreamOf(CUStream) Stream { return 0 }

// PtrOf converts a gorgonia.org/cu device pointer to a DevicePtr.
func PtrOf(p CUDevicePtr) DevicePtr { return DevicePtr(p) }

// Kernel is a loaded kernel. This build lacks the cuda build tag: Load
// returns none, and the methods return an error wrapping ErrNoCUDA.
type Kernel struct{ info Info }

// Load loads s's kernel into the current CUDA context. This build lacks the
// cuda build tag: it returns an error wrapping ErrNoCUDA.
func Load(s *Spec) (*Kernel, error) { return nil, noCUDA(s.pkg(), "load") }

// LoadPTX loads the kernel of s's PTX. This build lacks the cuda build tag:
// it returns an error wrapping ErrNoCUDA.
func LoadPTX(s *Spec) (*Kernel, error) { return nil, noCUDA(s.pkg(), "load PTX") }

// pkg is the package name of s, "" for a nil s.
func (s *Spec) pkg() string {
	if s == nil {
		return ""
	}
	return s.Package
}

// Forward enqueues the convolution. This build lacks the cuda build tag: it
// returns an error wrapping ErrNoCUDA.
func (k *Kernel) Forward(stream Stream, out, in, filter, bias DevicePtr) error {
	return noCUDA(k.Info().Package, "forward")
}

// ForwardEpilogue enqueues the convolution with its epilogue's arrays. This
// build lacks the cuda build tag: it returns an error wrapping ErrNoCUDA.
func (k *Kernel) ForwardEpilogue(stream Stream, out, in, filter, bias DevicePtr, ep Epilogue) error {
	return noCUDA(k.Info().Package, "forward")
}

// BackwardData enqueues the input gradient. This build lacks the cuda
// build tag: it returns an error wrapping ErrNoCUDA.
func (k *Kernel) BackwardData(stream Stream, dY, w, dX DevicePtr) error {
	return noCUDA(k.Info().Package, "backward data")
}

// BackwardFilter enqueues the filter and bias gradients. This build lacks
// the cuda build tag: it returns an error wrapping ErrNoCUDA.
func (k *Kernel) BackwardFilter(stream Stream, x, dY, dW, dBias DevicePtr) error {
	return noCUDA(k.Info().Package, "backward filter")
}

// Info describes the kernel and the problem it solves.
func (k *Kernel) Info() Info {
	if k == nil {
		return Info{}
	}
	return k.info
}

// Close unloads the kernel. This build lacks the cuda build tag: it returns
// an error wrapping ErrNoCUDA.
func (k *Kernel) Close() error { return noCUDA(k.Info().Package, "close") }

// noCUDA is the error of every operation in this build.
func noCUDA(pkg, op string) error {
	if pkg == "" {
		pkg = "convrt"
	}
	return fmt.Errorf("%s: %s: %w", pkg, op, ErrNoCUDA)
}
