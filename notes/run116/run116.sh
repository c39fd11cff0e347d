#!/bin/bash
# Run 116: the committed winners (tf32 NCHW, 3xtf32, tf32 NHWC) with block
# tile i mapped to tile ((i / Warpgroups) * grid + b) * Warpgroups +
# i % Warpgroups: a block's computing warpgroups work on neighbouring tiles
# at the same time, the grid still sweeping the tiles in order (run 114's
# rewrite with this GRID_TILE; sources rendered by
# notes/run114/render_test.go.txt); harness of run 71.
set -u
notes/run71/harness-run.sh .dev/st run116 3 > $OUT/run116.log 2>&1
tar -C $OUT -czf $OUT/run116.tgz run116 && rm -rf $OUT/run116
