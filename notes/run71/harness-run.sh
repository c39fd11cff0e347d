#!/bin/bash
# Builds and times a set of rendered kernels with notes/run71/harness.cu on
# the GPU machine (nvcc there), and compares their outputs. Used by runs
# 71-76 (their run*.sh call it).
#
#   notes/run71/harness-run.sh SRC_DIR RUN_NAME [REPS]
#
# SRC_DIR holds the kernels' .cu files and params.txt (name, grid x, grid y,
# threads, shared bytes), rendered with notes/run71/render_test.go.txt or
# written by notes/run73/gen.py. A file with VEC_STAGE 2 gets a tensor map
# (TMA); names with fp16/bf16 get 2-byte inputs. Outputs (every 97th) are
# compared: new_X with old_X when both exist, else every *.bin with
# tf32_base or x3_base (by name: x3_* and rega_x_* against x3_base).
# Logs go to $OUT/RUN_NAME.
set -u
src=$1 run=$2 reps=${3:-2}
NVCC=/usr/local/cuda/bin/nvcc
D=$OUT/$run; mkdir -p $D
H=$PWD/notes/run71/harness.cu
cd "$src"
while read k gx gy bx sm; do
  name=$(grep '^#define KNAME' $k.cu | awk '{print $3}')
  tma=0; grep -q '^#define VEC_STAGE 2' $k.cu && tma=1
  half=0; case $k in *fp16*) half=1;; *bf16*) half=2;; esac
  ( $NVCC -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Xptxas -v -o $D/$k -DKFILE="\"$PWD/$k.cu\"" -DKNAME=$name -DKSTR="\"$k\"" -DTMA=$tma -DHALF=$half \
     -DGX=$gx -DGY=$gy -DBX=$bx -DSMEM=$sm -DOUTFILE="\"$D/$k.bin\"" $H -lcuda > $D/build-$k.log 2>&1 || echo "build $k failed" ) &
done < params.txt
wait
for f in $D/build-*.log; do echo "$f: $(grep -h "registers\|spill\|C75" $f | tr -s " " | tr "\n" " ")"; grep -i error $f | head -5; done
for rep in $(seq $reps); do
  while read k gx gy bx sm; do
    [ -x $D/$k ] && timeout 60 $D/$k 2>&1 | tee -a $D/run.log
  done < params.txt
done
python3 - "$D" <<'PY'
import sys, numpy as np, os
d = sys.argv[1]
bins = sorted(f for f in os.listdir(d) if f.endswith('.bin'))
for f in bins:
    if f.startswith('new_') and 'old_' + f[4:] in bins:
        ref = 'old_' + f[4:]
    elif f.startswith(('x3', 'rega_x')) and 'x3_base.bin' in bins:
        ref = 'x3_base.bin'
    elif 'tf32_base.bin' in bins and not f.startswith('old_'):
        ref = 'tf32_base.bin'
    else:
        continue
    x = np.fromfile(d + '/' + f, np.float32); r = np.fromfile(d + '/' + ref, np.float32)
    print(f, 'vs', ref, 'bit-identical:', x.tobytes() == r.tobytes(),
          'rel diff', float(np.linalg.norm(x.astype(np.float64) - r) / np.linalg.norm(r)), 'max abs', float(np.abs(x - r).max()))
PY
rm -f $D/*.bin
