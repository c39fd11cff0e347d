#!/bin/bash
# Run 115: do the committed winners pay ECC read-modify-writes for partial
# output sectors (run 112 saw them in a store-only kernel)? ncu's DRAM and
# L2 ECC counters for tf32 NCHW, 3xtf32 and tf32 NHWC (sources of run 114,
# harness of run 71).
set -u
notes/run71/harness-run.sh .dev/st run115 1 > $OUT/run115.log 2>&1 || true
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_data_ecc.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
for k in tf32_base x3_base old_nhwc; do
  timeout 120 ncu --metrics $M -k regex:convgen -c 1 $OUT/run115/$k >> $OUT/run115-ncu.log 2>&1
done
rm -rf $OUT/run115
