#!/usr/bin/env bash
# Run 64: ncu on the tuner itself (following its worker process) for the best
# mmawinograd 3xtf32 candidate: where the time goes.
set -u
cd "$(dirname "$0")/../.."
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
ID='mmawinograd/Chunk=16,StepsPerBlock=96,TileK=48,TileT=32,WarpsK=1,WarpsT=1'
timeout 300 $NCU --target-processes all -k regex:mmawinograd --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
  --section MemoryWorkloadAnalysis --section InstructionStats --section SourceCounters --print-details all \
  .dev/convgen-mw -shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -precision 3xtf32 \
  -retune -trials 0 -q=false --pin "$ID" -o /tmp/x3 -cache /tmp/x3.json > $OUT/ncu64.txt 2>&1
echo "rc $?" >> $OUT/ncu64.txt
