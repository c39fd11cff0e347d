#!/bin/bash
# Run 101: re-tune tf32 and tf32nhwc after the packed-tap template change
# (notes/run91/retune.sh), then the autotune package's cuda tests
# (TestPlantedFailures, TestOddShapes) and the GPU tests of the three
# packages whose records run 100 re-tuned (binaries in .dev/pack/bundle.tgz).
set -u
notes/run91/retune.sh "tf32 tf32nhwc" retune
tar xzf .dev/pack/bundle.tgz -C .dev
for v in tf32x3 fp16nhwc bf16nhwc; do
  echo "== $v"
  (cd examples/alexnet/$v && ../../../.dev/example-$v.test -test.v)
done > $OUT/package-tests.log 2>&1
grep -E "^(== |--- |ok|FAIL)" $OUT/package-tests.log
.dev/autotune.test -test.run 'TestPlantedFailures|TestOddShapes' -test.v -test.timeout 5m > $OUT/autotune-cuda-tests.log 2>&1
echo "autotune rc=$?"; grep -E "^(--- |ok|PASS|FAIL)" $OUT/autotune-cuda-tests.log | tail -5
mkdir -p $OUT/reports && mv $OUT/REPORT-*.md $OUT/reports/
