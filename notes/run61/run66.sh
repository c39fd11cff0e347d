#!/usr/bin/env bash
# Run 66: ncu of the committed 3xtf32 and tf32 NHWC winners (wgmma): shared
# memory and tensor pipe throughput, stall reasons.
set -u
cd "$(dirname "$0")/../.."
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for v in tf32x3 tf32nhwc; do
  (cd examples/alexnet/$v && timeout 200 $NCU -k regex:convgen --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats \
    --section ComputeWorkloadAnalysis --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed \
    --print-details all ../../../.dev/example-$v.test -test.run TestForward > $OUT/ncu66_$v.txt 2>&1; echo "rc $?" >> $OUT/ncu66_$v.txt)
done
