#!/bin/bash
# Run 111: storers whose addresses are a thread base plus compile-time offsets (run 110's computed every index per element)
# warpgroups leave each tile's sums in a shared staging tile, one more
# warpgroup writes them to global memory. Sources in .dev/st rendered by a
# temporary kernels/zz_proto_test.go (notes/run111/render_test.go.txt);
# nvcc harness of run 71, L2 flushed, median of 50, outputs compared with
# the committed winners' (tf32_base, x3_base).
set -u
notes/run71/harness-run.sh .dev/st run111 3 > $OUT/run111.log 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> $OUT/run111.log
tar -C $OUT -czf $OUT/run111.tgz run111 && rm -rf $OUT/run111
