#!/bin/bash
# Run 128: the benchmark at the commit given, with bench/run.sh measuring
# the roofline's SMs, clock and copy rate on the GPU at hand
# (bench/devicefacts.py). Binaries: .dev/pack/bundle.tgz (example-alexnet).
set -u
tar xzf .dev/pack/bundle.tgz -C .dev
OUT=$OUT/bench CONVGEN_COMMIT=$1 bench/run.sh > $OUT/bench.log 2>&1; echo "bench rc=$?"
cp $OUT/bench/results-*.md $OUT/bench/versions.txt $OUT/ 2>/dev/null
cp $OUT/bench/convgen.log $OUT/bench-convgen.log 2>/dev/null
grep -E "^roofline|^\| " $OUT/bench.log | cut -d'|' -f1-7 | head -12
