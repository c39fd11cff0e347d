#!/usr/bin/env bash
# The fused-epilogue benchmark (issue 24) on the GPU machine: bench/epilogue.py
# tunes each case's fused kernel (or reuses bench/epilogue-cache.json's record
# of this GPU), pins the same configuration without the chain, checks and
# times fused, plain, PyTorch conv2d, eager and torch.compile in one process,
# and writes results-epilogue-DATE-GPU-COMMIT.md and .jsonl (see its header).
#
# usage: bench/epilogue.sh [OUTDIR]     (default bench/)
# Build first, on a machine with Go (the GPU machine has none):
#   scripts/build-device            # writes .dev/convgen (cuda-tagged) and .dev/COMMIT
# then, on the GPU machine, from the repository root with .dev carried along:
#   bench/epilogue.sh
# Environment: CASES=a,b (only those; bench/epilogue.py --dry-run lists them),
# TIME (convgen -time per tuned case, default 15s), RUNS (default 50), CACHE
# (default bench/epilogue-cache.json), CONVGEN (default .dev/convgen),
# CONVGEN_COMMIT, PYTHON. About 6 minutes on an H100 with an empty cache,
# about 4 with a current one. Commit the cache it leaves (bench/epilogue-cache.json)
# with the results, so that the run can be replayed.
# Exits 1 when a case failed to tune, load or verify (after writing every row).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-bench}")
python=${PYTHON:-python3}
convgen=${CONVGEN:-.dev/convgen}
cache=${CACHE:-bench/epilogue-cache.json}
if [ ! -x "$convgen" ]; then
  echo "bench/epilogue.sh: no $convgen: run scripts/build-device on the build machine and carry .dev here" >&2
  exit 1
fi
# The binaries' commit (scripts/build-device writes .dev/COMMIT), else the tree's.
commit=${CONVGEN_COMMIT:-$(cat "$(dirname "$convgen")/COMMIT" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
mkdir -p "$out"
args=(--convgen "$convgen" --cache "$cache" --out "$out" --commit "$commit" --driver "${driver:-?}"
  --time "${TIME:-15s}" --runs "${RUNS:-50}")
[ -z "${CASES:-}" ] || args+=(--cases "$CASES")
PYTHONUNBUFFERED=1 exec "$python" bench/epilogue.py "${args[@]}"
