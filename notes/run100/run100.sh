#!/bin/bash
# Run 100: the packed-tap RegisterA kernels against the committed winners
# (nvcc harness of run 71, sources in .dev/pk rendered by a temporary
# kernels/zz_proto_test.go: PROTO_SET=old at HEAD, new with the change),
# then a re-tune of the variants given (notes/run91/retune.sh).
#   notes/run100/run100.sh "tf32x3 fp16nhwc bf16nhwc"
set -u
notes/run71/harness-run.sh .dev/pk run100 3 > $OUT/run100.log 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> $OUT/run100.log
[ -n "${1:-}" ] && notes/run91/retune.sh "$1" retune
mv $OUT/REPORT-*.md $OUT/run100/ 2>/dev/null
tar -C $OUT -czf $OUT/run100.tgz run100 && rm -rf $OUT/run100
ls -la $OUT
