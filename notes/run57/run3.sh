#!/usr/bin/env bash
# Old (w1) vs hoisted tile location (w2): the top candidates with both binaries, then the whole space with w2.
set -u
mkdir -p $OUT/w
S="-shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -precision fp32 -layout nchw -pkg wfp32 -trials 0 -q=false -retune"
top="--pin winograd/Chunk=12,StepsPerBlock=96,ThreadK=8,ThreadT=8,TileK=48,TileT=32 --pin winograd/Chunk=8,StepsPerBlock=72,ThreadK=8,ThreadT=8,TileK=32,TileT=64 --pin winograd/Chunk=16,StepsPerBlock=143,ThreadK=8,ThreadT=4,TileK=32,TileT=32"
for b in w1 w2; do
  .dev/convgen-$b $S -o $OUT/w/top-$b -cache $OUT/w/c-$b.json $top > $OUT/w/run3-top-$b.log 2>&1
  echo "== $b"; grep -E '^\| `winograd' $OUT/w/top-$b/REPORT.md | cut -d'|' -f2-4,8-12
done
pins=""
while read -r id; do pins="$pins --pin $id"; done < .dev/w/ids-nchw.txt
.dev/convgen-w2 $S -o $OUT/w/all-w2 -cache $OUT/w/c-all.json $pins > $OUT/w/run3-all.log 2>&1
echo "== w2 all"; grep -E '^\| `winograd' $OUT/w/all-w2/REPORT.md | cut -d'|' -f2-4,8-12 | head -12
grep -c '| ok |' $OUT/w/all-w2/REPORT.md
