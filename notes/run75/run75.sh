#!/bin/bash
# Run 75: the tf32 NHWC winners with 16-byte output stores (new_*) against
# the same configurations rendered before the change (old_*), in .dev/wide.
exec notes/run71/harness-run.sh .dev/wide run75 3
