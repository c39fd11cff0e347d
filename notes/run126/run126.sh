#!/bin/bash
# Run 126: the final checks at the commit given ($1), one lease: the autotune
# package's cuda tests (TestPlantedFailures, TestOddShapes), the six
# flagship packages' GPU tests and the benchmark (notes/run92/gpu-checks.sh),
# with the SM clock, power and throttle reasons sampled every 100 ms during
# the benchmark (is 3xtf32's bimodal time a clock effect?).
# Binaries: .dev/pack/bundle.tgz (scripts/build-device, then tar).
set -u
notes/run92/gpu-checks.sh autotune
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 100 > $OUT/smi-during-bench.csv 2>&1 &
smi=$!
notes/run92/gpu-checks.sh $1
kill $smi
