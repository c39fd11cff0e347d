#!/bin/bash
# Run 80: fp16/bf16 NHWC with a full quad transpose (notes/run75/quad.patch:
# each lane stores 8 channels, 16 bytes) against the 8-byte pair swap of
# bc89955 (old_*), sources in .dev/quad. Not adopted.
exec notes/run71/harness-run.sh .dev/quad run80 3
