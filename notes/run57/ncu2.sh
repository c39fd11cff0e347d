#!/usr/bin/env bash
set -u
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
mkdir -p $OUT/w
cd devpkg/wfp32
timeout 300 $NCU -k regex:convgen_winograd --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section InstructionStats --section MemoryWorkloadAnalysis --section SourceCounters --print-details all \
 ../../.dev/w/wfp32.test -test.run TestForward > $OUT/w/ncu2.txt 2>&1
echo rc=$?
grep -E "Duration|Throughput|Busy|Pipe|Stall|Warp Cycles|Eligible|Issued|Executed Ipc|FMA|FP32|Shared|Bank|One or More|No Eligible" $OUT/w/ncu2.txt | head -80
