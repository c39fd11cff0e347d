#!/usr/bin/env bash
# Run 47: does Probe=1 really double the wgmmas (SASS HGMMA count)? ncu L1 breakdown of the current winners.
set -u
cd "$(dirname "$0")/../.."  # the repository root
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump)
$NCU --query-metrics --chip gh100 2>/dev/null | grep -i -E "gmma|tensor_op" | head -20 > $OUT/metrics.txt
. notes/next/pins.sh
M=sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__throughput.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_write.sum,dram__bytes_read.sum,gpu__time_duration.sum,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,l1tex__lsu_writeback_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_lg.sum
for v in tf32nhwc tf32 tf32x3; do
  (cd examples/alexnet/$v && timeout 150 $NCU -k regex:convgen --launch-count 1 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis_Tables --metrics $M ../../../.dev/example-$v.test -test.run TestForward > $OUT/ncu_$v.txt 2>&1; echo "rc $?" >> $OUT/ncu_$v.txt)
done
for pr in 0 1; do
  for v in tf32x3 tf32nhwc; do
    cfg=$X3; [ $v = tf32nhwc ] && cfg=$NHWC
    CONVGEN=.dev/convgen-probe FLAGSHIP_VARIANTS=$v scripts/flagship -retune $(ids "Probe=$pr,$cfg") >> $OUT/probe.log 2>&1
    echo "$v Probe=$pr HGMMA $($CUOBJ -sass examples/alexnet/$v/kernel_sm_90a.cubin | grep -c HGMMA) $(grep '^| `wgmma' examples/alexnet/$v/REPORT.md | cut -d'|' -f3-4)" | tee -a $OUT/sass.txt
    $CUOBJ -sass examples/alexnet/$v/kernel_sm_90a.cubin | grep -E "HGMMA|WARPGROUP" | head -3 >> $OUT/sass.txt
  done
done
