#!/usr/bin/env bash
# Run 49: NHWC epilogue through shared memory and bulk copies (BulkStores), pinned, tf32 NHWC.
set -u
cd "$(dirname "$0")/../.."  # the repository root
. notes/next/pins.sh
B='Overlap=0,RoundInput=1,TileK=96,TileP=8,TileQ=8'
pins=$(ids "PredicatedStores=1,Producer=2,Stages=3,TilesPerWarpgroup=32,VecStage=1,Warpgroups=3,$B" \
 "PredicatedStores=1,Producer=2,Stages=2,TilesPerWarpgroup=48,VecStage=1,Warpgroups=2,$B" \
 "BulkStores=1,PredicatedStores=0,Producer=2,Stages=2,TilesPerWarpgroup=48,VecStage=1,Warpgroups=2,$B" \
 "BulkStores=1,PredicatedStores=0,Producer=1,Stages=2,TilesPerWarpgroup=48,VecStage=1,Warpgroups=2,$B" \
 "BulkStores=1,PredicatedStores=0,Producer=2,Stages=2,TilesPerWarpgroup=96,VecStage=1,Warpgroups=1,$B" \
 "BulkStores=1,PredicatedStores=0,Producer=1,Stages=2,TilesPerWarpgroup=48,VecStage=0,Warpgroups=2,Overlap=0,RoundInput=0,TileK=96,TileP=8,TileQ=8")
for rep in 1 2; do
  CONVGEN=.dev/convgen-bulk FLAGSHIP_VARIANTS=tf32nhwc scripts/flagship -retune $pins >> $OUT/run49.log 2>&1
  echo "rc $?" >> $OUT/run49.log
  grep '^| `wgmma' examples/alexnet/tf32nhwc/REPORT.md | cut -d'|' -f2-4,8-10 | sed "s/^/$rep /" | tee -a $OUT/run49.txt
  grep -A3 -i "fail" examples/alexnet/tf32nhwc/REPORT.md | head -20 >> $OUT/run49.txt
done
