#!/usr/bin/env bash
set -u
mkdir -p $OUT
cd autotune
timeout 300 ../.dev/autotune.test -test.run 'TestOddShapes/N=2,C=3,H=61' -test.v -test.timeout 5m > $OUT/odd-new-shape.log 2>&1; echo "new shape rc=$?"
timeout 200 ../.dev/autotune.test -test.run 'TestOddShapes//winograd' -test.v -test.timeout 4m > $OUT/odd-winograd.log 2>&1; echo "winograd rc=$?"
grep -E "^    --- |^--- |^(ok|PASS|FAIL)" $OUT/odd-new-shape.log $OUT/odd-winograd.log | cut -c1-220
