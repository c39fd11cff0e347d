#!/bin/bash
# Runs 73-74: wgmma with the A operand in registers (kernels written by
# notes/run73/gen.py into .dev/rega, beside the committed winners' sources
# tf32_base and x3_base; params in notes/run73/params.txt).
exec notes/run71/harness-run.sh .dev/rega run73 2
