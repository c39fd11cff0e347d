#!/usr/bin/env bash
# Run 56: BulkStores with the bias read from L1 in the epilogue (no bias registers) and the
# consumer tile loop kept rolled; SASS check of HGMMA count and spills.
set -u
cd "$(dirname "$0")/../.."  # the repository root
. notes/next/pins.sh
B='Overlap=0,RoundInput=1,TileK=96,TileP=8,TileQ=8,VecStage=1'
BULK22="BulkStores=1,PredicatedStores=0,Producer=2,Stages=2,TilesPerWarpgroup=48,Warpgroups=2,$B"
pins=$(ids "PredicatedStores=1,Producer=2,Stages=2,TilesPerWarpgroup=48,Warpgroups=2,$B" "$BULK22" \
 "BulkStores=1,PredicatedStores=0,Producer=1,Stages=2,TilesPerWarpgroup=48,Warpgroups=2,$B" \
 "BulkStores=1,PredicatedStores=0,Producer=2,Stages=2,TilesPerWarpgroup=96,Warpgroups=1,$B")
CONVGEN=.dev/convgen-bulk3 FLAGSHIP_VARIANTS=tf32nhwc scripts/flagship -retune $pins >> $OUT/run56.log 2>&1
grep '^| `wgmma' examples/alexnet/tf32nhwc/REPORT.md | cut -d'|' -f2-4,8-10 | tee -a $OUT/run56.txt
CONVGEN=.dev/convgen-bulk3 FLAGSHIP_VARIANTS=tf32nhwc scripts/flagship -retune $(ids "$BULK22") >> $OUT/run56.log 2>&1
s=$($CUOBJ -sass examples/alexnet/tf32nhwc/kernel_sm_90a.cubin)
echo "bulk 2+2 SASS: $(grep -c HGMMA <<<"$s") HGMMA, $(grep -c ' STL' <<<"$s") STL, $(grep -c ' LDL' <<<"$s") LDL, $(grep -c 'UBLKCP\|BLKCP\|UTMA' <<<"$s") bulk-copy instrs" | tee -a $OUT/run56.txt
