#!/bin/bash
# Run 99: ncu of the new 3xtf32 winner (RegisterA, three computing
# warpgroups, AGroup 1) against the descriptor-path configuration, both
# rendered from the template at 1206e3b into .dev/rega, built by
# notes/run71/harness-run.sh; the same metrics as run 86.
notes/run71/harness-run.sh .dev/rega run99 1 > /dev/null
D=$OUT/run99
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for k in x3_base x3_win; do
  timeout 120 $NCU -k regex:convgen --launch-count 1 --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis \
    --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum \
    --print-details all $D/$k > $OUT/ncu99-$k.txt 2>&1
  grep -E "Duration|Pipe Tensor Cycles|L1: Data Pipe Lsu|Issue Active|Stall (Barrier|Long|Short|Wait|GMMA|MIO)|wavefronts_mem_shared.sum" $OUT/ncu99-$k.txt | tr -s ' ' | sed "s/^/$k: /"
done
rm -rf $D
