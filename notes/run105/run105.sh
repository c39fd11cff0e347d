#!/bin/bash
# Run 105: re-tune the five wgmma-served flagship records after the
# 16-byte patch staging of RegisterA (QuadStage) changed the template.
set -u
notes/run91/retune.sh "tf32x3 tf32 tf32nhwc fp16nhwc bf16nhwc" retune
mkdir -p $OUT/reports && mv $OUT/REPORT-*.md $OUT/reports/
