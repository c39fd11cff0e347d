#!/bin/bash
# Run 73: prototype kernels with the wgmma A operand in registers, loaded
# straight from global memory (notes/run73/gen.py), against the committed
# NCHW winners, through notes/run71/harness.cu (nvcc on the GPU machine).
# .dev/rega holds the committed winners' sources (tf32_base, x3_base, rendered
# by notes/run71/render_test.go.txt without the TMA patch) and gen.py's
# kernels, with params.txt (name, grid x, grid y, threads, shared bytes).
# Outputs are compared with the committed winners' on the same inputs.
set -u
NVCC=/usr/local/cuda/bin/nvcc
D=$OUT/run73; mkdir -p $D
H=$PWD/notes/run71/harness.cu
cd .dev/rega
while read k gx gy bx sm; do
  name=$(grep '^#define KNAME' $k.cu | awk '{print $3}')
  tma=0; grep -q '^#define VEC_STAGE 2' $k.cu && tma=1
  ( $NVCC -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Xptxas -v -o $D/$k -DKFILE="\"$PWD/$k.cu\"" -DKNAME=$name -DKSTR="\"$k\"" -DTMA=$tma \
     -DGX=$gx -DGY=$gy -DBX=$bx -DSMEM=$sm -DOUTFILE="\"$D/$k.bin\"" $H -lcuda > $D/build-$k.log 2>&1 || echo "build $k failed" ) &
done < params.txt
wait
for f in $D/build-rega*.log; do echo "$f: $(grep -h "registers\|spill" $f | tr -s " " | tr "\n" " ")"; grep -i error $f | head -5; done
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
    x = np.fromfile(d + '/' + f, np.float32); r = ref['x3' if f.startswith(('x3', 'rega_x')) else 'tf32']
    print(f, 'rel diff to base', float(np.linalg.norm(x.astype(np.float64) - r) / np.linalg.norm(r)), 'max abs', float(np.abs(x - r).max()))
PY
rm -f $D/*.bin
