#!/bin/bash
# Run 110: storers (1 or 2) that store in the computing warpgroups' pattern (8 pixels x 4 channels a warp store) for NCHW outputs: the computing
# warpgroups leave each tile's sums in a shared staging tile, one more
# warpgroup writes them to global memory. Sources in .dev/st rendered by a
# temporary kernels/zz_proto_test.go (notes/run110/render_test.go.txt);
# nvcc harness of run 71, L2 flushed, median of 50, outputs compared with
# the committed winners' (tf32_base, x3_base).
set -u
notes/run71/harness-run.sh .dev/st run110 3 > $OUT/run110.log 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> $OUT/run110.log
tar -C $OUT -czf $OUT/run110.tgz run110 && rm -rf $OUT/run110
