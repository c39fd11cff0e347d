#!/usr/bin/env bash
# Builds, on the CPU machine, one cuda-tagged convgen per experiment
# (runs 43-46 in notes/perf.md): .dev/convgen-<name>, each from HEAD with
# notes/<run>/<name>.patch applied in a scratch worktree. Carry .dev/convgen-*
# and notes/next/device.sh to the GPU machine (about 40 MB with the tree).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
. scripts/cuda-env
mkdir -p .dev
for p in run43/interleave run44/probe run45/bankpad run46/producerregs; do
  name=$(basename "$p")
  wt=$(mktemp -d)
  git worktree add -q --detach "$wt" HEAD
  (cd "$wt" && git apply "$repo/notes/$p.patch" && go build -tags cuda -o "$repo/.dev/convgen-$name" ./cmd/convgen)
  git worktree remove --force "$wt"
  echo "built .dev/convgen-$name"
done
