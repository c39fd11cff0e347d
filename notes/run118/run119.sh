#!/bin/bash
# Run 119: row-band variants (LAG, incremental producer indices, one commit
# group per ring group, three computing warpgroups), nvcc harness.
set -u
notes/run71/harness-run.sh .dev/b2 run119 3 > $OUT/run119.log 2>&1
rm -f $(ls -d $OUT/run119/* | grep -v '\.log$')
cat $OUT/run119.log
