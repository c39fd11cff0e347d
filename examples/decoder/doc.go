// Package decoder shows a transposed convolution (PyTorch's
// ConvTranspose2d) from one go:generate line: a decoder's last layer, 64
// feature channels at 112×112 up to an RGB image at 224×224,
// ConvTranspose2d(64, 3, 7, stride=2, padding=3, output_padding=1) at batch
// 32 in FP16 NHWC. convgen computes it as the data gradient of the forward
// convolution whose input is its output (ResNet-50's stem, 3 → 64 channels,
// 7×7, stride 2), so its tuned record is that gradient's: convgen-cache.json
// holds it (copied from bench/grad-cache.json, tuned on an H100, the
// dgradscatter family), and
//
//	go generate ./examples/decoder
//
// replays it offline, without a GPU, into package torgb. Its kernel
// offers BackwardData(stream, dY, W, dX); for the transposed convolution
// that is ToRGB(stream, x, w, y): x the N×112×112×64 input, w the weight in
// ConvTranspose2d's order permuted for NHWC (64×7×7×3: in_channels, kernel
// rows, kernel columns, out_channels), y the N×224×224×3 output, written
// whole.
package decoder

//go:generate go run github.com/convgen/convgen/cmd/convgen -q -op transposed -shape N=32,C=64,H=112,W=112,K=3,R=7,S=7,stride=2,pad=3,output_padding=1 -precision fp16 -layout nhwc -cache convgen-cache.json -o torgb
