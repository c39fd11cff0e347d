#!/bin/bash
# Run 77 (at bc89955): the benchmark, the six generated packages' cuda tests,
# and TestOddShapes for the two Hopper families (their NHWC epilogue changed),
# with the binaries of scripts/build-device in .dev.
set -u
mkdir -p $OUT/run77
for v in fp32 tf32 tf32nhwc tf32x3 fp16nhwc bf16nhwc; do
  (cd examples/alexnet/$v && timeout 120 ../../../.dev/example-$v.test -test.v > $OUT/run77/pkg-$v.log 2>&1; echo "package $v rc=$?")
done
(cd autotune && timeout 200 ../.dev/autotune.test -test.run 'TestOddShapes//wgmma' -test.v -test.timeout 4m > $OUT/run77/oddshapes-wgmma.log 2>&1; echo "odd shapes rc=$?")
grep -c -- "--- PASS" $OUT/run77/oddshapes-wgmma.log; grep -- "--- FAIL" $OUT/run77/oddshapes-wgmma.log | head
OUT=$OUT/run77/bench CONVGEN_COMMIT=bc89955 timeout 240 bench/run.sh > $OUT/run77/bench-run.log 2>&1; echo "bench rc=$?"
cat $OUT/run77/bench/results-*.md | head -40
