#!/bin/bash
# Run 95: a clock64 timeline of the RegisterA 3xtf32 winner (AGroup 4) and
# of its AGroup 2 neighbour: sources rendered into .dev/rega (params.txt:
# name, kernel, grid x, grid y, threads, shared bytes), timers added by
# notes/run95/instrument.py, built with nvcc against run 68's harness (extended here).
set -u
NVCC=/usr/local/cuda/bin/nvcc
# The harness: run 68's, reading and printing the extra stamps.
sed 's/for (int w = 0; w < 4; ++w) if (x\[w \* 4 + 3\]) { cw += x\[w \* 4\]; cm += x\[w \* 4 + 1\]; ce += x\[w \* 4 + 2\]; cn += x\[w \* 4 + 3\]; ++nwg; }/for (int w = 0; w < 2; ++w) if (x[w * 4 + 3]) { cw += x[w * 4]; cm += x[w * 4 + 1]; ce += x[w * 4 + 2]; cn += x[w * 4 + 3]; cf += x[8 + 3 * w]; cg += x[9 + 3 * w]; cd += x[10 + 3 * w]; ++nwg; }/; s/double cw = 0,/double cf = 0, cg = 0, cd = 0, cw = 0,/; s|    printf("producer thread 0|    printf("  of the issue phase: group waits %.0f, fragment loads and splits after them %.0f cycles per tile; final wgmma wait %.0f\\n", cg / cn, cd / cn, cf / cn);\n    printf("producer thread 0|' notes/run68/harness.cu > /tmp/harness95.cu
while read k kname gx gy bx sm; do
  python3 notes/run95/instrument.py .dev/rega/$k.cu /tmp/${k}_t.cu || continue
  $NVCC -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Xptxas -v -DKFILE="\"/tmp/${k}_t.cu\"" -DKNAME=$kname -DKSTR="\"$k\"" \
    -DGX=$gx -DGY=$gy -DBX=$bx -DSMEM=$sm /tmp/harness95.cu -o /tmp/tl_$k 2>&1 | grep -E "error|registers|spill" | head -5
  /tmp/tl_$k
done < .dev/rega/params.txt
