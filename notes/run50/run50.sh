#!/usr/bin/env bash
# Run 50: ncu stall reasons and source hot spots of the tf32 NCHW and NHWC winners.
set -u
cd "$(dirname "$0")/../.."  # the repository root
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for v in tf32 tf32nhwc; do
  (cd examples/alexnet/$v && timeout 200 $NCU -k regex:convgen --launch-count 1 --section WarpStateStats --section SourceCounters --section SchedulerStats --print-details all ../../../.dev/example-$v.test -test.run TestForward > $OUT/ncu50_$v.txt 2>&1; echo "rc $?" >> $OUT/ncu50_$v.txt)
done
