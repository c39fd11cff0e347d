#!/usr/bin/env bash
# Runs the prepared experiments of runs 44-46 on the GPU machine, pinned
# candidates only (a few minutes): bash notes/next/device.sh. Everything comes
# back in two files (the device tool returns at most 8): $OUT/next.md (the
# reports, each under a heading) and $OUT/next.log (convgen's output).
# Needs .dev/convgen-{probe,bankpad,producerregs} from notes/next/build.sh.
# Arguments pick experiments (probe, bankpad, producerregs; default all):
# a candidate that hangs costs the worker's 60 s timeout, so if setmaxnreg
# deadlocks, producerregs alone may take several minutes.
set -uo pipefail
want=" ${*:-probe bankpad producerregs} "
cd "$(dirname "$0")/../.."
ids() { # ids PREFIX-KNOBS... : candidate IDs with their knobs sorted by name, as the reports print them
  for k in "$@"; do printf -- '--pin wgmma/%s ' "$(tr ',' '\n' <<<"$k" | LC_ALL=C sort | paste -sd,)"; done
}
NHWC='Overlap=0,PredicatedStores=1,Producer=2,RoundInput=1,Stages=2,TileK=96,TileP=8,TileQ=8,TilesPerWarpgroup=48,VecStage=1,Warpgroups=2'
NCHW='Overlap=0,PredicatedStores=0,Producer=1,RoundInput=0,Stages=2,TileK=96,TileP=8,TileQ=8,TilesPerWarpgroup=48,VecStage=0,Warpgroups=2'
X3='Overlap=0,PredicatedStores=0,Producer=2,RoundInput=1,Stages=2,TileK=48,TileP=8,TileQ=8,TilesPerWarpgroup=96,VecStage=1,Warpgroups=2'
run() { # run NAME VARIANT PINS...
  local name=$1 variant=$2; shift 2
  case $want in *" $name "*) ;; *) return ;; esac
  echo "== $name $variant" | tee -a "$OUT/next.log"
  CONVGEN=.dev/convgen-$name FLAGSHIP_VARIANTS=$variant scripts/flagship -retune "$@" >> "$OUT/next.log" 2>&1
  echo "$name $variant: rc $?"
  { echo; echo "# $name $variant"; echo; cat "examples/alexnet/$variant/REPORT.md"; } >> "$OUT/next.md"
  grep '^| `wgmma' "examples/alexnet/$variant/REPORT.md" | cut -d'|' -f2-4,8-10
}
# Run 44: the cost of each phase of a tile (Probe 1 wgmmas, 2 epilogue, 3 producer stores).
run probe tf32nhwc $(ids "Probe=0,$NHWC" "Probe=1,$NHWC" "Probe=2,$NHWC" "Probe=3,$NHWC")
run probe tf32 $(ids "Probe=0,$NCHW" "Probe=1,$NCHW" "Probe=2,$NCHW")
run probe tf32x3 $(ids "Probe=0,$X3" "Probe=1,$X3" "Probe=2,$X3" "Probe=3,$X3")
# Run 45: operand core matrices in distinct bank groups.
run bankpad tf32nhwc $(ids "BankPad=0,$NHWC" "BankPad=1,$NHWC")
run bankpad tf32 $(ids "BankPad=0,$NCHW" "BankPad=1,$NCHW")
run bankpad tf32x3 $(ids "BankPad=0,$X3" "BankPad=1,$X3")
# Run 46: setmaxnreg register hand-over, with and without Overlap.
R='PredicatedStores=1,Producer=2,RoundInput=1,Stages=2,TileK=96,TileP=8,TileQ=8,TilesPerWarpgroup=48,VecStage=1,Warpgroups=2'
run producerregs tf32nhwc $(ids "Overlap=0,ProducerRegs=0,$R" "Overlap=0,ProducerRegs=56,$R" "Overlap=1,ProducerRegs=0,$R" "Overlap=1,ProducerRegs=56,$R" "Overlap=1,ProducerRegs=80,$R")
