#!/usr/bin/env bash
# Run 55: Probe 1 without extra descriptors (a zero-B wgmma after each k step's), and its SASS.
set -u
cd "$(dirname "$0")/../.."  # the repository root
. notes/next/pins.sh
run() { local v=$1; shift
  CONVGEN=.dev/convgen-probe3 FLAGSHIP_VARIANTS=$v scripts/flagship -retune "$@" >> $OUT/run55.log 2>&1
  grep '^| `wgmma' examples/alexnet/$v/REPORT.md | cut -d'|' -f2-4,8-10 | sed "s/^/$v /" | tee -a $OUT/run55.txt
}
run tf32nhwc $(ids "Probe=0,$NHWC" "Probe=1,$NHWC")
run tf32 $(ids "Probe=0,$NCHW" "Probe=1,$NCHW")
run tf32x3 $(ids "Probe=0,$X3" "Probe=1,$X3")
CONVGEN=.dev/convgen-probe3 FLAGSHIP_VARIANTS=tf32nhwc scripts/flagship -retune $(ids "Probe=1,$NHWC") >> $OUT/run55.log 2>&1
s=$($CUOBJ -sass examples/alexnet/tf32nhwc/kernel_sm_90a.cubin)
echo "tf32nhwc Probe=1 SASS: $(grep -c HGMMA <<<"$s") HGMMA, $(grep -c 'WARPGROUP.DEPBAR' <<<"$s") DEPBAR, $(grep -c 'WARPGROUP.ARRIVE' <<<"$s") ARRIVE, $(grep -c ' STL' <<<"$s") STL, $(grep -c ' LDL' <<<"$s") LDL" | tee -a $OUT/run55.txt
