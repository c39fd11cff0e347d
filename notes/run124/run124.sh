#!/bin/bash
# Run 124: the benchmark three more times at the commit given (the 3xtf32
# and tf32 NHWC margins are within the run-to-run spread), one lease.
# Binaries: .dev/pack/bundle.tgz (example-alexnet).
set -u
tar xzf .dev/pack/bundle.tgz -C .dev
for i in 3 4 5; do
  D=$OUT/b$i; mkdir -p $D
  OUT=$D CONVGEN_COMMIT=$1 bench/run.sh > $OUT/bench-run$i.log 2>&1; echo "bench $i rc=$?"
  for f in $D/results-*.md; do cp $f $OUT/$(basename $f .md)-run$i.md; done
  rm -rf $D
  grep -E "^\| (TF32|3xTF32)" $OUT/results-*-run$i.md | cut -d'|' -f2-7
done
