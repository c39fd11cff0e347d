// Package resnetblock shows one go:generate line producing several
// convgen packages from a config file: three convolutions of ResNet-50 at
// batch 32, in NHWC, whose records convgen-cache.json holds (copied from
// bench/suite-cache.json, tuned on an H100), so that
//
//	go generate ./examples/resnet-block
//
// replays them offline, without a GPU:
//
//	conv3x3  stage 1's 3×3 convolution, C=K=64 on 56×56, FP16 data
//	down     stage 2's downsampling 1×1, stride 2, 256→512 channels, TF32
//	expand   stage 3's 1×1 expansion, 256→1024 channels on 14×14, FP16 data
//
// The config file, convgen.json, lists each package's shape, precision,
// layout and output directory; the flags after -config (here -q) apply to
// every package. Layers hands the three kernels to code that knows only
// the convrt.Conv interface.
package resnetblock

//go:generate go run github.com/convgen/convgen/cmd/convgen -q -config convgen.json
