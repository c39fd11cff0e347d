#!/usr/bin/env bash
# Run 56c: why run 56 gave no output. Compile-only first (NVRTC 13, sm_90a),
# then the tuning run with progress, each under a short timeout.
set -u
cd "$(dirname "$0")/../.."
. notes/next/pins.sh
B='Overlap=0,RoundInput=1,TileK=96,TileP=8,TileQ=8,VecStage=1'
BULK22="BulkStores=1,PredicatedStores=0,Producer=2,Stages=2,TilesPerWarpgroup=48,Warpgroups=2,$B"
pins=$(ids "PredicatedStores=1,Producer=2,Stages=2,TilesPerWarpgroup=48,Warpgroups=2,$B" "$BULK22" \
 "BulkStores=1,PredicatedStores=0,Producer=1,Stages=2,TilesPerWarpgroup=48,Warpgroups=2,$B" \
 "BulkStores=1,PredicatedStores=0,Producer=2,Stages=2,TilesPerWarpgroup=96,Warpgroups=1,$B")
S='-shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -precision tf32 -layout nhwc'
( time timeout 120 .dev/convgen-bulk3 $S --compile-only -arch sm_90a $pins ) > $OUT/run56c.log 2>&1
echo "compile-only rc $?" >> $OUT/run56c.log
( time timeout 150 .dev/convgen-bulk3 $S -retune -q=false -trials 0 -time 90s -o /tmp/b3 -cache /tmp/b3.json $pins ) >> $OUT/run56c.log 2>&1
echo "tune rc $?" >> $OUT/run56c.log
