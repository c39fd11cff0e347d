#!/usr/bin/env python3
"""Times PyTorch's conv2d (cuDNN) on one shape, the way convgen's tuner times
its kernels: CUDA events around the kernel alone, warm-up first, L2 flushed
(a 256 MB memset) before every run, median of --runs. Prints one JSON line per
mode with the median, p10, p90 and the relative L2 error against float64.

usage: bench/cudnn.py --shape N=256,C=3,... [--modes fp32,tf32,...] [--runs 50]
"""
import argparse, json, statistics, sys

import torch
import torch.nn.functional as F


def parse_shape(text):
    kv = {}
    for part in text.split(","):
        k, v = part.split("=")
        kv[k.strip().lower()] = v.strip()
    g = lambda k, d=None: int(kv.get(k, d))
    s = dict(n=g("n"), c=g("c"), h=g("h"), w=g("w"), k=g("k"), r=g("r"), s=g("s"))
    s["stride"] = (g("stride_h", kv.get("stride", 1)), g("stride_w", kv.get("stride", 1)))
    s["pad"] = (g("pad_h", kv.get("pad", 0)), g("pad_w", kv.get("pad", 0)))
    s["dilation"] = (g("dilation_h", kv.get("dilation", 1)), g("dilation_w", kv.get("dilation", 1)))
    s["bias"] = kv.get("bias", "true").lower() in ("1", "true", "yes", "on")
    return s


def time_it(fn, runs, warmup=5):
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    times = []
    for i in range(runs):
        flush.fill_(i & 0xFF)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    q = lambda f: times[min(len(times) - 1, int(round(f * (len(times) - 1))))]
    return statistics.median(times), q(0.1), q(0.9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", required=True)
    ap.add_argument("--modes", default="fp32,tf32")
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    s = parse_shape(args.shape)
    torch.manual_seed(0)
    x = torch.rand(s["n"], s["c"], s["h"], s["w"], device="cuda")
    wt = torch.rand(s["k"], s["c"], s["r"], s["s"], device="cuda") * 2 - 1
    b = torch.rand(s["k"], device="cuda") * 2 - 1 if s["bias"] else None
    conv = dict(stride=s["stride"], padding=s["pad"], dilation=s["dilation"])
    ref = F.conv2d(x.double(), wt.double(), b.double() if b is not None else None, **conv)
    for mode in args.modes.split(","):
        torch.backends.cudnn.allow_tf32 = mode in ("tf32", "tf32-nhwc", "tf32-compile")
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32
        xi, wi, bi = x, wt, b
        if mode.endswith("nhwc"):
            xi = x.to(memory_format=torch.channels_last)
            wi = wt.to(memory_format=torch.channels_last)
        if mode.startswith("fp16") or mode.startswith("bf16"):
            dt = torch.float16 if mode.startswith("fp16") else torch.bfloat16
            xi, wi = xi.to(dt), wi.to(dt)
            bi = b.to(dt) if b is not None else None
        fn = lambda: F.conv2d(xi, wi, bi, **conv)
        if mode.endswith("compile"):
            fn = torch.compile(fn)
        out = fn()
        torch.cuda.synchronize()
        err = ((out.double() - ref).norm() / ref.norm()).item()
        med, p10, p90 = time_it(fn, args.runs)
        print(json.dumps(dict(mode=mode, median_ms=med, p10_ms=p10, p90_ms=p90, rel_error=err,
                              torch=torch.__version__, cudnn=torch.backends.cudnn.version(),
                              device=torch.cuda.get_device_name())), flush=True)


if __name__ == "__main__":
    sys.exit(main())
