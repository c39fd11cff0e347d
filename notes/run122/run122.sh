#!/bin/bash
# Run 122: with the wgmmarow family added (kernels/wgmmarow.go), re-tune the
# tf32 NCHW flagship record (full search, notes/run91/retune.sh), keep the
# generated package, then the autotune package's cuda tests (TestOddShapes
# now pins wgmmarow on the stride-4 shapes; TestPlantedFailures).
# Binaries: .dev/pack/bundle.tgz (convgen, autotune.test).
set -u
tar xzf .dev/pack/bundle.tgz -C .dev
notes/run91/retune.sh "tf32" retune
mkdir -p $OUT/tf32pkg && cp examples/alexnet/tf32/* $OUT/tf32pkg/
.dev/autotune.test -test.run 'TestPlantedFailures|TestOddShapes' -test.v -test.timeout 8m > $OUT/autotune-cuda-tests.log 2>&1
echo "autotune rc=$?"; grep -E "^(--- |ok|PASS|FAIL)" $OUT/autotune-cuda-tests.log | tail -5
grep -E "^    --- (PASS|FAIL).*wgmmarow" $OUT/autotune-cuda-tests.log
