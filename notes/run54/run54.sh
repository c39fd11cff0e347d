#!/usr/bin/env bash
# Run 54: run 49's BulkStores with the bulk copies predicated instead of branched around.
set -u
cd "$(dirname "$0")/../.."  # the repository root
. notes/next/pins.sh
B='Overlap=0,RoundInput=1,TileK=96,TileP=8,TileQ=8,VecStage=1'
pins=$(ids "PredicatedStores=1,Producer=2,Stages=2,TilesPerWarpgroup=48,Warpgroups=2,$B" \
 "BulkStores=1,PredicatedStores=0,Producer=2,Stages=2,TilesPerWarpgroup=48,Warpgroups=2,$B" \
 "PredicatedStores=1,Producer=1,Stages=2,TilesPerWarpgroup=48,Warpgroups=2,$B" \
 "BulkStores=1,PredicatedStores=0,Producer=1,Stages=2,TilesPerWarpgroup=48,Warpgroups=2,$B" \
 "PredicatedStores=1,Producer=2,Stages=2,TilesPerWarpgroup=96,Warpgroups=1,$B" \
 "BulkStores=1,PredicatedStores=0,Producer=2,Stages=2,TilesPerWarpgroup=96,Warpgroups=1,$B")
CONVGEN=.dev/convgen-bulk2 FLAGSHIP_VARIANTS=tf32nhwc scripts/flagship -retune $pins >> $OUT/run54.log 2>&1
echo "rc $?" >> $OUT/run54.log
grep '^| `wgmma' examples/alexnet/tf32nhwc/REPORT.md | cut -d'|' -f2-4,8-10 | tee -a $OUT/run54.txt
