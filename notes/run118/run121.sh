#!/bin/bash
# Run 121: the wgmmarow family as rendered by kernels/wgmmarow.go (every
# kept flagship configuration, kernels/zz_proto_test.go's TestRenderRowProto
# into .dev/r1) beside the committed tf32 NCHW winner, nvcc harness.
set -u
notes/run71/harness-run.sh .dev/r1 run121 3 > $OUT/run121.log 2>&1
rm -f $(ls -d $OUT/run121/* | grep -v '\.log$')
grep -h "registers\|spill" $OUT/run121/build-*.log | grep -v "12 registers" | grep -o "Used [0-9]* registers\|[0-9]* bytes spill stores" | paste - - > $OUT/run121-regs.txt
cat $OUT/run121.log | grep -v "^/root"
