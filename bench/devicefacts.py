#!/usr/bin/env python3
"""Prints the facts bench/table.py's roofline needs for the GPU at hand, as
shell assignments: SMS (streaming multiprocessors), CLOCK_MHZ (the maximum SM
clock, from nvidia-smi) and BANDWIDTH (B/s: a 1 GiB device-to-device copy,
best of 5 after a warm-up, read plus written bytes; convgen's tuner measures
it the same way). bench/run.sh uses them where the environment does not set
SMS, CLOCK_MHZ or BANDWIDTH, so that a run on another GPU than the H200 gets
that GPU's floors.

usage: bench/devicefacts.py
"""
import subprocess

import torch


def max_sm_clock_mhz():
    out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits", "-i", "0"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def copy_bandwidth(nbytes=1 << 30, runs=5):
    a = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    best = float("inf")
    for i in range(runs + 1):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        b.copy_(a)
        stop.record()
        stop.synchronize()
        if i > 0:  # the first copy is warm-up
            best = min(best, start.elapsed_time(stop))
    return 2 * nbytes / (best * 1e-3)


def main():
    props = torch.cuda.get_device_properties(0)
    print(f"SMS={props.multi_processor_count}")
    print(f"CLOCK_MHZ={max_sm_clock_mhz()}")
    print(f"BANDWIDTH={copy_bandwidth():.4g}")


if __name__ == "__main__":
    main()
