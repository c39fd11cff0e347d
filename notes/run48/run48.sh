#!/usr/bin/env bash
# Run 48: NCHW producer stores rotated per lane group (rot = lane/8), A/B against HEAD, pinned.
set -u
cd "$(dirname "$0")/../.."  # the repository root
. notes/next/pins.sh
X3A='Overlap=0,PredicatedStores=0,Producer=2,RoundInput=1,Stages=2,TileK=48,TileP=8,TileQ=8,TilesPerWarpgroup=96,VecStage=1,Warpgroups=2'
X3B='Overlap=0,PredicatedStores=0,Producer=2,RoundInput=1,Stages=2,TileK=48,TileP=8,TileQ=8,TilesPerWarpgroup=191,VecStage=1,Warpgroups=1'
T1='Overlap=0,PredicatedStores=0,Producer=1,RoundInput=0,Stages=2,TileK=96,TileP=8,TileQ=8,TilesPerWarpgroup=48,VecStage=0,Warpgroups=2'
T2='Overlap=0,PredicatedStores=0,Producer=1,RoundInput=1,Stages=2,TileK=96,TileP=8,TileQ=8,TilesPerWarpgroup=48,VecStage=1,Warpgroups=2'
T3='Overlap=0,PredicatedStores=0,Producer=2,RoundInput=1,Stages=2,TileK=96,TileP=8,TileQ=8,TilesPerWarpgroup=48,VecStage=1,Warpgroups=2'
for rep in 1 2; do
 for bin in convgen convgen-rot; do
  for v in tf32x3 tf32; do
    if [ $v = tf32x3 ]; then pins=$(ids "$X3A" "$X3B"); else pins=$(ids "$T1" "$T2" "$T3"); fi
    CONVGEN=.dev/$bin FLAGSHIP_VARIANTS=$v scripts/flagship -retune $pins >> $OUT/run48.log 2>&1
    echo "rc $?" >> $OUT/run48.log
    grep '^| `wgmma' examples/alexnet/$v/REPORT.md | cut -d'|' -f2-4,8-10 | sed "s/^/$rep $bin $v /" | tee -a $OUT/run48.txt
  done
 done
done
