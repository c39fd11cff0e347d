// Package gpu is convgen's thin layer over the CUDA driver (gorgonia.org/cu):
// device facts, module loading with large dynamic shared memory, and
// event-timed launches. Everything that touches the driver is behind the
// `cuda` build tag; without it the package offers only Info, ErrNoCUDA and
// Available (false), so that untagged builds need neither headers nor a GPU.
package gpu

import "errors"

// ErrNoCUDA is returned by every driver call in builds without the cuda tag.
var ErrNoCUDA = errors.New("convgen was built without the cuda build tag: rebuild with -tags cuda on a machine with a GPU to tune")

// Info describes the device a kernel was measured on.
type Info struct {
	Name              string  `json:"name"`               // e.g. "NVIDIA H200"
	ComputeCapability string  `json:"compute_capability"` // e.g. "9.0"
	Arch              string  `json:"arch"`               // e.g. "sm_90"
	SMs               int     `json:"sms"`
	Driver            string  `json:"driver"` // the driver's CUDA version, e.g. "13.0"
	ClockMHz          int     `json:"clock_mhz"`
	SharedOptin       int     `json:"shared_optin_bytes"` // max dynamic shared memory per block with opt-in
	L2Bytes           int     `json:"l2_bytes"`
	MemoryGBps        float64 `json:"memory_gbps"` // measured device-to-device copy, bytes read + written
}

// PeakFP32 is the FFMA peak in FLOP/s: SMs × 128 lanes × 2 × clock.
func (i Info) PeakFP32() float64 { return float64(i.SMs) * 128 * 2 * float64(i.ClockMHz) * 1e6 }
