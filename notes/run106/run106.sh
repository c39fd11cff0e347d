#!/bin/bash
# Run 106: at the commit given, the autotune package's cuda tests
# (TestPlantedFailures, TestOddShapes), the six packages' GPU tests and the
# benchmark twice (notes/run102/run102.sh).
set -u
notes/run92/gpu-checks.sh autotune
notes/run102/run102.sh $1
