#!/usr/bin/env bash
# Run 65: ncu of the mmawinograd 3xtf32 candidate through a package test
# binary (devpkg/mwx3, replayed here from run 64's record; its cubin is
# NVRTC 11.8's, the tuner's was NVRTC 13's).
set -u
cd "$(dirname "$0")/../.."
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
cd devpkg/mwx3
timeout 300 $NCU -k regex:mmawinograd --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
  --section MemoryWorkloadAnalysis --section InstructionStats --section Occupancy --section SourceCounters --print-details all \
  ../../.dev/mwx3.test -test.run TestForward > $OUT/ncu65.txt 2>&1
echo "rc $?" >> $OUT/ncu65.txt
