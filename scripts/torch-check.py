#!/usr/bin/env python3
"""Checks convgen's PyTorch modules on a GPU, with nothing but PyTorch.

Usage: torch-check.py [-k CHECKS] MODULE_DIR...

Each MODULE_DIR is a Python package that `convgen -torch DIR` wrote (for the
flagship: scripts/torch-flagship writes .dev/torch/NAME). For each, and on
GPU 0, the checks are:

  (a) forward: the module's output against PyTorch's float64 conv2d of the
      same (rounded) input, weight and bias, relative L2 error within the
      precision's bound (fp32, 3xtf32 1e-5; tf32 1e-3; fp16 2e-3; bf16
      1e-2); through the CUBIN the module picks and through the PTX image.
  (b) gradients of input, weight and bias (requires_grad on all, then on
      each alone) against float64 autograd, with the same bounds. A module
      generated with convgen's gradient kernels (BACKWARD_KERNELS: the
      cache held the dgrad and wgrad records of the problem) computes them
      with those kernels; each line names the path that ran (the module's
      last_backward), and a "(b) backward path" line says which image of
      which kernel computes each gradient (backward_info), failing where
      a kernel of the module does not load on this GPU. The gradients
      that PyTorch computes (all of them without gradient kernels) are its
      own convolutions: for fp32 and 3xtf32 the script turns TF32 off
      (PyTorch's default allows it in cuDNN).
  (c) training: conv + flatten + linear head, fixed random data, 300 SGD
      steps, seeded; the loss curve against the same model with nn.Conv2d.
  (d) KernelBench-style: class Model (nn.Conv2d) and class ModelNew (the
      module), each built after torch.manual_seed(same seed); outputs on
      five random inputs equal within torch.allclose(atol=1e-2, rtol=1e-2).
  (e) timing, under no_grad, CUDA events, medians after warm-up: the
      module's forward back to back (200 calls between two events, per
      call) minus the kernel's back-to-back time through the raw ctypes
      launch measured the same way, which must be at most 20 us; and the
      host time per call (perf_counter over 200 calls, per call), which
      must be at most 20 us too. Also printed: one call on an idle GPU
      against the kernel's time, the autograd path (and, for scale, the
      host time of a no-op torch.autograd.Function with the same
      arguments: the machinery's own cost), and F.conv2d's figures
      measured the same way.
  (f) API: no_grad, a side stream, wrong shape / memory format / dtype
      raise ValueError, fallback=True warns and matches F.conv2d, the
      constructor refuses mismatched arguments.
  (g) forward + backward timing (the three gradients, torch.autograd.grad,
      CUDA events, back to back, medians): the module against nn.Conv2d
      (cuDNN; TF32 allowed for tf32 only), and, with gradient kernels,
      the module with use_convgen_backward=False and each gradient kernel
      alone through its raw launch; names the backward path. With small
      layers that time is the host's (Python and autograd), not the GPU's:
      (g) also prints the host time per forward + backward and the sum of
      the GPU kernels' times per forward + backward (torch.profiler's
      device times over 20 calls), for the module and for nn.Conv2d.
      Reports figures (PASS unless it raises, or the gradient kernels did
      not run).

A module with a fused epilogue chain (Conv2dFused, convgen -epilogue) runs
the same checks with its chain: scale and shift set to random values (in
[0.5, 1.5) and [-1, 1)), a random residual where the chain adds one; the
reference of (a) and (b) is the float64 convolution followed by the chain in
float64 (the module's chain(), which mirrors convgen's float64 reference),
and (b) also checks the gradients of scale, shift and the residual, with dY
zeroed at the few outputs that lie within rounding of a kink of the chain
(relu's 0, clamp's bounds: there either side is right); (c) and
(d) compare against nn.Conv2d followed by chain() in float32.

Prints one PASS or FAIL line per check, a summary, and exits 1 if any check
failed (2 on a usage error). -k abf runs only the checks named (in order, a to g); --results
FILE also appends each check's outcome to FILE as a JSON line, with the
figures of (e) and (g) (bench/train.sh builds its results file from them).
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

BOUNDS = {"fp32": 1e-5, "3xtf32": 1e-5, "tf32": 1e-3, "fp16": 2e-3, "bf16": 1e-2}
# Loss-curve tolerance of (c): the largest |loss - reference loss| over the
# steps, relative to the reference loss.
TRAIN_TOL = {"fp32": 1e-3, "3xtf32": 1e-3, "tf32": 1e-2, "fp16": 3e-2, "bf16": 5e-2}
OVERHEAD_US = 20.0

results = []  # (package, check, ok, detail)
results_file = None  # --results: one JSON line per check


def report(pkg, check, ok, detail, data=None):
    """Records and prints one check's outcome; with --results also writes it
    as a JSON line, with the check's figures (data) where it has some."""
    results.append((pkg, check, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'} {pkg} {check}: {detail}", flush=True)
    if results_file is not None:
        results_file.write(json.dumps({"package": pkg, "check": check, "ok": ok, "detail": detail, "data": data or {}}) + "\n")
        results_file.flush()


def load(dirpath):
    """Imports the package in dirpath under a name of its own."""
    dirpath = os.path.abspath(dirpath)
    name = "convgen_torch_" + os.path.basename(dirpath)
    spec = importlib.util.spec_from_file_location(name, os.path.join(dirpath, "__init__.py"),
                                                  submodule_search_locations=[dirpath])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def set_tf32(allowed):
    """TF32 in cuDNN convolutions (PyTorch's default: allowed), with the API
    this PyTorch has; matmuls keep PyTorch's default (strict FP32)."""
    set_tf32.allowed = allowed
    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is not None and hasattr(conv, "fp32_precision"):
        conv.fp32_precision = "tf32" if allowed else "ieee"
    else:
        torch.backends.cudnn.allow_tf32 = allowed


set_tf32.allowed = True  # what the last call set (PyTorch's default until then)


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm()).item()


class Package:
    """One module package and the tensors its checks share."""

    def __init__(self, mod):
        self.mod = mod
        m = mod.META
        self.name = os.path.basename(os.path.dirname(mod.__file__))
        self.precision = m["precision"]
        self.p = m["problem"]
        self.bound = BOUNDS[self.precision]
        self.dtype = mod.DTYPE
        self.fmt = mod.MEMORY_FORMAT
        p = self.p
        self.args = (p["c"], p["k"], (p["r"], p["s"]))
        self.kw = dict(stride=tuple(p["stride"]), padding=tuple(p["padding"]), dilation=tuple(p["dilation"]),
                       groups=p["groups"], bias=p["bias"])
        self.in_shape = (p["n"], p["c"], p["h"], p["w"])
        self.out_shape = (p["n"], p["k"], p["p"], p["q"])
        self.cls = getattr(mod, m.get("class", "Conv2d"))
        self.chain = m.get("epilogue")  # None for the plain convolution
        self.ss = self.chain is not None and mod._SCALE_SHIFT
        self.residual = self.chain is not None and mod._RESIDUAL

    def conv(self, seed=1, **kw):
        """The module, seeded; with scale_shift, scale and shift random
        (from seed too), so that the check sees them."""
        torch.manual_seed(seed)
        conv = self.cls(*self.args, **self.kw, device="cuda", **kw)
        if self.ss:
            g = torch.Generator(device="cuda").manual_seed(seed + 1000)
            with torch.no_grad():
                conv.scale.copy_(torch.rand(self.p["k"], device="cuda", generator=g) + 0.5)
                conv.shift.copy_(torch.rand(self.p["k"], device="cuda", generator=g) * 2 - 1)
        return conv

    def res(self, seed=4):
        """A residual for chains that add one (else None): random, rounded
        to the dtype, in the module's memory format."""
        if not self.residual:
            return None
        g = torch.Generator(device="cuda").manual_seed(seed)
        return torch.randn(self.out_shape, device="cuda", generator=g).to(self.dtype).contiguous(memory_format=self.fmt)

    def call(self, conv, x, r=None):
        """conv(x), with the residual r for chains that add one."""
        return conv(x, r) if self.residual else conv(x)

    def ref_full(self, x, conv, r=None):
        """float64 reference of the module's output: the convolution, then
        the chain in float64."""
        y = self.ref(x, conv.weight, conv.bias)
        if self.chain is None:
            return y
        return self.mod.chain(y, conv.scale.double() if self.ss else None, conv.shift.double() if self.ss else None,
                              None if r is None else r.double())

    def input(self, seed=2):
        g = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(self.in_shape, device="cuda", generator=g).to(self.dtype)
        return x.contiguous(memory_format=self.fmt)

    def ref(self, x, w, b):
        return F.conv2d(x.double(), w.double(), None if b is None else b.double(), **self.conv_kw())

    def conv_kw(self):
        return {k: v for k, v in self.kw.items() if k != "bias"}


def check_forward(pk):
    conv = pk.conv()
    x = pk.input()
    r = pk.res()
    with torch.no_grad():
        ref = pk.ref_full(x, conv, r)
        out = pk.call(conv, x, r)
        torch.cuda.synchronize()
        info = conv.kernel_info()
        ok = out.shape == ref.shape and out.dtype == pk.dtype and out.is_contiguous(memory_format=pk.fmt)
        e = rel(out, ref)
        nan = torch.isnan(out).any().item()
        report(pk.name, "(a) forward " + info["image"] + (f" epilogue {pk.chain['chain']}" if pk.chain else ""),
               ok and not nan and e <= pk.bound,
               f"rel. L2 {e:.2e} (bound {pk.bound:.0e}), shape {tuple(out.shape)}, {out.dtype}"
               + (", NaN!" if nan else "") + ("" if ok else ", wrong shape/dtype/format"))
        ptx = pk.mod.META["ops"]["fprop"].get("ptx")
        if ptx is None:
            report(pk.name, "(a) forward PTX", True, "no PTX image in this package (skipped)")
            return
        idx = torch.cuda.current_device()
        op = dict(pk.mod.META["ops"]["fprop"], cubin=None)
        conv._kernels[idx] = pk.mod._Kernel(op, idx)
        conv._fast = None  # the fast path holds the kernel it launched last
        out = pk.call(conv, x, r)
        e = rel(out, ref)
        report(pk.name, f"(a) forward PTX ({ptx['arch']}, {ptx['kernel']})", e <= pk.bound,
               f"rel. L2 {e:.2e} (bound {pk.bound:.0e})")


def check_gradients(pk):
    strict = pk.precision in ("fp32", "3xtf32")
    set_tf32(not strict)
    conv = pk.conv()
    x0 = pk.input()
    g = torch.Generator(device="cuda").manual_seed(3)
    p = pk.p
    dy = torch.randn((p["n"], p["k"], p["p"], p["q"]), device="cuda", generator=g).to(pk.dtype)
    r0 = pk.res()
    kinks = ""
    if pk.chain is not None:
        near = near_kinks(pk, conv, x0, r0)
        dy = dy.masked_fill(near, 0)
        kinks = f"; dY zeroed at {near.sum().item()} of {near.numel()} outputs within reach of a kink of the chain"
    # float64 reference gradients (through the chain in float64 for a fused module)
    xd = x0.double().requires_grad_()
    wd = conv.weight.detach().double().requires_grad_()
    bd = conv.bias.detach().double().requires_grad_() if conv.bias is not None else None
    y = F.conv2d(xd, wd, bd, **pk.conv_kw())
    ad = conv.scale.detach().double().requires_grad_() if pk.ss else None
    sd = conv.shift.detach().double().requires_grad_() if pk.ss else None
    rd = r0.double().requires_grad_() if pk.residual else None
    if pk.chain is not None:
        y = pk.mod.chain(y, ad, sd, rd)
    y.backward(dy.double())
    refs = {"input": xd.grad, "weight": wd.grad, "bias": None if bd is None else bd.grad,
            "scale": None if ad is None else ad.grad, "shift": None if sd is None else sd.grad,
            "residual": None if rd is None else rd.grad}
    del xd, wd, bd, y, ad, sd, rd
    names = ["input", "weight"] + (["bias"] if conv.bias is not None else []) + (["scale", "shift"] if pk.ss else []) \
        + (["residual"] if pk.residual else [])
    params = {"weight": conv.weight, "bias": conv.bias, "scale": getattr(conv, "scale", None),
              "shift": getattr(conv, "shift", None)}
    grad_ops = getattr(pk.mod, "BACKWARD_KERNELS", ())
    if grad_ops:
        info = conv.backward_info()
        missing = [op for op in grad_ops if all(not isinstance(v, dict) or v["op"] != op for v in info.values())]
        desc = "; ".join(f"d{n}: " + (v if isinstance(v, str) else f"{v['op']} {v['image']} {v['kernel']}")
                         for n, v in info.items() if v is not None)
        report(pk.name, "(b) backward path", not missing,
               desc + (f"; the module's {', '.join(missing)} kernel does not load here" if missing else ""))
    for subset in [names] + [[n] for n in names]:
        x = x0.clone().requires_grad_("input" in subset)
        r = r0.clone().requires_grad_("residual" in subset) if pk.residual else None
        for n, t in params.items():
            if t is not None:
                t.requires_grad_(n in subset)
                t.grad = None
        pk.call(conv, x, r).backward(dy)
        got = {"input": x.grad, "residual": None if r is None else r.grad}
        got.update({n: None if t is None else t.grad for n, t in params.items()})
        parts, ok = [], True
        for n in names:
            if n in subset:
                e = rel(got[n], refs[n]) if got[n] is not None else float("inf")
                ok &= e <= pk.bound
                parts.append(f"d{n} {e:.1e}")
            elif got[n] is not None:
                ok = False
                parts.append(f"d{n} computed though not asked")
        report(pk.name, f"(b) gradients requires_grad={'+'.join(subset)}", ok,
               ", ".join(parts) + f" (bound {pk.bound:.0e}; backward: {backward_path(conv)}{kinks})")
    for t in params.values():
        if t is not None:
            t.requires_grad_(True)
    set_tf32(True)


def near_kinks(pk, conv, x, r):
    """The outputs of a fused module whose chain is not differentiable
    within the forward's rounding of them: where the chain's derivative
    with respect to the convolution's output y (float64, elementwise)
    changes by more than a quarter between y - eps and y + eps, eps ten
    times the precision's bound times y's RMS. There (relu's 0, clamp's
    bounds, hardswish's +-3, ...) the module's gradient and float64's may
    rightly take different sides of the kink, so the gradient check leaves
    those outputs out (dY zeroed on both sides)."""
    with torch.no_grad():
        y = F.conv2d(x.double(), conv.weight.double(), None if conv.bias is None else conv.bias.double(),
                     **pk.conv_kw())
    a = conv.scale.detach().double() if pk.ss else None
    s = conv.shift.detach().double() if pk.ss else None
    rd = r.double() if pk.residual else None
    eps = 10 * pk.bound * y.pow(2).mean().sqrt().item()

    def slope(v):
        v = v.detach().requires_grad_()
        (g,) = torch.autograd.grad(pk.mod.chain(v, a, s, rd).sum(), v)
        return g

    return (slope(y - eps) - slope(y + eps)).abs() > 0.25


def backward_path(conv):
    """What computed each gradient of conv's last backward: the convgen
    kernel or PyTorch (with its TF32 setting)."""
    strict = "off" if set_tf32.allowed is False else "allowed"
    last = getattr(conv, "last_backward", None)
    if not last:
        return f"PyTorch's, TF32 {strict}"
    return ", ".join(f"d{n} {'convgen ' + v if v != 'pytorch' else 'PyTorch (TF32 ' + strict + ')'}"
                     for n, v in last.items() if v is not None)


class EagerFused(nn.Module):
    """nn.Conv2d followed by a fused module's chain() in float32: the
    reference of (c) and (d) for a chain, with the same parameters."""

    def __init__(self, pk, **kw):
        super().__init__()
        self.pk = pk
        self.conv = nn.Conv2d(*pk.args, **pk.kw, dtype=pk.dtype, **kw)
        if pk.ss:
            self.scale = nn.Parameter(torch.ones(pk.p["k"], device=kw.get("device")))
            self.shift = nn.Parameter(torch.zeros(pk.p["k"], device=kw.get("device")))

    def forward(self, x, r=None):
        y = self.conv(x)
        return self.pk.mod.chain(y.float(), self.scale if self.pk.ss else None, self.shift if self.pk.ss else None,
                                 None if r is None else r.float()).to(y.dtype)


def reference_module(pk, **kw):
    """nn.Conv2d, or EagerFused for a chain, with the module's parameters
    drawn alike (scale and shift as Package.conv sets them)."""
    if pk.chain is None:
        return nn.Conv2d(*pk.args, **pk.kw, dtype=pk.dtype, **kw)
    m = EagerFused(pk, **kw)
    return m


def train(pk, conv, steps, x, y):
    p = pk.p
    torch.manual_seed(11)
    head = nn.Linear(p["k"] * p["p"] * p["q"], 10, device="cuda")
    # The head's features are many (K*P*Q): a small rate; the convolution's
    # gradient is small: a larger one, so that its weights do move.
    opt = torch.optim.SGD([{"params": conv.parameters(), "lr": 1e-2}, {"params": head.parameters(), "lr": 1e-5}],
                          momentum=0.9)
    weight = conv.conv.weight if isinstance(conv, EagerFused) else conv.weight
    w0 = weight.detach().float().clone()
    r = pk.res(seed=23)
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(head(torch.flatten(pk.call(conv, x, r).float(), 1)), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, rel(weight.detach().float(), w0) if w0.norm() > 0 else 0.0


def last_path(conv):
    """The backward path of conv's last backward, for a report."""
    return "backward " + (backward_path(conv) if hasattr(conv, "last_backward") else "PyTorch's")


def check_training(pk, steps=300):
    set_tf32(pk.precision == "tf32")
    x = pk.input(seed=21)
    y = torch.randint(0, 10, (pk.p["n"],), device="cuda", generator=torch.Generator(device="cuda").manual_seed(22))
    torch.manual_seed(7)
    ref_conv = reference_module(pk, device="cuda")
    conv = pk.conv(seed=7)
    if pk.ss:
        with torch.no_grad():
            ref_conv.scale.copy_(conv.scale)
            ref_conv.shift.copy_(conv.shift)
    same_init = torch.equal(conv.weight, ref_conv.conv.weight if pk.chain else ref_conv.weight)
    ref, _ = train(pk, ref_conv.to(memory_format=pk.fmt), steps, x, y)
    got, moved = train(pk, conv, steps, x, y)
    dev = max(abs(a - b) / max(abs(b), 1e-3) for a, b in zip(got, ref))
    tol = TRAIN_TOL[pk.precision]
    learns = ref[-1] < 0.9 * ref[0]
    report(pk.name, f"(c) training {steps} SGD steps", same_init and dev <= tol and learns,
           f"loss {got[0]:.4f} -> {got[-1]:.4f} ({'nn.Conv2d + chain()' if pk.chain else 'nn.Conv2d'} {ref[0]:.4f} -> {ref[-1]:.4f}), largest relative "
           f"deviation {dev:.1e} (tolerance {tol:.0e}); the conv weights moved by {moved:.1e} (relative)"
           + f"; {last_path(conv)}"
           + ("" if same_init else ", initial weights differ!")
           + ("" if learns else ", the loss does not fall"))
    set_tf32(True)


def check_kernelbench(pk, trials=5, seed=42):
    args, kw, dtype, fmt = pk.args, pk.kw, pk.dtype, pk.fmt

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = reference_module(pk)

        def forward(self, x, r=None):
            return pk.call(self.conv, x, r)

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = pk.cls(*args, **kw, dtype=dtype)

        def forward(self, x, r=None):
            return pk.call(self.conv, x.contiguous(memory_format=fmt),
                           None if r is None else r.contiguous(memory_format=fmt))

    torch.manual_seed(seed)
    model = Model().cuda()
    torch.manual_seed(seed)
    new = ModelNew().cuda()
    worst, ok = 0.0, True
    with torch.no_grad():
        for t in range(trials):
            torch.manual_seed(seed + 1 + t)
            x = torch.randn(pk.in_shape).to(dtype).cuda()
            r = torch.randn(pk.out_shape).to(dtype).cuda() if pk.residual else None
            a, b = model(x, r), new(x, r)
            if a.shape != b.shape:
                ok = False
                break
            ok &= torch.allclose(a.float(), b.float(), atol=1e-2, rtol=1e-2)
            worst = max(worst, (a.float() - b.float()).abs().max().item())
    report(pk.name, f"(d) KernelBench-style Model vs ModelNew, {trials} inputs", ok,
           f"largest |difference| {worst:.2e} (allclose atol=rtol=1e-2)")


def events_ms(fn, reps, inner=1):
    """Median over reps of the CUDA-event time of inner calls of fn, each
    rep started on an idle GPU, per call."""
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(inner):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / inner)
    return statistics.median(times)


def kernels_us(fn, calls=20):
    """The GPU kernels' time per call of fn, in microseconds: the sum of
    torch.profiler's device times of every kernel (and memset or copy) that
    calls of fn launch, over calls."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA
    return sum(e.device_time_total for e in prof.key_averages() if e.device_type == cuda) / calls


def host_us(fn, reps, inner=1):
    """Median over reps of the host time of inner calls of fn back to back,
    each rep started on an idle GPU, per call, in microseconds."""
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) * 1e6 / inner)
    torch.cuda.synchronize()
    return statistics.median(times)


BACK_TO_BACK = 200


def timings(fn):
    """fn's figures in ms and us: one call on an idle GPU, back to back
    (BACK_TO_BACK calls between two events, per call), host time per call
    back to back and of one call."""
    one = events_ms(fn, 200)
    b2b = events_ms(fn, 20, inner=BACK_TO_BACK)
    host = host_us(fn, 20, inner=BACK_TO_BACK)
    host_one = host_us(fn, 200)
    return one, b2b, host, host_one


class _NoOp(torch.autograd.Function):
    """An autograd.Function that launches nothing and returns a new empty
    tensor: what the machinery itself costs per call."""

    @staticmethod
    def forward(ctx, input, weight, bias, conv, launch):
        return input.new_empty(())

    @staticmethod
    def backward(ctx, grad_out):
        return None, None, None, None, None


def check_timing(pk):
    set_tf32(pk.precision == "tf32")
    conv = pk.conv()
    x = pk.input()
    idx = torch.cuda.current_device()
    k = conv._kernel(idx)
    w = conv._kernel_weight(conv.weight)
    r = pk.res()
    with torch.no_grad():
        out = pk.call(conv, x, r)
    stream = torch.cuda.current_stream().cuda_stream
    ptrs = (out.data_ptr(), x.data_ptr(), w.data_ptr(), conv.bias.data_ptr() if conv.bias is not None else 0)
    ptrs += (conv.scale.data_ptr(), conv.shift.data_ptr()) if pk.ss else ()
    ptrs += (r.data_ptr(),) if pk.residual else ()
    raw = lambda: k.launch(stream, *ptrs)
    wr = conv.weight.detach().contiguous(memory_format=pk.fmt)
    torch_fn = lambda: F.conv2d(x, wr, conv.bias, **pk.conv_kw())
    module_fn = lambda: pk.call(conv, x, r)
    with torch.no_grad():
        for fn in (raw, torch_fn, module_fn):
            for _ in range(20):
                fn()
        kernel = events_ms(raw, 20, inner=BACK_TO_BACK)  # back to back: the kernel alone
        raw_one = events_ms(raw, 200)
        raw_host = host_us(raw, 20, inner=BACK_TO_BACK)
        one, b2b, host, host_one = timings(module_fn)
        t_one, t_b2b, t_host, t_host_one = timings(torch_fn)
    x.requires_grad_(True)
    g_one = events_ms(module_fn, 200)
    g_b2b = events_ms(module_fn, 20, inner=BACK_TO_BACK)
    g_host = host_us(module_fn, 20, inner=BACK_TO_BACK)
    noop_args = (x, conv.weight, conv.bias, conv, (0, 0, None, ()))
    noop_host = host_us(lambda: _NoOp.apply(*noop_args), 20, inner=BACK_TO_BACK)
    x.requires_grad_(False)
    over_b2b, over_one = (b2b - kernel) * 1000, (one - kernel) * 1000
    ok = over_b2b <= OVERHEAD_US and host <= OVERHEAD_US
    report(pk.name, "(e) timing", ok,
           f"module forward under no_grad, back to back: {b2b:.4f} ms per call against the kernel's "
           f"{kernel:.4f} ms back to back through the raw launch ({k.image}): +{over_b2b:.1f} us per call, "
           f"target <= {OVERHEAD_US:.0f} us; host time per call {host:.1f} us back to back "
           f"({host_one:.1f} us one call on an idle GPU), target <= {OVERHEAD_US:.0f} us; "
           f"one call on an idle GPU {one:.4f} ms (+{over_one:.1f} us; one raw launch {raw_one:.4f} ms, "
           f"raw launch host time {raw_host:.1f} us); with autograd: {g_b2b:.4f} ms back to back "
           f"(+{(g_b2b - kernel) * 1000:.1f} us), host {g_host:.1f} us (of which a no-op autograd.Function's "
           f"apply {noop_host:.1f} us), one call {g_one:.4f} ms "
           f"(+{(g_one - kernel) * 1000:.1f} us); F.conv2d (cuDNN): back to back {t_b2b:.4f} ms, "
           f"one call {t_one:.4f} ms (+{(t_one - t_b2b) * 1000:.1f} us over its back to back), "
           f"host time per call {t_host:.1f} us back to back ({t_host_one:.1f} us one call)",
           {"precision": pk.precision, "kernel_ms": kernel, "module_ms": b2b, "overhead_us": over_b2b,
            "host_us": host, "conv2d_ms": t_b2b, "target_us": OVERHEAD_US})
    set_tf32(True)


def expect(exc, fn, *words):
    try:
        fn()
    except exc as e:
        return all(w in str(e) for w in words)
    return False


def check_api(pk):
    conv = pk.conv()
    x = pk.input()
    r = pk.res()
    call = lambda m, x: pk.call(m, x, r)
    problems = []
    with torch.no_grad():
        want = call(conv, x)
        if call(conv, x).requires_grad:
            problems.append("output requires grad under no_grad")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            side = call(conv, x)
        torch.cuda.current_stream().wait_stream(s)
        if not torch.equal(side, want):
            problems.append("a side stream gives another result")
        if not torch.equal(call(conv, x), want):
            problems.append("two calls differ")
        n, c, h, w = pk.in_shape
        bigger = torch.randn(n, c, h + 1, w, device="cuda").to(pk.dtype).contiguous(memory_format=pk.fmt)
        if not expect(ValueError, lambda: call(conv, bigger), "shape", "fallback=True"):
            problems.append("a wrong shape does not raise ValueError")
        other = torch.contiguous_format if pk.fmt is torch.channels_last else torch.channels_last
        if pk.p["c"] > 1 and not expect(ValueError, lambda: call(conv, x.contiguous(memory_format=other)), "not"):
            problems.append("a wrong memory format does not raise ValueError")
        wrong = torch.float64
        if not expect(ValueError, lambda: call(conv, x.to(wrong)), "float64"):
            problems.append("a wrong dtype does not raise ValueError")
        fb = pk.conv(fallback=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # (a residual must have the output's shape: the chains that add
            # one fall back on an input in the other memory format instead)
            unfit = x.contiguous(memory_format=other) if pk.residual else bigger
            got = call(fb, unfit)
        ref = F.conv2d(unfit, fb.weight, fb.bias, **pk.conv_kw())
        if pk.chain is not None:
            ref = pk.mod.chain(ref.float(), fb.scale if pk.ss else None, fb.shift if pk.ss else None,
                               None if r is None else r.float()).to(ref.dtype)
        if not caught or not torch.allclose(got.float(), ref.float()):
            problems.append("fallback=True does not warn or differs from F.conv2d")
        # A weight in the other layout: copied once per version.
        conv2 = pk.conv()
        conv2.weight.data = conv2.weight.data.contiguous(memory_format=other)
        if rel(call(conv2, x), want) > pk.bound:
            problems.append("a weight in the other memory format gives another result")
    if pk.residual and not expect(ValueError, lambda: conv(x, None), "residual"):
        problems.append("a missing residual does not raise ValueError")
    if not expect(ValueError, lambda: pk.cls(pk.p["c"] + 1, *pk.args[1:], **pk.kw), "in_channels"):
        problems.append("a mismatched in_channels does not raise ValueError")
    report(pk.name, "(f) API", not problems, "; ".join(problems) or
           "no_grad, side stream, ValueErrors, fallback, weight re-layout all as documented")


def check_backward_timing(pk, inner=10):
    set_tf32(pk.precision == "tf32")
    conv = pk.conv()
    torch.manual_seed(1)
    ref = reference_module(pk, device="cuda").to(memory_format=pk.fmt)
    with torch.no_grad():
        (ref.conv if pk.chain else ref).weight.copy_(conv.weight)
    x = pk.input().requires_grad_()
    r = pk.res()
    g = torch.Generator(device="cuda").manual_seed(3)
    dy = torch.randn(pk.out_shape, device="cuda", generator=g).to(pk.dtype).contiguous(memory_format=pk.fmt)

    def fwd_bwd(m):
        params = [t for t in m.parameters() if t.requires_grad]
        return lambda: torch.autograd.grad(pk.call(m, x, r), [x] + params, dy)

    figures, gpu_us, cpu_us = {}, {}, {}
    for what, m in (("module", conv), ("nn.Conv2d" + (" + chain()" if pk.chain else ""), ref)):
        fn = fwd_bwd(m)
        for _ in range(5):
            fn()
        figures[what] = events_ms(fn, 20, inner=inner)
        cpu_us[what] = host_us(fn, 20, inner=inner)
    path = last_path(conv)
    grad_ops = getattr(pk.mod, "BACKWARD_KERNELS", ())
    ran = (conv.last_backward or {}) if grad_ops else {}
    ok = all(op in ran.values() for op in grad_ops)
    extra = ""
    kernel_ms = {}
    if grad_ops:
        conv.use_convgen_backward = False
        fn = fwd_bwd(conv)
        for _ in range(5):
            fn()
        figures["module, PyTorch's backward"] = events_ms(fn, 20, inner=inner)
        conv.use_convgen_backward = True
        idx = torch.cuda.current_device()
        stream = torch.cuda.current_stream().cuda_stream
        w = conv._kernel_weight(conv.weight)
        kernels = []
        for op in grad_ops:
            k = conv._grad_kernel(op, idx)
            if k is None:
                continue
            if op == "dgrad":
                dx = torch.empty(pk.in_shape, device="cuda", dtype=pk.dtype).contiguous(memory_format=pk.fmt)
                ptrs = (dx.data_ptr(), dy.data_ptr(), w.data_ptr(), 0)
            else:
                dw = torch.empty_like(w)
                db = torch.empty(pk.p["k"], device="cuda", dtype=torch.float32) if pk.p["bias"] else None
                ptrs = (dw.data_ptr(), x.data_ptr(), dy.data_ptr(), 0 if db is None else db.data_ptr())
            launch = lambda k=k, ptrs=ptrs: k.launch(stream, *ptrs)
            for _ in range(5):
                launch()
            kernel_ms[op] = events_ms(launch, 20, inner=inner)
            kernels.append(f"{op} {kernel_ms[op]:.4f} ms ({k.image}, {k.kernel})")
        extra = "; kernels alone: " + ", ".join(kernels)
    # The GPU kernels' time per forward + backward, profiled last (after
    # every event and host timing of this check).
    for what, m in (("module", conv), ("nn.Conv2d" + (" + chain()" if pk.chain else ""), ref)):
        gpu_us[what] = kernels_us(fwd_bwd(m))
    where = ", ".join(f"{k} host {cpu_us[k]:.0f} us, GPU kernels {gpu_us[k]:.1f} us" for k in cpu_us)
    bound = " (host-bound: the host's time exceeds the GPU kernels')" if all(
        cpu_us[k] > gpu_us[k] for k in cpu_us) else ""
    data = {"precision": pk.precision, "module_ms": figures["module"], "kernels_ms": kernel_ms,
            "reference_ms": next(v for k, v in figures.items() if k.startswith("nn.Conv2d")),
            "module_pytorch_backward_ms": figures.get("module, PyTorch's backward"),
            "module_host_us": cpu_us["module"], "module_gpu_us": gpu_us["module"],
            "reference_host_us": next(v for k, v in cpu_us.items() if k.startswith("nn.Conv2d")),
            "reference_gpu_us": next(v for k, v in gpu_us.items() if k.startswith("nn.Conv2d"))}
    base = figures.pop("module")
    report(pk.name, "(g) forward + backward timing", ok,
           f"module {base:.4f} ms per forward + backward (dinput, dweight" + (", dbias" if pk.p["bias"] else "")
           + "); " + ", ".join(f"{k} {v:.4f} ms ({v / base:.2f}x the module's time)" for k, v in figures.items())
           + f"; per forward + backward: {where}{bound}"
           + f"; {path}" + extra + ("" if ok else "; the gradient kernels did not run"), data)
    set_tf32(True)


CHECKS = {"a": check_forward, "b": check_gradients, "c": check_training, "d": check_kernelbench,
          "e": check_timing, "f": check_api, "g": check_backward_timing}


def main():
    ap = argparse.ArgumentParser(description="Checks convgen PyTorch modules on a GPU.")
    ap.add_argument("-k", default="abcdefg", help="the checks to run, e.g. abf (default: all)")
    ap.add_argument("--results", help="also append each check's outcome and figures to this file, a JSON line each")
    ap.add_argument("dirs", nargs="+", help="module directories (convgen -torch DIR)")
    a = ap.parse_args()
    global results_file
    if a.results:
        results_file = open(a.results, "a")
    if not torch.cuda.is_available():
        print("torch-check: no CUDA device", file=sys.stderr)
        return 2
    if set(a.k) - set(CHECKS):
        print(f"torch-check: unknown checks {set(a.k) - set(CHECKS)}", file=sys.stderr)
        return 2
    print(f"device {torch.cuda.get_device_name(0)}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}",
          flush=True)
    for d in a.dirs:
        try:
            pk = Package(load(d))
        except Exception as e:  # a package that does not import is a failure, not a crash
            report(os.path.basename(os.path.normpath(d)), "import", False, repr(e))
            continue
        for c in sorted(set(a.k)):  # in order: (g)'s profiling after (e)'s timings
            try:
                CHECKS[c](pk)
            except Exception as e:
                report(pk.name, f"({c}) {CHECKS[c].__name__}", False, f"raised {e!r}")
            torch.cuda.empty_cache()
    failed = [r for r in results if not r[2]]
    print(f"\n{len(results) - len(failed)} passed, {len(failed)} failed")
    for pkg, check, _, detail in failed:
        print(f"FAIL {pkg} {check}: {detail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
