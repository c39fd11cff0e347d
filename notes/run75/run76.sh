#!/bin/bash
# Run 76: the fp16/bf16 NHWC winners (wgmmahalf) with 8-byte output stores
# (new_*) against the same configurations rendered before (old_*), .dev/wideh.
exec notes/run71/harness-run.sh .dev/wideh run76 3
