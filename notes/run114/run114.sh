#!/bin/bash
# Run 114: the committed winners (tf32 NCHW, 3xtf32, tf32 NHWC) with block b
# taking tiles b*Warpgroups*TilesPerWarpgroup onwards in order (whole runs
# of neighbouring tiles, so a block's own stores complete the sectors at
# its tile borders) instead of tiles b, b + gridDim.x, ... Sources: .dev/st,
# rendered by notes/run114/render_test.go.txt, rewritten by the python in
# notes/run114/README; harness of run 71.
set -u
notes/run71/harness-run.sh .dev/st run114 3 > $OUT/run114.log 2>&1
tar -C $OUT -czf $OUT/run114.tgz run114 && rm -rf $OUT/run114
