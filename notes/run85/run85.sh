#!/bin/bash
# Run 85: 3xtf32 with the wgmma A operand loaded from the (single, unrounded)
# patch into registers and split there (RegisterA), against the committed
# winner's configuration rendered from the same template (x3_base).
# Sources: kernels/zz_proto_test.go (PROTO_OUT=.dev/rega).
notes/run71/harness-run.sh .dev/rega run85 3
D=$OUT/run85
for k in x3_ra_g2 x3_base; do
  /usr/local/cuda/bin/cuobjdump -sass $D/$k 2>/dev/null > $D/$k.sass
  echo "$k: HGMMA $(grep -c HGMMA $D/$k.sass) LDS $(grep -c 'LDS' $D/$k.sass) STS $(grep -c 'STS' $D/$k.sass) WARPSYNC $(grep -c 'WARPGROUP' $D/$k.sass)"
done
rm -f $D/x3_*[!s] 2>/dev/null; ls $D
