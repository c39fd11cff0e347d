#!/usr/bin/env bash
# Benchmarks the flagship example against PyTorch (cuDNN) on a GPU machine.
#
# Build first, on a machine with Go (the GPU machine has none):
#   scripts/build-device            # writes .dev/example-alexnet among others
# then, on the GPU machine, from the repository root with .dev carried along:
#   CONVGEN_COMMIT=$(git rev-parse --short HEAD) bench/run.sh
#
# Writes into $OUT (default bench/out): the raw logs (convgen.jsonl and
# convgen.log from the example, pytorch.jsonl and pytorch.log from
# bench/cudnn.py, nvidia-smi.txt, versions.txt) and results-DATE-GPU.md, the
# table that bench/table.py builds; copy that one to bench/ to publish it.
# Environment: RUNS (timed runs, default 100); SMS and CLOCK_MHZ for the FP32
# peak and BANDWIDTH (B/s) for the memory floor, measured on the GPU at hand
# by bench/devicefacts.py where not set (the H200's 132, 1980 and 4.3e12 if
# that fails); PYTHON (python3).
# Exits with status 1 when a convgen kernel fails its check or a step fails,
# after writing whatever it could.
set -euo pipefail
cd "$(dirname "$0")/.."

shape=N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2
modes=fp32,tf32,tf32-nhwc,tf32-compile,fp16-nhwc,bf16-nhwc
runs=${RUNS:-100}
python=${PYTHON:-python3}
out=${OUT:-bench/out}
mkdir -p "$out"

if [ ! -x .dev/example-alexnet ]; then
  echo "bench/run.sh: no .dev/example-alexnet: run scripts/build-device on the build machine and carry .dev here" >&2
  exit 1
fi
# The binaries' commit (scripts/build-device writes .dev/COMMIT), else the tree's.
commit=${CONVGEN_COMMIT:-$(cat .dev/COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)

nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
driver_cuda=$(sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' "$out/nvidia-smi.txt" | head -1)
torch_cuda=$("$python" -c 'import torch; print(torch.version.cuda or "")' 2>/dev/null || true)
cuda="${torch_cuda:-?} (PyTorch's)${driver_cuda:+, driver supports ${driver_cuda}}"
{
  echo "date: $date"
  echo "commit: $commit"
  echo "gpu: ${gpu:-?}"
  echo "driver: ${driver:-?}"
  echo "cuda: $cuda"
} > "$out/versions.txt"
cat "$out/versions.txt"

# The roofline's facts: the environment's, else measured here.
facts=$("$python" bench/devicefacts.py 2> "$out/devicefacts.log") || {
  echo "bench: bench/devicefacts.py failed (see $out/devicefacts.log): using the H200's figures where not set" >&2
  facts=""
}
fact() { # fact NAME DEFAULT: the environment's value, the measured one, or DEFAULT
  local v=${!1:-}
  [ -n "$v" ] || v=$(printf '%s\n' "$facts" | sed -n "s/^$1=//p")
  echo "${v:-$2}"
}
sms=$(fact SMS 132) clock_mhz=$(fact CLOCK_MHZ 1980) bandwidth=$(fact BANDWIDTH 4.3e12)
echo "roofline: $sms SMs, $clock_mhz MHz, $bandwidth B/s" | tee -a "$out/versions.txt"

status=0
echo "bench: convgen (.dev/example-alexnet -runs $runs)"
if ! .dev/example-alexnet -runs "$runs" > "$out/convgen.jsonl" 2> "$out/convgen.log"; then
  echo "bench: the example failed (a check, or CUDA): see $out/convgen.log" >&2
  status=1
fi
cat "$out/convgen.log" >&2

echo "bench: PyTorch (bench/cudnn.py --modes $modes --runs $runs)"
if ! "$python" bench/cudnn.py --shape "$shape" --modes "$modes" --runs "$runs" > "$out/pytorch.jsonl" 2> "$out/pytorch.log"; then
  echo "bench: bench/cudnn.py failed: see $out/pytorch.log" >&2
  tail -n 20 "$out/pytorch.log" >&2
  status=1
fi

slug=$(printf '%s' "${gpu:-gpu}" | sed -e 's/^NVIDIA //' -e 's/[^A-Za-z0-9]\+/-/g' -e 's/-$//' | tr 'A-Z' 'a-z')
results="$out/results-${date%%T*}-${slug:-gpu}.md"
device_arg=()
[ -z "$gpu" ] || device_arg=(--device "$gpu")
"$python" bench/table.py --convgen "$out/convgen.jsonl" --pytorch "$out/pytorch.jsonl" -o "$results" \
  --shape "$shape" "${device_arg[@]}" --driver "${driver:-?}" --cuda "$cuda" --date "$date" --commit "$commit" \
  --sms "$sms" --clock-mhz "$clock_mhz" --bandwidth "$bandwidth"
echo
cat "$results"
echo
echo "bench: wrote $results and the raw logs in $out"
exit $status
