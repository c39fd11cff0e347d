#!/bin/bash
# Run 118: the row-band prototype (notes/run118/band.cu; STORE_MODE 0/1,
# LAG 1/2) beside the committed tf32 NCHW and NHWC winners, nvcc harness.
set -u
notes/run71/harness-run.sh .dev/b1 run118 3 > $OUT/run118.log 2>&1
cat $OUT/run118.log
