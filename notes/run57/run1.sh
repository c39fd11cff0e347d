#!/usr/bin/env bash
# Winograd fp32 NCHW: every kept candidate pinned, plus the committed direct winner, through the tuner.
set -u
pins=""
while read -r id; do pins="$pins --pin $id"; done < .dev/w/ids-nchw.txt
pins="$pins --pin direct/ChannelsPerThread=16,PixelsPerThread=2,StageC=1,TileK=96,TileP=4,TileQ=32,TilesPerBlock=1"
mkdir -p $OUT/w
nvidia-smi -L
time .dev/convgen -shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -precision fp32 -layout nchw \
  -pkg wfp32 -o $OUT/w/wfp32 -cache $OUT/w/cache.json -retune -trials 0 -q=false $pins > $OUT/w/run1.log 2>&1
echo rc=$?
tail -5 $OUT/w/run1.log
grep -E '^\| `(winograd|direct)' $OUT/w/wfp32/REPORT.md | head -60
grep -iE 'fail|error' $OUT/w/wfp32/REPORT.md | head -20
