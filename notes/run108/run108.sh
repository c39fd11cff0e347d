#!/bin/bash
# Run 108: a storer warpgroup (Storer = 1) for NCHW outputs: the computing
# warpgroups leave each tile's sums in a shared staging tile, one more
# warpgroup writes them to global memory. Sources in .dev/st rendered by a
# temporary kernels/zz_proto_test.go (notes/run108/render_test.go.txt);
# nvcc harness of run 71, L2 flushed, median of 50, outputs compared with
# the committed winners' (tf32_base, x3_base).
set -u
notes/run71/harness-run.sh .dev/st run108 3 > $OUT/run108.log 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> $OUT/run108.log
tar -C $OUT -czf $OUT/run108.tgz run108 && rm -rf $OUT/run108
