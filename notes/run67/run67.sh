#!/usr/bin/env bash
# Run 67: the CLI's GPU paths changed at 17dd7ab, on the H200: a pinned run
# tunes and leaves the cache alone; the cache path is checked before tuning;
# a matching record is reused.
set -u
cd "$(dirname "$0")/../.."
. notes/next/pins.sh
S='-shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2 -precision tf32 -layout nhwc'
cp examples/alexnet/convgen-cache.json /tmp/c.json
before=$(sha256sum < /tmp/c.json)
{
echo "== pinned run"
.dev/convgen $S -o /tmp/p1 -cache /tmp/c.json $(ids "$NHWC" "$NHWC3"); echo "rc $?"
after=$(sha256sum < /tmp/c.json)
[ "$before" = "$after" ] && echo "cache unchanged" || echo "CACHE CHANGED"
grep -m1 "reproduce" /tmp/p1/REPORT.md
echo "== unwritable cache path, -retune"
time .dev/convgen $S -o /tmp/p2 -cache /proc/x/c.json -retune; echo "rc $?"
ls /tmp/p2 2>&1 | head -2
echo "== matching record"
.dev/convgen $S -o /tmp/p3 -cache /tmp/c.json; echo "rc $?"
} > $OUT/run67.log 2>&1
