"""Checks the torch mirror of epilogue chains in emitted convgen PyTorch
packages, on the CPU: chain() in float64 against convgen's float64
reference (epilogue.Apply, computed by the Go test), and Conv2dFused's
backward against float64 autograd. Usage: chain_check.py CASES.json (written
by TestPythonChain). Exits non-zero on failure."""
import importlib.util
import json
import math
import os
import sys
import types

import torch
import torch.nn.functional as F

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def load(pkg_dir, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(pkg_dir, "__init__.py"),
                                                  submodule_search_locations=[pkg_dir])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def same(got, want):
    """got equals want to float64 rounding: NaN for NaN, equal infinities,
    else within 1e-12 relative (or absolute, below 1)."""
    bad = []
    for i, (g, w) in enumerate(zip(got, want)):
        if math.isnan(w) or math.isinf(w):
            ok = (math.isnan(g) and math.isnan(w)) or g == w
        else:
            ok = abs(g - w) <= 1e-12 * max(1.0, abs(w))
        if not ok:
            bad.append((i, g, w))
    return bad


with open(sys.argv[1], encoding="utf-8") as f:
    cases = json.load(f)
for n, c in enumerate(cases):
    mod = load(c["dir"], f"chainmod{n}")
    chain = c["chain"]
    check(mod.EPILOGUE == chain and mod.META["class"] == "Conv2dFused", f"{chain}: EPILOGUE and class")
    row = torch.tensor([float(v) for v in c["y"]], dtype=torch.float64)
    zrow = torch.tensor([float(v) for v in c["z"]], dtype=torch.float64)
    y = torch.stack([row, 2 * row]).view(1, 2, 1, -1)
    z = torch.stack([zrow, zrow]).view(1, 2, 1, -1)
    scale = torch.tensor(c["scale"], dtype=torch.float64)
    shift = torch.tensor(c["shift"], dtype=torch.float64)
    got = mod.chain(y, scale, shift, z).flatten().tolist()
    bad = same(got, [float(v) for v in c["want"]])
    check(not bad, f"{chain}: chain() in float64 is epilogue.Apply on {len(got)} values (NaN, infinities included)"
          + (f"; differs at (index, got, want) {bad[:4]}" if bad else ""))

    # Backward on the CPU, through _FusedFunction.backward with a stand-in
    # ctx, against float64 autograd of F.conv2d and the chain.
    P = mod.META["problem"]
    conv = getattr(mod, mod.META["class"])(P["c"], P["k"], (P["r"], P["s"]), bias=P["bias"])
    g = torch.Generator().manual_seed(7 + n)
    rnd = lambda *shape: torch.randn(*shape, generator=g, dtype=torch.float64)
    x, w = rnd(1, P["c"], P["h"], P["w"]) * 2, rnd(*conv.weight.shape)
    b = rnd(P["k"]) if P["bias"] else None
    a, s = rnd(P["k"]), rnd(P["k"])
    res = rnd(1, P["k"], P["p"], P["q"]) if mod._RESIDUAL else None
    a = a if mod._SCALE_SHIFT else None
    s = s if mod._SCALE_SHIFT else None
    leaves = [t.clone().requires_grad_() if t is not None else None for t in (x, w, b, a, s, res)]
    yr = mod.chain(F.conv2d(leaves[0], leaves[1], leaves[2]), leaves[3], leaves[4], leaves[5])
    dy = rnd(*yr.shape)
    yr.backward(dy)
    for mask in ([True] * 6, [True, False, False, False, False, False], [False, True, False, False, False, False]):
        needs = tuple(m and t is not None for m, t in zip(mask, (x, w, b, a, s, res)))
        ctx = types.SimpleNamespace(saved_tensors=(x, w, b, a, s, res), needs_input_grad=needs + (False, False),
                                    conv=conv)
        grads = mod._FusedFunction.backward(ctx, dy)
        ok = len(grads) == 8 and grads[6] is None and grads[7] is None
        for name, got_g, leaf, need in zip(("input", "weight", "bias", "scale", "shift", "residual"), grads,
                                           leaves, needs):
            if not need:
                ok &= got_g is None
                continue
            err = ((got_g.double() - leaf.grad).norm() / leaf.grad.norm().clamp_min(1e-30)).item()
            if not err < 1e-5:
                print(f"  {name} gradient: relative error {err:.2e}")
                ok = False
        check(ok, f"{chain}: backward with requires_grad on {[n for n, m in zip(('x', 'w', 'b', 'scale', 'shift', 'z'), needs) if m]} "
                  "matches float64 autograd")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all chain checks passed")
