#!/bin/bash
# Run 91: re-tune flagship records (full search) after the RegisterA
# template change, one variant at a time, copying the cache to $OUT after
# each so that a cut-off call keeps what finished.
#   notes/run91/retune.sh "tf32x3 tf32 tf32nhwc" LOGNAME
set -u
for v in $1; do
  s=$SECONDS
  FLAGSHIP_VARIANTS=$v CONVGEN=.dev/convgen timeout 290 scripts/flagship -retune -trials 0 >> $OUT/$2.log 2>&1
  echo "$v rc=$? at $((SECONDS - s)) s" >> $OUT/$2.log
  cp examples/alexnet/convgen-cache.json $OUT/convgen-cache.json
  cp examples/alexnet/$v/REPORT.md $OUT/REPORT-$v.md
done
tail -n 3 $OUT/$2.log
