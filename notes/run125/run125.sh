#!/bin/bash
# Run 125: the 3xtf32 row-tile prototype (notes/run125/gen_x3row.py, from
# run 121's TileK 48 renderings) with 3 and 2 computing warpgroups beside the
# committed 3xtf32 winner (x3_base), nvcc harness, 3 repetitions.
set -u
notes/run71/harness-run.sh .dev/x1 run125 3 > $OUT/run125.log 2>&1
rm -f $(ls -d $OUT/run125/* | grep -v '\.log$')
for f in $OUT/run125/build-*.log; do echo "$(basename $f) $(grep -o 'Used [0-9]* registers' $f | tail -1) $(grep -o '[0-9]* bytes spill stores' $f | tail -1) $(grep -o 'C75[0-9]*' $f | sort -u | tr '\n' ' ')"; done >> $OUT/run125.log
grep -v "^/root" $OUT/run125.log
