#!/bin/bash
# Run 75: the tf32 NHWC winners' epilogue with 16-byte stores (lane pairs
# swap channel pairs; WIDE_STORES in templates/wgmma.cu.tmpl), new_* against
# old_* (the same configurations rendered from the template before the
# change), through notes/run71/harness.cu (nvcc on the GPU machine).
# .dev/wide holds the sources and params.txt (name, grid x, grid y, threads,
# shared bytes), rendered with notes/run71/render_test.go.txt (NHWC).
set -u
NVCC=/usr/local/cuda/bin/nvcc
D=$OUT/run75; mkdir -p $D
H=$PWD/notes/run71/harness.cu
cd .dev/wide
while read k gx gy bx sm; do
  name=$(grep '^#define KNAME' $k.cu | awk '{print $3}')
  tma=0; grep -q '^#define VEC_STAGE 2' $k.cu && tma=1
  ( $NVCC -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Xptxas -v -o $D/$k -DKFILE="\"$PWD/$k.cu\"" -DKNAME=$name -DKSTR="\"$k\"" -DTMA=$tma \
     -DGX=$gx -DGY=$gy -DBX=$bx -DSMEM=$sm -DOUTFILE="\"$D/$k.bin\"" $H -lcuda > $D/build-$k.log 2>&1 || echo "build $k failed" ) &
done < params.txt
wait
for f in $D/build-new*.log; do echo "$f: $(grep -h "registers\|spill" $f | tr -s " " | tr "\n" " ")"; grep -i error $f | head -5; done
for rep in 1 2 3; do
  while read k gx gy bx sm; do
    [ -x $D/$k ] && timeout 60 $D/$k 2>&1 | tee -a $D/run.log
  done < params.txt
done
python3 - "$D" <<'PY'
import sys, numpy as np, os
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    if not f.startswith('new_') or not f.endswith('.bin'): continue
    x = np.fromfile(d + '/' + f, np.float32); r = np.fromfile(d + '/old_' + f[4:], np.float32)
    print(f, 'rel diff to old', float(np.linalg.norm(x.astype(np.float64) - r) / np.linalg.norm(r)), 'max abs', float(np.abs(x - r).max()))
PY
rm -f $D/*.bin
