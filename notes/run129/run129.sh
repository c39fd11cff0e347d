#!/bin/bash
# Run 129: ncu (clocks not locked) of the tf32 NCHW and NHWC packages'
# kernels, first launch of their TestForward: DRAM bytes and throughput on
# the GPU at hand (are the TF32 winners DRAM-bound on an H100?).
# Binaries: .dev/pack2/bundle.tgz (example-tf32.test, example-tf32nhwc.test).
set -u
tar xzf .dev/pack2/bundle.tgz -C .dev
nvidia-smi -L
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for v in tf32 tf32nhwc; do
  (cd examples/alexnet/$v && timeout 80 $NCU --clock-control none -k regex:convgen --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_data_ecc.sum \
    ../../../.dev/example-$v.test -test.run 'TestForward$' > $OUT/ncu129-$v.txt 2>&1)
  grep -E "Duration|DRAM Throughput|dram__|Memory Throughput|L2 Cache Throughput|SM Frequency|DRAM Frequency|data_ecc|Mem Busy|Max Bandwidth" $OUT/ncu129-$v.txt | tr -s ' ' | sed "s/^/$v: /"
done
