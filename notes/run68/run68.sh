#!/usr/bin/env bash
# Run 68: a clock64 timeline of the three committed tensor-core winners
# (perf.md "Next" 2): each kernel's rendered source (the package's, byte for
# byte, from kernels.RenderCandidate) with phase timers added by
# instrument.py (*_t.cu), built with nvcc against harness.cu on the GPU
# machine and run on random inputs.
set -u
cd "$(dirname "$0")"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
build() { # name kernel gx gy bx smem
  $NVCC -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -DKFILE="\"$1_t.cu\"" -DKNAME=$2 -DKSTR="\"$1\"" -DGX=$3 -DGY=$4 -DBX=$5 -DSMEM=$6 \
    harness.cu -o /tmp/tl_$1 2>&1 | grep -v "warning #" | head -20
}
{
build nhwc convgen_wgmma_tf32_8190447c 131 1 512 191040 && /tmp/tl_nhwc
build nchw convgen_wgmma_tf32_87cb049c 131 1 384 191040 && /tmp/tl_nchw
build x3 convgen_wgmma_tf32x3_4906519e 66 2 384 228480 && /tmp/tl_x3
} > $OUT/run68.log 2>&1
