#!/bin/bash
# Run 112: NCHW output store patterns alone (notes/run112/stores.cu), timed,
# then ncu's L2 and DRAM counters for the tile, tile56 and flat kernels.
set -u
cd notes/run112
/usr/local/cuda/bin/nvcc -O3 -std=c++17 -arch=sm_90a stores.cu -o $OUT/stores > $OUT/run112.log 2>&1
$OUT/stores >> $OUT/run112.log 2>&1
ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_data_ecc.sum \
    -c 6 $OUT/stores ncu >> $OUT/run112-ncu.log 2>&1
rm -f $OUT/stores
