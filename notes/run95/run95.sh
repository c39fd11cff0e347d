#!/bin/bash
# Run 95: a clock64 timeline of the RegisterA 3xtf32 winner (AGroup 4) and
# of its AGroup 2 neighbour: sources rendered into .dev/rega (params.txt:
# name, kernel, grid x, grid y, threads, shared bytes), timers added by
# notes/run95/instrument.py, built with nvcc against notes/run95/harness.cu.
set -u
NVCC=/usr/local/cuda/bin/nvcc
while read k kname gx gy bx sm; do
  python3 notes/run95/instrument.py .dev/rega/$k.cu /tmp/${k}_t.cu || continue
  $NVCC -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Xptxas -v -DKFILE="\"/tmp/${k}_t.cu\"" -DKNAME=$kname -DKSTR="\"$k\"" \
    -DGX=$gx -DGY=$gy -DBX=$bx -DSMEM=$sm notes/run95/harness.cu -o /tmp/tl_$k 2>&1 | grep -E "error|registers|spill" | head -5
  /tmp/tl_$k
done < .dev/rega/params.txt
