#!/bin/bash
# Run 86: ncu of the register-A 3xtf32 variant against the committed
# configuration (both rendered from the working template), plus three
# computing warpgroups with register A.
notes/run71/harness-run.sh .dev/rega ${RUN:-run86} 2
D=$OUT/${RUN:-run86}
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for k in ${NCU_KERNELS:-}; do
  timeout 120 $NCU -k regex:convgen --launch-count 1 --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis \
    --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum \
    --print-details all $D/$k > $D/ncu-$k.txt 2>&1
done
rm -f $D/x3_*[!st] $D/build-*.log
