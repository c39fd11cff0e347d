#!/usr/bin/env bash
# Run 62: mmawinograd with Prefetch (input tiles of 1 or 2 stages in flight).
set -u
cd "$(dirname "$0")/../.."
pins() { for k in "$@"; do printf -- '--pin mmawinograd/%s ' "$k"; done; }
run() { local v=$1; shift
  echo "== $v" >> $OUT/run62.log
  CONVGEN=.dev/convgen-mw FLAGSHIP_VARIANTS=$v timeout 170 scripts/flagship -retune -q=false -trials 0 -time 150s "$@" >> $OUT/run62.log 2>&1
  echo "$v rc $?" >> $OUT/run62.log
  grep -E '^\| `(mmawinograd|wgmma)' examples/alexnet/$v/REPORT.md | cut -d'|' -f2-5,7-10 | sed "s/^/$v /" >> $OUT/run62.txt
}
A='Chunk=16,Prefetch=1,StepsPerBlock=143,TileK=32,TileT=32,WarpsK=1,WarpsT=1'
B='Chunk=16,Prefetch=2,StepsPerBlock=143,TileK=32,TileT=32,WarpsK=1,WarpsT=1'
C='Chunk=8,Prefetch=1,StepsPerBlock=143,TileK=32,TileT=32,WarpsK=1,WarpsT=1'
D='Chunk=8,Prefetch=2,StepsPerBlock=143,TileK=32,TileT=32,WarpsK=1,WarpsT=1'
E='Chunk=16,Prefetch=1,StepsPerBlock=96,TileK=48,TileT=32,WarpsK=1,WarpsT=1'
F='Chunk=8,Prefetch=1,StepsPerBlock=143,TileK=16,TileT=64,WarpsK=1,WarpsT=1'
G='Chunk=8,Prefetch=2,StepsPerBlock=143,TileK=16,TileT=64,WarpsK=1,WarpsT=1'
run tf32x3 $(pins $A $B $C $D $E $F $G)
run tf32nhwc $(pins $A $B $C $D $E $F $G 'Chunk=16,Prefetch=2,StepsPerBlock=96,TileK=48,TileT=32,WarpsK=1,WarpsT=1')
