#!/usr/bin/env bash
# The suite benchmark: tunes (or reuses from bench/suite-cache.json) every
# shape of a suite in every mode, checks convgen's kernel and PyTorch's
# against PyTorch's float64 conv2d, times both in one process and writes
# results-suite-SUITE-nN-MODES-DATE-GPU-COMMIT.md and .jsonl (bench/suite.py does
# the work; see its header). OP=dgrad or OP=wgrad (or --op) does the same
# for a gradient (convgen -op; PyTorch's convolution_backward), its records
# in bench/grad-cache.json, its files results-suite-SUITE-nN-OP-MODES-DATE-...
#
# usage: bench/suite.sh [--dry-run] [--op OP] SUITE_FILE N MODES [OUTDIR]
#   SUITE_FILE  e.g. bench/suites/resnet50.txt ('name | shape' lines)
#   N           batch size for lines without their own N= ('own' for
#               kernelbench-l1.txt and flagship.txt, whose lines have one)
#   MODES       precision:layout list, e.g. fp16:nhwc,tf32:nhwc,tf32:nchw,fp32:nchw
#   OUTDIR      where the results files go (default bench/); the suite
#               cache is copied there too when it is elsewhere
#   OP          fprop (default), dgrad or wgrad (env OP, or --op)
# Build first, on a machine with Go (the GPU machine has none):
#   scripts/build-device            # writes .dev/convgen (cuda-tagged)
# then, on the GPU machine, from anywhere with .dev carried along:
#   CONVGEN_COMMIT=$(git rev-parse --short HEAD) bench/suite.sh bench/suites/resnet50.txt 32 fp16:nhwc,tf32:nhwc
#   OP=wgrad TIME=30s bench/suite.sh bench/suites/flagship.txt own tf32:nchw,fp16:nhwc /tmp/out
# Environment: OP, ONLY=name1,name2 (only those shapes), TIME=60s (convgen's
# -time), RUNS (timed runs, at least 30), CACHE (tuning cache, default
# bench/suite-cache.json, bench/grad-cache.json for a gradient), CONVGEN (default .dev/convgen), TUNE_TIMEOUT
# (seconds per convgen call, default 1800), SMS, CLOCK_MHZ, BANDWIDTH (the
# roofline's facts; measured by bench/devicefacts.py where not set), PYTHON,
# NO_PROLOGUE=1 (launch each kernel alone, without its prologue, as an
# outside launcher that knows no prologue would: still verified).
# --dry-run parses the suite and prints the convgen commands, needing no GPU.
# Exits with status 1 when a shape failed to tune, load or verify (after
# writing every row), 2 for a bad command line.
set -euo pipefail

dry=()
op=${OP:-fprop}
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry=(--dry-run); shift ;;
    --op) [ $# -ge 2 ] || { echo "bench/suite.sh: --op needs dgrad, wgrad or fprop" >&2; exit 2; }; op=$2; shift 2 ;;
    --op=*) op=${1#--op=}; shift ;;
    *) break ;;
  esac
done
case $op in
  fprop|dgrad|wgrad) ;;
  *) echo "bench/suite.sh: op '$op': want fprop, dgrad or wgrad" >&2; exit 2 ;;
esac
if [ $# -lt 3 ] || [ $# -gt 4 ]; then
  sed -n 's/^# \{0,1\}//; 10,17p' "$0" >&2
  exit 2
fi
suite=$(realpath "$1")
n=$2
modes=$3
out=$(realpath -m "${4:-$(dirname "$0")}")
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
convgen=${CONVGEN:-.dev/convgen}
if [ "$op" = fprop ]; then
  cache=${CACHE:-bench/suite-cache.json}
else
  cache=${CACHE:-bench/grad-cache.json}
fi
args=(--suite "$suite" --n "$n" --modes "$modes" --out "$out" --convgen "$convgen" --cache "$cache" --op "$op")
[ -z "${ONLY:-}" ] || args+=(--only "$ONLY")
[ -z "${TIME:-}" ] || args+=(--time "$TIME")

if [ ${#dry[@]} -gt 0 ]; then
  exec "$python" bench/suite.py "${dry[@]}" "${args[@]}"
fi
if [ ! -x "$convgen" ]; then
  echo "bench/suite.sh: no $convgen: run scripts/build-device on the build machine and carry .dev here" >&2
  exit 1
fi
# The binaries' commit (scripts/build-device writes .dev/COMMIT), else the tree's.
commit=${CONVGEN_COMMIT:-$(cat .dev/COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
smi=$(nvidia-smi 2>/dev/null || true)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
driver_cuda=$(printf '%s\n' "$smi" | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)
mkdir -p "$out"

status=0
CONVGEN_COMMIT=$commit "$python" bench/suite.py "${args[@]}" --commit "$commit" --driver "${driver:-?}" \
  ${driver_cuda:+--driver-cuda "$driver_cuda"} || status=$?
# The cache is what makes the results reproducible offline: bring it back
# with the results when they go elsewhere.
if [ -f "$cache" ] && [ "$(realpath "$cache")" != "$out/$(basename "$cache")" ]; then
  cp "$cache" "$out/"
  echo "bench/suite.sh: copied $cache to $out/ (commit it as $cache)" >&2
fi
exit $status
