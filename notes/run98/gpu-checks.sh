#!/bin/bash
# Run 92: the six flagship packages' GPU tests (TestForward: the tuned
# CUBIN; TestForwardPTX: the fallback's PTX), then the benchmark, at the
# commit given as $1; or (with "autotune") the autotune package's cuda
# tests. Binaries come in .dev/pack/bundle.tgz (scripts/build-device, then
# tar czf of .dev's test binaries and example-alexnet: the carry limit).
set -u
tar xzf .dev/pack/bundle.tgz -C .dev
if [ "$1" = autotune ]; then
  .dev/autotune.test -test.run 'TestPlantedFailures|TestOddShapes' -test.v -test.timeout 9m > $OUT/autotune-cuda-tests.log 2>&1
  echo "autotune rc=$?"; grep -E "^(--- |ok|PASS|FAIL)" $OUT/autotune-cuda-tests.log | tail -5
  exit 0
fi
for v in fp32 tf32 tf32nhwc tf32x3 fp16nhwc bf16nhwc; do
  echo "== $v"
  (cd examples/alexnet/$v && ../../../.dev/example-$v.test -test.v)
done > $OUT/package-tests.log 2>&1
grep -E "^(--- |ok|FAIL)" $OUT/package-tests.log
OUT=$OUT/bench CONVGEN_COMMIT=$1 bench/run.sh > $OUT/bench.log 2>&1; echo "bench rc=$?"
cp $OUT/bench/results-*.md $OUT/ 2>/dev/null; cp $OUT/bench/convgen.log $OUT/bench-convgen.log 2>/dev/null
rm -rf $OUT/bench
tail -3 $OUT/bench.log
