#!/usr/bin/env python3
"""Checks `convgen -op transposed` against PyTorch's conv_transpose2d.

Usage: transposed-check.py [CONVGEN]

For each case below (a GAN generator's last layer, output_padding, groups
with per-axis stride and dilation), in the precisions and layouts listed,
runs CONVGEN (default .dev/convgen, a cuda build) with -op transposed on a
fresh cache, loads the record's CUBIN with CuPy and launches it with the
record's grid, block and shared memory as the kernel's (out, in, filter,
unused) = (y, x, weight, y), y poisoned with NaN; then compares y with
torch.nn.functional.conv_transpose2d in float64 on the same (for fp16 and
bf16, rounded) x and weight: relative L2 error within the precision's
bound (tf32 1e-3, 3xtf32 1e-5, fp16 2e-3, bf16 1e-2). The weight is
ConvTranspose2d's, C_in x C_out/groups x R x S (KRSC order, C_in x R x S x
C_out/groups, for NHWC). Prints one line a case; exits 1 if any fails.
Needs a GPU, PyTorch and CuPy.
"""
import base64, gzip, json, os, subprocess, sys, tempfile

import cupy as cp
import torch
import torch.nn.functional as F

CASES = [
    # (spec, precision, layout)
    ("N=8,C=64,H=32,W=32,K=3,R=4,S=4,stride=2,pad=1", "fp16", "nhwc"),
    ("N=8,C=64,H=32,W=32,K=3,R=4,S=4,stride=2,pad=1", "tf32", "nchw"),
    ("N=2,C=16,H=7,W=5,K=8,R=3,S=3,stride=2,pad=1,output_padding=1", "3xtf32", "nchw"),
    ("N=2,C=6,H=9,W=11,K=9,R=3,S=2,stride_h=3,stride_w=2,pad_w=1,output_padding_h=2,dilation_h=2,groups=3", "bf16", "nhwc"),
]
BOUND = {"tf32": 1e-3, "3xtf32": 1e-5, "fp16": 2e-3, "bf16": 1e-2}


def parse(spec):
    kv = dict(p.split("=") for p in spec.split(","))
    g = lambda k, d: int(kv.get(k, d))
    both = lambda k, d: (g(k + "_h", g(k, d)), g(k + "_w", g(k, d)))
    return dict(N=g("N", 0), C=g("C", 0), H=g("H", 0), W=g("W", 0), K=g("K", 0), R=g("R", 0), S=g("S", 0),
                stride=both("stride", 1), pad=both("pad", 0), out_pad=both("output_padding", 0),
                dil=both("dilation", 1), groups=g("groups", 1))


def check(convgen, spec, prec, layout):
    t = parse(spec)
    with tempfile.TemporaryDirectory() as d:
        cache = os.path.join(d, "c.json")
        r = subprocess.run([convgen, "-op", "transposed", "-shape", spec, "-precision", prec, "-layout", layout,
                            "-o", os.path.join(d, "pkg"), "-cache", cache, "-time", "10s", "-q"], capture_output=True, text=True)
        if r.returncode != 0:
            return False, "convgen exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])
        rec = json.load(open(cache))["records"][-1]
        cub = os.path.join(d, "k.cubin")
        open(cub, "wb").write(gzip.decompress(base64.b64decode(rec["cubin_gzip"])))
        fn = cp.RawModule(path=cub).get_function(rec["kernel"])
        fn.max_dynamic_shared_size_bytes = rec["shared_bytes"]
        torch.manual_seed(0)
        x = torch.randn(t["N"], t["C"], t["H"], t["W"], dtype=torch.float64)
        w = torch.randn(t["C"], t["K"] // t["groups"], t["R"], t["S"], dtype=torch.float64)
        dt = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prec, torch.float32)
        x, w = x.to(dt).double(), w.to(dt).double()  # the rounded inputs both sides use
        ref = F.conv_transpose2d(x, w, stride=t["stride"], padding=t["pad"], output_padding=t["out_pad"],
                                 groups=t["groups"], dilation=t["dil"])
        if layout == "nhwc":
            xd, wd, yshape = x.permute(0, 2, 3, 1), w.permute(0, 2, 3, 1), (ref.shape[0], ref.shape[2], ref.shape[3], ref.shape[1])
        else:
            xd, wd, yshape = x, w, tuple(ref.shape)
        xg = torch.as_tensor(xd.contiguous().to(dt), device="cuda")
        wg = torch.as_tensor(wd.contiguous().to(dt), device="cuda")
        yg = torch.full(yshape, float("nan"), dtype=dt, device="cuda")
        dev = lambda a: cp.asarray(a.view(torch.int16) if a.element_size() == 2 else a)  # CuPy has no bf16: pass the bits
        fn(tuple(rec["grid"]), tuple(rec["block"]), (dev(yg), dev(xg), dev(wg), dev(yg[:1])),
           shared_mem=rec["shared_bytes"])
        torch.cuda.synchronize()
        y = yg.double().cpu()
        if layout == "nhwc":
            y = y.permute(0, 3, 1, 2)
        if torch.isnan(y).any():
            return False, "%d outputs not written (NaN)" % int(torch.isnan(y).sum())
        err = float((y - ref).norm() / ref.norm())
        ok = err <= BOUND[prec]
        return ok, "%s %s, error %.2e (bound %.0e), output %s" % (rec["winner"]["family"], rec["kernel"], err, BOUND[prec], tuple(ref.shape))


def main():
    convgen = sys.argv[1] if len(sys.argv) > 1 else ".dev/convgen"
    failed = 0
    for spec, prec, layout in CASES:
        ok, msg = check(convgen, spec, prec, layout)
        failed += not ok
        print("%s  %s %s %s: %s" % ("ok  " if ok else "FAIL", spec, prec, layout, msg))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
