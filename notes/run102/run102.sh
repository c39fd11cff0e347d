#!/bin/bash
# Run 102: the six packages' GPU tests and the benchmark at the commit given
# (notes/run92/gpu-checks.sh), then the benchmark once more in the same
# lease (the 3xtf32 target is within a few percent).
set -u
notes/run92/gpu-checks.sh $1
OUT2=$OUT/b2; mkdir -p $OUT2
OUT=$OUT2 CONVGEN_COMMIT=$1 bench/run.sh > $OUT/bench-run2.log 2>&1; echo "bench 2 rc=$?"
for f in $OUT2/results-*.md; do cp $f $OUT/$(basename $f .md)-run2.md; done
rm -rf $OUT2
tail -3 $OUT/bench-run2.log
