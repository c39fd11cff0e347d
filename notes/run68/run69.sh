#!/usr/bin/env bash
# Run 69: a third producer warpgroup (Producer=3; the template is generic in
# it, the Go space stopped at 2), pinned beside the committed winners, after
# run 68 showed 3xtf32's producers 99.5% busy and tf32's about 90%.
set -u
cd "$(dirname "$0")/../.."
. notes/next/pins.sh
run() { local v=$1; shift
  echo "== $v" >> $OUT/run69.log
  CONVGEN=.dev/convgen-p3 FLAGSHIP_VARIANTS=$v timeout 200 scripts/flagship -retune -q=false -trials 0 -time 170s -compile-timeout 90s "$@" >> $OUT/run69.log 2>&1
  grep -E '^\| `wgmma' examples/alexnet/$v/REPORT.md | cut -d'|' -f2-4,7-11 | sed "s/^/$v /" >> $OUT/run69.txt
}
P3X='Overlap=0,RoundInput=1,TileK=48,TileP=8,TileQ=8,VecStage=1,Warpgroups=1,Producer=3'
run tf32x3 $(ids "$X3" "$P3X,PredicatedStores=0,Stages=2,TilesPerWarpgroup=191" "$P3X,PredicatedStores=1,Stages=2,TilesPerWarpgroup=191" \
  "$P3X,PredicatedStores=0,Stages=1,TilesPerWarpgroup=191" "$P3X,PredicatedStores=0,Stages=2,TilesPerWarpgroup=16")
P3N='Overlap=0,RoundInput=1,TileK=96,TileP=8,TileQ=8,VecStage=1,Producer=3'
run tf32nhwc $(ids "$NHWC" "$P3N,PredicatedStores=1,Stages=2,TilesPerWarpgroup=48,Warpgroups=2" "$P3N,PredicatedStores=0,Stages=2,TilesPerWarpgroup=48,Warpgroups=2" \
  "$P3N,PredicatedStores=1,Stages=4,TilesPerWarpgroup=48,Warpgroups=2" "$P3N,PredicatedStores=1,Stages=1,TilesPerWarpgroup=96,Warpgroups=1")
run tf32 $(ids "$NCHW" "$P3N,PredicatedStores=0,Stages=2,TilesPerWarpgroup=48,Warpgroups=2" "$P3N,PredicatedStores=1,Stages=2,TilesPerWarpgroup=48,Warpgroups=2")
