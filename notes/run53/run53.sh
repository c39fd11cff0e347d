#!/usr/bin/env bash
# Run 53: is run 51's Probe 1 serialised by ptxas (advice, WARPGROUP.DEPBAR between HGMMAs)?
set -u
cd "$(dirname "$0")/../.."  # the repository root
. notes/next/pins.sh
S='N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2'
for pr in 0 1; do
  CONVGEN=.dev/convgen-probe2 FLAGSHIP_VARIANTS=tf32nhwc scripts/flagship -retune $(ids "Probe=$pr,$NHWC") >> $OUT/run53.log 2>&1
  $CUOBJ -sass examples/alexnet/tf32nhwc/kernel_sm_90a.cubin > $OUT/nhwc_probe$pr.sass
  echo "Probe=$pr: $(grep -c HGMMA $OUT/nhwc_probe$pr.sass) HGMMA, $(grep -c 'WARPGROUP.DEPBAR' $OUT/nhwc_probe$pr.sass) DEPBAR, $(grep -c 'WARPGROUP.ARRIVE' $OUT/nhwc_probe$pr.sass) ARRIVE, $(grep -c 'STL' $OUT/nhwc_probe$pr.sass) STL, $(grep -c 'LDL' $OUT/nhwc_probe$pr.sass) LDL" | tee -a $OUT/run53.txt
done
