#!/usr/bin/env bash
# Run 51: run 44's probes with a pass the compiler cannot drop (Probe 1: a
# second wgmma pass over a zero B block, accumulated), and SASS counts.
set -u
cd "$(dirname "$0")/../.."  # the repository root
. notes/next/pins.sh
run() { local v=$1; shift
  CONVGEN=.dev/convgen-probe2 FLAGSHIP_VARIANTS=$v scripts/flagship -retune "$@" >> $OUT/run51.log 2>&1
  grep '^| `wgmma' examples/alexnet/$v/REPORT.md | cut -d'|' -f2-4,8-10 | sed "s/^/$v /" | tee -a $OUT/run51.txt
}
for rep in 1 2; do
run tf32nhwc $(ids "Probe=0,$NHWC" "Probe=1,$NHWC" "Probe=3,$NHWC" "Probe=0,$NHWC3" "Probe=1,$NHWC3")
run tf32 $(ids "Probe=0,$NCHW" "Probe=1,$NCHW")
run tf32x3 $(ids "Probe=0,$X3" "Probe=1,$X3" "Probe=3,$X3")
done
for pr in 0 1 3; do
  CONVGEN=.dev/convgen-probe2 FLAGSHIP_VARIANTS=tf32nhwc scripts/flagship -retune $(ids "Probe=$pr,$NHWC") >> $OUT/run51.log 2>&1
  s=$($CUOBJ -sass examples/alexnet/tf32nhwc/kernel_sm_90a.cubin)
  echo "tf32nhwc Probe=$pr SASS: HGMMA $(grep -c HGMMA <<<"$s") STS $(grep -c ' STS' <<<"$s") STG $(grep -c ' STG' <<<"$s")" | tee -a $OUT/run51.txt
done
