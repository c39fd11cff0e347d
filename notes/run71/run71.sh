#!/bin/bash
# Runs 71-72: the TMA producer (VecStage=2, notes/run71/tma.patch applied)
# against the committed NCHW winners (tf32_base, x3_base). Sources rendered
# into .dev/proto by notes/run71/render_test.go.txt (copied into kernels/ as
# a _test.go file, run with PROTO_OUT=$PWD/.dev/proto).
exec notes/run71/harness-run.sh .dev/proto run71 2
