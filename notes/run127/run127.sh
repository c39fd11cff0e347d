#!/bin/bash
# Run 127: run 126 got an H100 (80 GB HBM3), whose records are not in the
# committed cache (tuned on the H200). Re-tune the three TF32 flagship
# variants for it (full search, notes/run91/retune.sh on the device's copy
# of the cache) to see what a device-specific tune gives there.
# Binaries: .dev/pack/bundle.tgz (convgen among them).
set -u
tar xzf .dev/pack/bundle.tgz -C .dev
nvidia-smi -L
notes/run91/retune.sh "tf32 tf32nhwc tf32x3" retune
for v in tf32 tf32nhwc tf32x3; do grep -m1 -iE "winner|^\| 1 " $OUT/REPORT-$v.md; done
