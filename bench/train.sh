#!/usr/bin/env bash
# The training benchmark (issue 23's flagship rows): for each mode, the
# flagship's training package and PyTorch module (convgen -train -torch,
# forward, dgrad and wgrad records reused from the cache where it holds this
# GPU's, tuned otherwise), then scripts/torch-check.py's (g) forward +
# backward timing (the module against nn.Conv2d, all three gradients, both
# in one process; each gradient kernel alone) and (e) the module's launch
# overhead; bench/train.py writes results-train-flagship-DATE-GPU-COMMIT.md
# and .jsonl from them.
#
# usage: bench/train.sh [MODES [OUTDIR]]
#   MODES   precision:layout list (default tf32:nchw,fp16:nhwc,3xtf32:nchw;
#           3xtf32 against PyTorch's strict FP32)
#   OUTDIR  where the results files go (default bench/)
# Build first with scripts/build-device (.dev/convgen), carry .dev along.
# Environment: TIME (convgen's -time for a record it tunes, default 30s),
# CACHE (default: the records of examples/alexnet/convgen-cache.json and
# bench/grad-cache.json, merged into OUTDIR/train-cache.json, which then
# also keeps the records this run tunes: merge those into
# bench/grad-cache.json to replay them), CONVGEN,
# PYTHON. Exits 1 when a mode failed to build or a check failed (after
# writing every row), 2 for a bad command line.
set -euo pipefail
if [ $# -gt 2 ]; then
  sed -n 's/^# \{0,1\}//; 11,14p' "$0" >&2
  exit 2
fi
modes=${1:-tf32:nchw,fp16:nhwc,3xtf32:nchw}
out=$(realpath -m "${2:-$(dirname "$0")}")
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
convgen=${CONVGEN:-.dev/convgen}
flagship=N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2
commit=${CONVGEN_COMMIT:-$(cat .dev/COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cache=${CACHE:-}
if [ -z "$cache" ]; then
  cache=$out/train-cache.json
  "$python" bench/train.py merge examples/alexnet/convgen-cache.json bench/grad-cache.json -o "$cache"
fi
status=0
dirs=()
IFS=, read -ra list <<<"$modes"
for m in "${list[@]}"; do
  prec=${m%%:*} layout=${m#*:}
  case $prec:$layout in
    *:nchw|*:nhwc) ;;
    *) echo "bench/train.sh: mode '$m': want precision:layout, e.g. tf32:nchw" >&2; exit 2 ;;
  esac
  name=torch_${prec}_$layout
  echo "bench/train.sh: $m: $convgen -train ... -torch $work/$name" >&2
  if "$convgen" -train -shape "$flagship" -precision "$prec" -layout "$layout" -cache "$cache" -time "${TIME:-30s}" \
      -o "$work/pkg_${prec}_$layout" -torch "$work/$name" >"$work/$name.log" 2>&1; then
    dirs+=("$work/$name")
  else
    echo "bench/train.sh: $m: convgen -train failed:" >&2
    tail -5 "$work/$name.log" >&2
    status=1
  fi
done
jsonl=$work/checks.jsonl
: >"$jsonl"
if [ ${#dirs[@]} -gt 0 ]; then
  "$python" scripts/torch-check.py -k ge --results "$jsonl" "${dirs[@]}" || status=1
fi
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
"$python" bench/train.py table "$jsonl" --modes "$modes" --commit "$commit" --driver "${driver:-?}" --outdir "$out" || status=1
exit $status
