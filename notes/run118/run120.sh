#!/bin/bash
# Run 120: ncu of the row-band prototype (two and three computing
# warpgroups) against the committed tf32 NCHW and NHWC winners (run 99's
# sections and metrics, plus DRAM bytes).
notes/run71/harness-run.sh .dev/b3 run120 1 > $OUT/run120-harness.log 2>&1
D=$OUT/run120
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for k in tf32_base old_nhwc bl2inc bwg3inc; do
  timeout 120 $NCU -k regex:'convgen|band' --launch-count 1 --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,lts__t_sectors_data_ecc.sum \
    --print-details all $D/$k > $OUT/ncu120-$k.txt 2>&1
  grep -E "Duration|Pipe Tensor Cycles|L1: Data Pipe Lsu|Issue Active|Stall (Barrier|Long|Short|Wait|GMMA|MIO)|wavefronts_mem_shared.sum|dram__bytes|op_st.sum|data_ecc|L2 Cache Throughput|L1/TEX Hit|Mem Busy|Max Bandwidth" $OUT/ncu120-$k.txt | tr -s ' ' | sed "s/^/$k: /"
done
rm -rf $D
