#!/bin/bash
# Run 78 (at bc89955): the benchmark twice in one lease, keeping each run's
# results table and logs (run 77's were not brought back).
set -u
for r in 1 2; do
  OUT=/tmp/bench$r CONVGEN_COMMIT=bc89955 timeout 280 bench/run.sh > /tmp/bench$r.log 2>&1; echo "bench $r rc=$?"
  cp /tmp/bench$r/results-*.md $OUT/results-run$r.md
  cat /tmp/bench$r/convgen.log /tmp/bench$r/pytorch.log > $OUT/logs-run$r.txt
  cp /tmp/bench$r/versions.txt $OUT/versions-run$r.txt
done
grep -h "^| " $OUT/results-run*.md | cut -d'|' -f2-6
