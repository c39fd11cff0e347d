#!/usr/bin/env bash
# Run 68: a clock64 timeline of the three committed tensor-core winners
# (perf.md "Next" 2). On the GPU machine: convgen (.dev/convgen, cuda tag)
# writes each winner's rendered source (-compile-only -arch sm_90a -pin ID
# -source-dir), instrument.py adds the phase timers, nvcc builds it against
# harness.cu, and the harness runs it on random inputs.
set -u
cd "$(dirname "$0")"
. ../next/pins.sh
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
S='-shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2'
src=$(mktemp -d)
run() { # name precision layout knobs gx gy bx smem
  local name=$1 prec=$2 layout=$3 knobs=$4
  ../../.dev/convgen $S -precision $prec -layout $layout -compile-only -arch sm_90a -q $(ids "$knobs") -source-dir $src/$name > /dev/null
  local cu=$(ls $src/$name/*.cu) kname
  kname=$(basename $cu .cu)
  python3 instrument.py $cu $src/${name}_t.cu || return
  $NVCC -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -DKFILE="\"$src/${name}_t.cu\"" -DKNAME=$kname -DKSTR="\"$name\"" \
    -DGX=$5 -DGY=$6 -DBX=$7 -DSMEM=$8 harness.cu -o $src/tl_$name 2>&1 | grep -v "warning #" | head -20
  $src/tl_$name
}
{
run nhwc tf32 nhwc "$NHWC" 131 1 512 191040
run nchw tf32 nchw "$NCHW" 131 1 384 191040
run x3 3xtf32 nchw 'Overlap=0,PredicatedStores=0,Producer=2,RoundInput=1,Stages=2,TileK=48,TileP=8,TileQ=8,TilesPerWarpgroup=191,VecStage=1,Warpgroups=1' 66 2 384 228480
} > $OUT/run68.log 2>&1
