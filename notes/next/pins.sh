# Sourced, from the repository root, by the experiment scripts of
# notes/run47 ... run56 (they ran on the GPU machine with the binaries named
# in them, built from the runs' patches as notes/next/build.sh does).
# ids turns knob lists into -pin flags of the wgmma family (knobs sorted by
# name, as the reports print IDs); the variables are the committed winners'
# knobs at 82260ba.
ids() { for k in "$@"; do printf -- '--pin wgmma/%s ' "$(tr ',' '\n' <<<"$k" | LC_ALL=C sort | paste -sd,)"; done; }
NHWC='Overlap=0,PredicatedStores=1,Producer=2,RoundInput=1,Stages=2,TileK=96,TileP=8,TileQ=8,TilesPerWarpgroup=48,VecStage=1,Warpgroups=2'
NHWC3='Overlap=0,PredicatedStores=1,Producer=2,RoundInput=1,Stages=3,TileK=96,TileP=8,TileQ=8,TilesPerWarpgroup=32,VecStage=1,Warpgroups=3'
NCHW='Overlap=0,PredicatedStores=0,Producer=1,RoundInput=0,Stages=2,TileK=96,TileP=8,TileQ=8,TilesPerWarpgroup=48,VecStage=0,Warpgroups=2'
X3='Overlap=0,PredicatedStores=0,Producer=2,RoundInput=1,Stages=2,TileK=48,TileP=8,TileQ=8,TilesPerWarpgroup=96,VecStage=1,Warpgroups=2'
CUOBJ=/usr/local/cuda/bin/cuobjdump
