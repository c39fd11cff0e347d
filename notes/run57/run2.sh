#!/usr/bin/env bash
set -u
pins=""
while read -r id; do pins="$pins --pin $id"; done < .dev/w/ids-new.txt
for id in Chunk=12,StepsPerBlock=96,ThreadK=8,ThreadT=8,TileK=48,TileT=32 Chunk=8,StepsPerBlock=72,ThreadK=8,ThreadT=8,TileK=32,TileT=64 Chunk=16,StepsPerBlock=143,ThreadK=8,ThreadT=4,TileK=32,TileT=32; do pins="$pins --pin winograd/$id"; done
mkdir -p $OUT/w
.dev/convgen -shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -precision fp32 -layout nchw \
  -pkg wfp32 -o $OUT/w/wfp32 -cache $OUT/w/cache.json -retune -trials 0 -q=false $pins > $OUT/w/run2.log 2>&1
echo rc=$?
tail -3 $OUT/w/run2.log
grep -E '^\| `(winograd|direct)' $OUT/w/wfp32/REPORT.md | cut -d'|' -f2-4,8-12 | head -50
