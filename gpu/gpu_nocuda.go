//go:build !cuda

package gpu

// Available reports whether this build can drive a GPU.
func Available() bool { return false }
