#!/bin/bash
# Run 79 (at 041a263): the six generated packages' GPU tests after Forward
# gained its address check (checkPtrs), and the check itself on the GPU: a
# small Go-free probe is not possible here (no Go on the GPU machine), so the
# generated untagged test (shape_test.go) runs in CI; this run checks that
# Forward with the check still launches and verifies.
set -u
mkdir -p $OUT/run79
for v in fp32 tf32 tf32nhwc tf32x3 fp16nhwc bf16nhwc; do
  (cd examples/alexnet/$v && timeout 120 ../../../.dev/example-$v.test -test.v > $OUT/run79/pkg-$v.log 2>&1; echo "package $v rc=$?")
done
timeout 120 .dev/example-alexnet -runs 30 > $OUT/run79/example.jsonl 2> $OUT/run79/example.log; echo "example rc=$?"
tail -8 $OUT/run79/example.log
