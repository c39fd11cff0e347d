#!/usr/bin/env python3
"""The training benchmark's helpers (bench/train.sh runs them).

  bench/train.py merge CACHE... -o OUT
      writes one tuning cache holding every record of the given caches (a
      later file's record replaces an earlier one's of the same key);
  bench/train.py table CHECKS.jsonl --modes M --commit C --driver D [--outdir DIR]
      reads scripts/torch-check.py --results lines of (g) and (e) and writes
      results-train-flagship-DATE-GPU-COMMIT.md and .jsonl into DIR (default
      bench/): per mode the module's forward + backward (dinput, dweight,
      dbias) against nn.Conv2d's in one process, their ratio and the issue's
      target, each gradient kernel alone, the module's forward launch
      overhead. Exits 1 when a mode has no (g) line or a check failed.
"""
import argparse
import datetime
import json
import os
import re
import sys

from table import cudnn_version  # noqa: E402  (stdlib only)

# Issue 23's targets for the flagship's forward + backward (PyTorch / module).
TARGETS = {"tf32": 4.5, "3xtf32": 3.0}
PYTORCH_MODE = {"tf32": "TF32 allowed", "3xtf32": "strict FP32", "fp32": "strict FP32", "fp16": "FP16", "bf16": "BF16"}


def merge(paths, out):
    head, records, index = None, [], {}
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        if head is None:
            head = {k: v for k, v in d.items() if k != "records"}
        for r in d.get("records", []):
            key = json.dumps(r["key"], sort_keys=True)
            if key in index:
                records[index[key]] = r
            else:
                index[key] = len(records)
                records.append(r)
    head["records"] = records
    with open(out, "w") as f:
        json.dump(head, f)
    print(f"bench/train.py: {len(records)} records from {len(paths)} caches into {out}", file=sys.stderr)


def gpu_slug(name):
    m = re.search(r"\b([A-Z]\d{2,4})\b", name)
    return (m.group(1) if m else re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")).lower()


def table(a):
    import torch  # only here: merge needs no GPU

    checks = []
    with open(a.checks) as f:
        for line in f:
            if line.strip():
                checks.append(json.loads(line))
    modes = [m for m in a.modes.split(",") if m]
    device = torch.cuda.get_device_name(0)
    now = datetime.datetime.now(datetime.timezone.utc)
    stem = f"results-train-flagship-{now:%Y-%m-%d}-{gpu_slug(device)}-{a.commit}"
    ok = True
    lines = [
        f"# convgen's training module vs PyTorch (cuDNN): the flagship's forward + backward on {device}",
        "",
        "- shape: `N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2` (AlexNet's first layer), bias",
        f"- device: {device}",
        f"- driver: {a.driver}",
        f"- CUDA: {torch.version.cuda} (PyTorch's)",
        f"- cuDNN: {cudnn_version(torch.backends.cudnn.version())}",
        f"- PyTorch: {torch.__version__}",
        f"- date (UTC): {now:%Y-%m-%dT%H:%M:%SZ}",
        f"- convgen commit: {a.commit}",
        "",
        "| mode | module fwd+bwd ms | nn.Conv2d fwd+bwd ms | ratio (PyTorch/convgen) | target | met? | dgrad kernel ms | wgrad kernel ms | module with PyTorch's backward ms | forward launch overhead µs (target ≤ 20) | GPU kernels µs per fwd+bwd, module / nn.Conv2d |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in modes:
        prec, layout = m.split(":")
        pkg = f"torch_{prec}_{layout}"
        mine = [c for c in checks if c["package"] == pkg]
        g = next((c for c in mine if c["check"].startswith("(g)")), None)
        e = next((c for c in mine if c["check"].startswith("(e)")), None)
        ok = ok and g is not None and all(c["ok"] for c in mine)
        label = f"{prec} {layout.upper()} (PyTorch {PYTORCH_MODE.get(prec, prec)})"
        if g is None:
            lines.append(f"| {label} | failed: no forward + backward timing | | | | | | | | | |")
            continue
        d = g["data"]
        ratio = d["reference_ms"] / d["module_ms"]
        target = TARGETS.get(prec)
        met = "—" if target is None else ("yes" if ratio >= target else "no")
        k = d.get("kernels_ms", {})
        back = d.get("module_pytorch_backward_ms")
        over = "" if e is None else f"{e['data']['overhead_us']:.1f}"
        gpu = (f"{d['module_gpu_us']:.1f} / {d['reference_gpu_us']:.1f}" if "module_gpu_us" in d else "")
        lines.append(f"| {label} | {d['module_ms']:.3f} | {d['reference_ms']:.3f} | {ratio:.2f}× | "
                     f"{'—' if target is None else f'{target}×'} | {met} | "
                     f"{k.get('dgrad', float('nan')):.3f} | {k.get('wgrad', float('nan')):.3f} | "
                     f"{'' if back is None else f'{back:.3f}'} | {over} | {gpu} |")
    lines += [
        "",
        "How the numbers are made: `bench/train.sh` (see its header) writes each mode's training package and",
        "PyTorch module with `convgen -train -torch`, then `scripts/torch-check.py -k ge` times, in one process,",
        "`torch.autograd.grad` of the module and of `nn.Conv2d` with the same weights (input, weight and bias",
        "gradients; medians of CUDA-event timings after warm-up), each gradient kernel launched alone, and the",
        "module's forward launched back to back against its kernel alone (the overhead), and the sum of the GPU",
        "kernels' times per forward + backward (torch.profiler): where the host is slower than the GPU, the",
        "fwd+bwd columns time Python and autograd, the last one the kernels. The gradients' accuracy",
        "is check (b) of the same script (docs/pytorch.md); every row here comes from modules whose kernels",
        "passed their tuning's float64 checks.",
    ]
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, stem + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(a.outdir, stem + ".jsonl"), "w") as f:
        for c in checks:
            f.write(json.dumps(c) + "\n")
    print("\n".join(lines))
    print(f"bench/train.py: wrote {os.path.join(a.outdir, stem)}.md and .jsonl", file=sys.stderr)
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("merge")
    m.add_argument("caches", nargs="+")
    m.add_argument("-o", required=True)
    t = sub.add_parser("table")
    t.add_argument("checks")
    t.add_argument("--modes", required=True)
    t.add_argument("--commit", required=True)
    t.add_argument("--driver", default="?")
    t.add_argument("--outdir", default=os.path.dirname(os.path.abspath(__file__)))
    a = ap.parse_args()
    if a.cmd == "merge":
        merge(a.caches, a.o)
        return 0
    return table(a)


if __name__ == "__main__":
    sys.exit(main())
