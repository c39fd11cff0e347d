#!/bin/bash
# Run 123: after the tf32 NCHW record moved to wgmmarow (run 122), the six
# packages' GPU tests and the benchmark twice (notes/run102/run102.sh) at
# the commit given. Binaries: .dev/pack/bundle.tgz.
set -u
notes/run102/run102.sh $1
