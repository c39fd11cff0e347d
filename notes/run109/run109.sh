#!/bin/bash
# Run 109: two storer warpgroups (Storer = 2, half of each tile each) for NCHW outputs: the computing
# warpgroups leave each tile's sums in a shared staging tile, one more
# warpgroup writes them to global memory. Sources in .dev/st rendered by a
# temporary kernels/zz_proto_test.go (notes/run109/render_test-st2.go.txt);
# nvcc harness of run 71, L2 flushed, median of 50, outputs compared with
# the committed winners' (tf32_base, x3_base).
set -u
notes/run71/harness-run.sh .dev/st run109 3 > $OUT/run109.log 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> $OUT/run109.log
tar -C $OUT -czf $OUT/run109.tgz run109 && rm -rf $OUT/run109
