#!/bin/bash
# Run 117: row-band NCHW store patterns alone (notes/run117/stores2.cu),
# timed, then ncu's L2/DRAM counters.
set -u
cd notes/run117
/usr/local/cuda/bin/nvcc -O3 -std=c++17 -arch=sm_90a stores2.cu -o $OUT/stores2 > $OUT/run117.log 2>&1
$OUT/stores2 >> $OUT/run117.log 2>&1
ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_data_ecc.sum \
    -c 6 $OUT/stores2 ncu >> $OUT/run117-ncu.log 2>&1
rm -f $OUT/stores2
