#!/bin/bash
# Run 113: 16-column tiles for tf32 NCHW with (a) run 43's order (k step
# after k step, sub-tiles inside) and (b) an epilogue that stores 16-pixel
# runs (two shuffles give each lane pixel L % 16 of two channels: a warp
# store is two 64-byte runs instead of four 32-byte ones; run 112). Sources
# in .dev/st (notes/run113/render_test.go.txt); harness of run 71.
set -u
notes/run71/harness-run.sh .dev/st run113 3 > $OUT/run113.log 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> $OUT/run113.log
tar -C $OUT -czf $OUT/run113.tgz run113 && rm -rf $OUT/run113
