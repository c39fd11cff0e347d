#!/bin/bash
# Run 71: the TMA producer (VecStage=2) prototype against the committed
# NCHW winners, through notes/run71/harness.cu (nvcc on the GPU machine).
# Sources rendered into .dev/proto with params.txt (name, grid x, grid y,
# threads, shared bytes) by notes/run71/render_test.go.txt, copied into
# kernels/ as a _test.go file and run with PROTO_OUT=$PWD/.dev/proto, after
# `git apply notes/run71/tma.patch` (the template's VecStage = 2; the patch
# is run 72's version). Kernels built with nvcc here, checked against the
# committed winners' outputs (the *_base variants, same inputs).
set -u
NVCC=/usr/local/cuda/bin/nvcc
D=$OUT/run71; mkdir -p $D
H=$PWD/notes/run71/harness.cu
cd .dev/proto
while read k gx gy bx sm; do
  name=$(grep '^#define KNAME' $k.cu | awk '{print $3}')
  tma=0; grep -q '^#define VEC_STAGE 2' $k.cu && tma=1
  ( $NVCC -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o $D/$k -DKFILE="\"$PWD/$k.cu\"" -DKNAME=$name -DKSTR="\"$k\"" -DTMA=$tma \
     -DGX=$gx -DGY=$gy -DBX=$bx -DSMEM=$sm -DOUTFILE="\"$D/$k.bin\"" $H -lcuda > $D/build-$k.log 2>&1 || echo "build $k failed" ) &
done < params.txt
wait
for rep in 1 2; do
  while read k gx gy bx sm; do
    [ -x $D/$k ] && timeout 60 $D/$k 2>&1 | tee -a $D/run.log
  done < params.txt
done
python3 - "$D" <<'PY'
import sys, numpy as np, os
d = sys.argv[1]
ref = {'tf32': np.fromfile(d + '/tf32_base.bin', np.float32), 'x3': np.fromfile(d + '/x3_base.bin', np.float32)}
for f in sorted(os.listdir(d)):
    if not f.endswith('.bin'): continue
    x = np.fromfile(d + '/' + f, np.float32); r = ref[f.split('_')[0]]
    print(f, 'rel diff to base', float(np.linalg.norm(x.astype(np.float64) - r) / np.linalg.norm(r)), 'max abs', float(np.abs(x - r).max()))
PY
rm -f $D/*.bin
