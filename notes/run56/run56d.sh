#!/usr/bin/env bash
# Run 56d: run 56c's pinned bulk-store candidates again with the tuner's
# compile bound (d85e06d + notes/run56/bulkstores-biasl1.patch, built as
# .dev/convgen-bulk4): -compile-timeout 60s; then the cuda-tagged tuner test
# of planted failures at d85e06d.
set -u
cd "$(dirname "$0")/../.."
. notes/next/pins.sh
B='Overlap=0,RoundInput=1,TileK=96,TileP=8,TileQ=8,VecStage=1'
pins=$(ids "PredicatedStores=1,Producer=2,Stages=2,TilesPerWarpgroup=48,Warpgroups=2,$B" \
 "BulkStores=1,PredicatedStores=0,Producer=2,Stages=2,TilesPerWarpgroup=48,Warpgroups=2,$B" \
 "BulkStores=1,PredicatedStores=0,Producer=1,Stages=2,TilesPerWarpgroup=48,Warpgroups=2,$B" \
 "BulkStores=1,PredicatedStores=0,Producer=2,Stages=2,TilesPerWarpgroup=96,Warpgroups=1,$B")
S='-shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -precision tf32 -layout nhwc'
( time timeout 200 .dev/convgen-bulk4 $S -retune -q=false -trials 0 -time 5m -compile-timeout 60s -o /tmp/b4 -cache /tmp/b4.json $pins ) > $OUT/run56d.log 2>&1
echo "tune rc $?" >> $OUT/run56d.log
grep -E '^\| `wgmma' /tmp/b4/REPORT.md | cut -d'|' -f2-5 >> $OUT/run56d.log
timeout 200 .dev/autotune.test -test.run 'TestPlanted' -test.v > $OUT/autotune-planted.log 2>&1
echo "planted rc $?" >> $OUT/autotune-planted.log
