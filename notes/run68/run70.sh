#!/usr/bin/env bash
# Run 70: NCHW register staging stores a chunk's element pairs as 8-byte
# stores (PAIR_STORES), half the producers' store instructions; the same pins
# with the base binary and the patched one, alternating, twice.
set -u
cd "$(dirname "$0")/../.."
. notes/next/pins.sh
X3b='Overlap=0,PredicatedStores=0,Producer=2,RoundInput=1,Stages=2,TileK=48,TileP=8,TileQ=8,TilesPerWarpgroup=191,VecStage=1,Warpgroups=1'
N2='Overlap=0,PredicatedStores=0,Producer=2,RoundInput=1,Stages=2,TileK=96,TileP=8,TileQ=8,TilesPerWarpgroup=48,VecStage=1,Warpgroups=2'
S='-shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -layout nchw -q -trials 0 -time 120s -retune'
for rep in 1 2; do
  for b in base pair; do
    echo "== $b 3xtf32 (rep $rep)" >> $OUT/run70.txt
    .dev/convgen-$b $S -precision 3xtf32 -o /tmp/o_$b -cache /tmp/c_$b.json $(ids "$X3" "$X3b") >> $OUT/run70.log 2>&1
    grep -E '^\| `wgmma' /tmp/o_$b/REPORT.md | cut -d'|' -f2-4,7-10 >> $OUT/run70.txt
    echo "== $b tf32 nchw (rep $rep)" >> $OUT/run70.txt
    .dev/convgen-$b $S -precision tf32 -o /tmp/o_$b -cache /tmp/c_$b.json $(ids "$NCHW" "$N2") >> $OUT/run70.log 2>&1
    grep -E '^\| `wgmma' /tmp/o_$b/REPORT.md | cut -d'|' -f2-4,7-10 >> $OUT/run70.txt
  done
done
