package autotune

import "github.com/convgen/convgen/kernels"

// plantedKernel is a hand-written candidate with the convolution's parameter
// list and the given body, for tests that plant failures in a tuning run.
func plantedKernel(name, body string) kernels.Kernel {
	return kernels.Kernel{Family: "planted", Config: kernels.Config{}, Name: name,
		Source: `extern "C" __global__ void ` + name + `(float* out, const float* in, const float* filter, const float* bias) {
` + body + `
}`,
		Launch: kernels.Launch{Grid: [3]int{64, 1, 1}, Block: [3]int{128, 1, 1}}}
}
