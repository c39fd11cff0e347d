"""Checks the emitted package's CUDA driver calls against fakecuda.c (a
libcuda.so.1 stand-in that records its arguments), with PyTorch on the CPU
and torch.cuda's device queries patched. Usage: driver_check.py PACKAGE_DIR
(with the fake first on LD_LIBRARY_PATH). Exits non-zero on failure."""
import contextlib
import copy
import ctypes
import importlib.util
import os
import sys
import tempfile
import threading
import time
import types

import torch
import torch.nn.functional as F

pkg_dir = sys.argv[1]
spec = importlib.util.spec_from_file_location("convmod", os.path.join(pkg_dir, "__init__.py"),
                                              submodule_search_locations=[pkg_dir])
mod = importlib.util.module_from_spec(spec)
sys.modules["convmod"] = mod
spec.loader.exec_module(mod)

fake = ctypes.CDLL("libcuda.so.1")
for name, res in [("fake_loaded", ctypes.c_char_p), ("fake_function", ctypes.c_char_p),
                  ("fake_stream", ctypes.c_size_t),
                  ("fake_param", ctypes.c_uint64), ("fake_current", ctypes.c_size_t),
                  ("fake_log_function", ctypes.c_char_p), ("fake_log_stream", ctypes.c_size_t),
                  ("fake_log_param", ctypes.c_uint64), ("fake_order", ctypes.c_char_p),
                  ("fake_order_stream", ctypes.c_size_t)]:
    getattr(fake, name).restype = res
fake.fake_set_current.argtypes = [ctypes.c_size_t]

cc = [0]
torch.cuda.get_device_capability = lambda index=None: (cc[0] // 10, cc[0] % 10)
torch.cuda.get_device_name = lambda index=None: "Fake GPU"
torch.cuda.device = lambda index: contextlib.nullcontext()
torch.cuda.current_stream = lambda index=None: types.SimpleNamespace(cuda_stream=0x5000)

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def read(name):
    with open(os.path.join(pkg_dir, name), "rb") as f:
        return f.read()


op = mod.META["ops"]["fprop"]
cubin, ptx = op["cubin"], op["ptx"]
nparams = len(op["params"])  # out, in, filter, bias[, scale, shift][, residual]
fake.fake_set_nparams(nparams)
Conv = getattr(mod, mod.META["class"])
residual_chain = "residual" in op["params"]


def check_image(img, what, device_cc):
    cc[0] = device_cc
    fake.fake_set_current(0)
    k = mod._Kernel(op, 0)
    data = read(img["file"])
    check(fake.fake_loaded() == data[:63].split(b"\0")[0], f"{what}: the image file is what was loaded")
    check(fake.fake_load_options() == 2, f"{what}: loaded with the JIT error log options")
    check(fake.fake_function().decode() == img["kernel"], f"{what}: function {img['kernel']}")
    big = img["shared_bytes"] > 48 * 1024
    check((fake.fake_attribute() == 8 and fake.fake_attribute_value() == img["shared_bytes"]) == big
          or not big and fake.fake_attribute_value() != img["shared_bytes"],
          f"{what}: the dynamic shared memory opt-in {'set to ' + str(img['shared_bytes']) if big else 'not needed'}")
    check(fake.fake_current() != 0, f"{what}: a context is current after loading (the primary one, retained)")
    want = [0x10 * (i + 1) for i in range(nparams)]
    geometry = lambda stream: ([fake.fake_grid(i) for i in range(3)] == img["grid"]
                               and [fake.fake_block(i) for i in range(3)] == img["block"]
                               and fake.fake_shared() == img["shared_bytes"] and fake.fake_stream() == stream)
    n_ex = fake.fake_launches_ex()
    k.launch(0x5000, *want)
    check([fake.fake_param(i) for i in range(nparams)] == want,
          f"{what}: launch parameters {', '.join(op['params'])} in order")
    check(geometry(0x5000) and fake.fake_launches_ex() == n_ex + 1,
          f"{what}: grid {img['grid']}, block {img['block']}, {img['shared_bytes']} bytes, the given stream, "
          "through cuLaunchKernelEx")
    drv = mod._driver()
    ex, drv.raw_launch_ex = drv.raw_launch_ex, None  # a driver before CUDA 12.0
    try:
        old = mod._Kernel(op, 0)
        n, n_ex = fake.fake_launches(), fake.fake_launches_ex()
        old.launch(0x6000, *reversed(want))
        check(fake.fake_launches() == n + 1 and fake.fake_launches_ex() == n_ex and geometry(0x6000)
              and [fake.fake_param(i) for i in range(nparams)] == want[::-1],
              f"{what}: without cuLaunchKernelEx, cuLaunchKernel with the same geometry, stream and parameters")
    finally:
        drv.raw_launch_ex = ex
    stream = 0x7F12_3456_7890  # above 32 bits: passed as a pointer, not a C int
    k.launch(stream, *want)
    check(fake.fake_stream() == stream and [fake.fake_param(i) for i in range(nparams)] == want,
          f"{what}: a 64-bit stream handle reaches the driver whole")
    check(drv.raw_launch.argtypes is None and drv.raw_ctx_get.argtypes is None and drv.raw_launch_ex.argtypes is None
          and drv.cuLaunchKernel.argtypes is not None and drv.raw_launch is not drv.cuLaunchKernel,
          f"{what}: the per-call driver functions convert their arguments without argtypes")
    fake.fake_set_current(0x9999)
    try:
        k.launch(0x5000, *range(1, nparams + 1))
        check(False, f"{what}: a foreign current context is refused")
    except mod.KernelError as e:
        check("other than PyTorch's" in str(e), f"{what}: a foreign current context is refused")
    fake.fake_set_current(0)
    n = fake.fake_launches()
    k.launch(0x5000, *range(1, nparams + 1))
    check(fake.fake_launches() == n + 1 and fake.fake_current() != 0,
          f"{what}: on a thread without a current context, the kernel's is made current")


if cubin:
    check_image(cubin, "CUBIN", cubin["cc"])
if ptx:
    check_image(ptx, "PTX", max(ptx["cc"], cubin["cc"] if cubin else 0) + 10)
    cc[0] = ptx["cc"] - 10
    try:
        mod._Kernel(op, 0)
        check(False, "a GPU below the PTX's compute capability is refused")
    except mod.KernelError as e:
        check("compute capability" in str(e), "a GPU below the PTX's compute capability is refused")
else:
    cc[0] = cubin["cc"] + 10
    try:
        mod._Kernel(op, 0)
        check(False, "another GPU without PTX is refused")
    except mod.KernelError as e:
        check("no PTX" in str(e), "another GPU without PTX is refused")


# forward's fast path, with CPU tensors: the module's own checks refuse a
# CPU input (cpu_check.py checks them), so here _unfit is bypassed and the
# kernel is loaded for device index None.
def fast_path():
    P = mod.META["problem"]
    cc[0] = (cubin or ptx)["cc"]
    fake.fake_set_current(0)
    conv = Conv(P["c"], P["k"], (P["r"], P["s"]), stride=tuple(P["stride"]), padding=tuple(P["padding"]),
                      dilation=tuple(P["dilation"]), groups=P["groups"], bias=P["bias"])
    conv._kernels[None] = mod._Kernel(op, 0)
    conv._unfit = lambda input: None
    slow = [0]
    full = conv._forward

    def counted(input, *rest):
        slow[0] += 1
        return full(input, *rest)

    conv._forward = counted
    x = torch.randn(P["n"], P["c"], P["h"], P["w"]).to(mod.DTYPE).contiguous(memory_format=mod.MEMORY_FORMAT)
    b = conv.bias.data_ptr() if conv.bias is not None else 0
    extra = [conv.scale.data_ptr(), conv.shift.data_ptr()] if "scale" in op["params"] else []
    if residual_chain:
        r = torch.randn(mod._OUT_SHAPE).to(mod.DTYPE).contiguous(memory_format=mod.MEMORY_FORMAT)
        extra.append(r.data_ptr())
        plain_call = conv.__call__
        conv_call = lambda x, *rest: plain_call(x, *(rest or (r,)))
    else:
        conv_call = conv

    def launched(out, w, what):
        ok = [fake.fake_param(i) for i in range(nparams)] == [out.data_ptr(), x.data_ptr(), w, b] + extra
        ok &= fake.fake_stream() == 0x5000 and tuple(out.shape) == mod._OUT_SHAPE and out.dtype == mod.DTYPE
        ok &= out.is_contiguous(memory_format=mod.MEMORY_FORMAT)
        check(ok, f"forward {what}: launched with out, input, weight, bias, on the current stream; output "
                  f"{mod._OUT_SHAPE} {mod.MEMORY_FORMAT}")

    with torch.no_grad():
        launched(conv_call(x), conv.weight.data_ptr(), "(first call, full checks)")
        n = fake.fake_launches()
        for _ in range(3):
            out = conv_call(x)
        launched(out, conv.weight.data_ptr(), "(fast path)")
        check(slow[0] == 1 and fake.fake_launches() == n + 3, "later calls take the fast path, one launch each")
        if P["c"] > 1:
            other = torch.contiguous_format if mod.MEMORY_FORMAT is torch.channels_last else torch.channels_last
            conv.weight.data = conv.weight.data.contiguous(memory_format=other)
            out = conv_call(x)
            copy = conv._weight_copy[1]
            launched(out, copy.data_ptr(), "(weight in the other memory format)")
            check(slow[0] == 2 and torch.equal(copy, conv.weight), "a new weight tensor takes the full checks; its copy")
            conv_call(x)
            conv.weight.mul_(2)  # bumps the weight's version
            out = conv_call(x)
            check(slow[0] == 3 and torch.equal(conv._weight_copy[1], conv.weight),
                  "an in-place change of a copied weight takes the full checks and copies again")
        y = x.clone()
        conv_call(y)
        check(slow[0] == (3 if P["c"] > 1 else 1) and fake.fake_param(1) == y.data_ptr(),
              "another input of the same shape and layout: fast path, its address")
        wrong = x.contiguous() if mod.MEMORY_FORMAT is torch.channels_last else x.contiguous(memory_format=torch.channels_last)
        before = slow[0]
        conv_call(wrong if P["c"] > 1 else x[:, :, :, :])
        check(P["c"] == 1 or slow[0] == before + 1, "an input in another layout takes the full checks")
        # The weight's .data swapped for a view at the same address in the
        # kernel's layout (same version): the full checks, and the kernel
        # reads that view, not a copy of the tensor before.
        conv_call(x)
        w = conv.weight
        kernel_strides = torch.empty(tuple(w.shape)).contiguous(memory_format=mod.MEMORY_FORMAT).stride()
        swapped = w.data.as_strided(tuple(w.shape), kernel_strides)
        if swapped.stride() != w.stride():
            ptr, before = w.data_ptr(), slow[0]
            conv.weight.data = swapped
            conv_call(x)
            check(slow[0] == before + 1 and conv.weight.data_ptr() == ptr and fake.fake_param(2) == ptr,
                  "a weight swapped for a view at the same address in another layout takes the full checks")
    xg = x.clone().requires_grad_()
    before = slow[0]
    out = conv_call(xg)
    check(out.grad_fn is not None and ("FusedFunction" if "epilogue" in mod.META else "Conv2dFunction") in type(out.grad_fn).__name__ and slow[0] == before
          and fake.fake_param(1) == xg.data_ptr(), "with autograd: the fast path through _Conv2dFunction")
    thread_out = []
    t = threading.Thread(target=lambda: thread_out.append(conv_call(x.detach())))
    t.start()
    t.join()
    check(len(thread_out) == 1 and fake.fake_param(0) == thread_out[0].data_ptr(),
          "a launch from another thread (its own argument slots)")
    fake.fake_set_current(0x9999)
    try:
        conv_call(x)
        check(False, "fast path: a foreign current context is refused")
    except mod.KernelError as e:
        check("other than PyTorch's" in str(e), "fast path: a foreign current context is refused")
    fake.fake_set_current(0)
    n = fake.fake_launches()
    fake.fake_fail_launches(1)
    try:
        conv_call(x)
        check(False, "fast path: a failed launch raises KernelError")
    except mod.KernelError as e:
        check("launch" in str(e) and "CUDA_ERROR_FAKE (719)" in str(e) and fake.fake_launches() == n,
              "fast path: a failed launch raises KernelError with the driver's error, nothing launched")
    out = conv_call(x)
    check(fake.fake_launches() == n + 1 and fake.fake_param(0) == out.data_ptr(),
          "fast path: the next call launches")
    # host time of one no_grad call (fake driver, CPU tensors): for the record, not checked
    with torch.no_grad():
        for _ in range(200):
            conv_call(x)
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(1000):
                conv_call(x)
            best = min(best, (time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        for _ in range(1000):
            mod._output(x, x.device)
        alloc = (time.perf_counter() - t0) * 1e3
    print(f"info host time per no_grad forward (fake driver, CPU tensors): {best:.2f} us, "
          f"of which the output's CPU allocation about {alloc:.2f} us")


fast_path()


# backward through the gradient kernels, with CPU tensors (the kernels are
# loaded for device index None, as in fast_path): which kernels launch for
# each subset of requires_grad, their parameters in order, geometry and
# stream; the gradients' shapes, dtypes and memory formats; PyTorch's path
# with use_convgen_backward=False, the class switch, and where a kernel does
# not load.
def backward_checks():
    grad_ops = tuple(o for o in ("dgrad", "wgrad") if o in mod.META["ops"])
    if not grad_ops:
        check(not hasattr(mod, "BACKWARD_KERNELS") and mod.META["backward"] == "pytorch",
              "no gradient kernels: backward is PyTorch's")
        return
    check(mod.BACKWARD_KERNELS == grad_ops and mod.META["backward"] == "+".join(grad_ops),
          f"BACKWARD_KERNELS {mod.BACKWARD_KERNELS}, kernel.json's backward {mod.META['backward']!r}")
    P = mod.META["problem"]
    fake.fake_set_nparams(4)  # every gradient kernel takes four (fewer read from a forward launch is harmless)
    fused = "epilogue" in mod.META
    fmt = mod.MEMORY_FORMAT
    other = torch.contiguous_format if fmt is torch.channels_last else torch.channels_last

    def new_conv(**kw):
        cc[0] = (cubin or ptx)["cc"]
        fake.fake_set_current(0)
        conv = Conv(P["c"], P["k"], (P["r"], P["s"]), stride=tuple(P["stride"]), padding=tuple(P["padding"]),
                    dilation=tuple(P["dilation"]), groups=P["groups"], bias=P["bias"], **kw)
        conv._kernels[None] = mod._Kernel(op, 0)
        for o in grad_ops:
            conv._grad_kernels[(o, None)] = mod._Kernel(mod.META["ops"][o], 0)
        conv._unfit = lambda input: None
        if mod.DTYPE is not torch.float32:  # PyTorch's CPU convolution lacks half types: in float32
            conv._backward = _Float32Backward()
        if "scale" in op["params"]:
            with torch.no_grad():
                conv.scale.uniform_(0.5, 1.5)
                conv.shift.uniform_(-1, 1)
        return conv

    class _Float32Backward(mod._TorchBackward):
        def input(self, grad_out, weight):
            return super().input(grad_out.float(), weight.float()).to(mod.DTYPE)

        def weight(self, grad_out, input):
            return super().weight(grad_out.float(), input.float()).to(mod.DTYPE)

    x = torch.randn(P["n"], P["c"], P["h"], P["w"]).to(mod.DTYPE).contiguous(memory_format=fmt)
    r = torch.randn(mod._OUT_SHAPE).to(mod.DTYPE).contiguous(memory_format=fmt) if residual_chain else None

    def run(conv, need, dy_format=fmt):
        """forward and backward with requires_grad on need (input, weight,
        bias); the launches, the input's gradient and grad_output."""
        xg = x.clone().requires_grad_(need[0])
        conv.weight.requires_grad_(need[1])
        conv.weight.grad = None
        if conv.bias is not None:
            conv.bias.requires_grad_(need[2])
            conv.bias.grad = None
        out = conv(xg, r) if residual_chain else conv(xg)
        dy = torch.randn(mod._OUT_SHAPE).to(mod.DTYPE).contiguous(memory_format=dy_format)
        fake.fake_log_reset()
        out.backward(dy)
        launches = [fake.fake_log_function(i).decode() for i in range(fake.fake_log_count())]
        return launches, xg, dy

    def image(o):
        g = mod.META["ops"][o]
        return g["cubin"] if g["cubin"] and g["cubin"]["cc"] == cc[0] else g["ptx"]

    def launch_ok(i, o, want_params):
        img = image(o)
        params = [fake.fake_log_param(i, j) for j in range(4)]
        ok = ([fake.fake_log_grid(i, d) for d in range(3)] == img["grid"]
              and [fake.fake_log_block(i, d) for d in range(3)] == img["block"]
              and fake.fake_log_shared(i) == img["shared_bytes"] and fake.fake_log_stream(i) == 0x5000)
        for got, want in zip(params, want_params):
            ok &= (want == "nonzero" and got != 0 and got % 16 == 0) or got == want
        if not ok:
            print(f"  {o}: params {[hex(p) for p in params]}, want {want_params}")
        return ok

    def formats_ok(conv, xg):
        ok = True
        if xg.grad is not None:
            ok &= (tuple(xg.grad.shape) == mod._IN_SHAPE and xg.grad.dtype == mod.DTYPE
                   and xg.grad.is_contiguous(memory_format=fmt))
        w = conv.weight.grad
        if w is not None:
            ok &= tuple(w.shape) == mod._W_SHAPE and w.dtype == mod.DTYPE and w.is_contiguous(memory_format=fmt)
        b = conv.bias.grad if conv.bias is not None else None
        if b is not None:
            ok &= tuple(b.shape) == mod._B_SHAPE and b.dtype == mod.DTYPE
        return ok

    def grads_ok(c, xg, dy):
        """c's gradients from run against float64 autograd of F.conv2d (and
        the chain)."""
        xr = x.double().requires_grad_()
        wr = c.weight.detach().double().requires_grad_()
        br = c.bias.detach().double().requires_grad_() if c.bias is not None else None
        y = F.conv2d(xr, wr, br, c.stride, c.padding, c.dilation, c.groups)
        if fused:
            ss = (c.scale.detach().double(), c.shift.detach().double()) if "scale" in op["params"] else (None, None)
            y = mod.chain(y, *ss, r.double() if residual_chain else None)
        y.backward(dy.double())
        err = lambda a, b: ((a.double() - b).norm() / b.norm()).item()
        errs = [err(xg.grad, xr.grad), err(c.weight.grad, wr.grad)] + ([err(c.bias.grad, br.grad)] if br is not None else [])
        return max(errs) < 1e-5 or print("  rel. errors", errs)

    conv = new_conv()
    subsets = [(True, True, P["bias"]), (True, False, False), (False, True, False)]
    if P["bias"]:
        subsets += [(False, False, True), (False, True, True)]
    for need in subsets:
        launches, xg, dy = run(conv, need)
        want = [o for o, n in (("dgrad", need[0]), ("wgrad", need[1])) if n and o in grad_ops]
        names = [mod.META["ops"][o]["cubin"]["kernel"] for o in want]
        what = f"backward with requires_grad on {[n for n, w in zip(('input', 'weight', 'bias'), need) if w]}"
        check(launches == names, f"{what}: launches {want} ({launches})")
        w_ptr = conv.weight.data_ptr()
        dy_ptr = dy.data_ptr() if not fused else "nonzero"  # a fused module's is the chain's gradient
        if "dgrad" in want:
            check(launch_ok(want.index("dgrad"), "dgrad", [xg.grad.data_ptr(), dy_ptr, w_ptr, 0]),
                  f"{what}: dgrad's parameters dX (the input's gradient), dY (grad_output), W, 0; geometry; stream")
        if "wgrad" in want:
            i = want.index("wgrad")
            check(launch_ok(i, "wgrad", [conv.weight.grad.data_ptr(), xg.data_ptr(), dy_ptr,
                                         "nonzero" if P["bias"] else 0]),
                  f"{what}: wgrad's parameters dW (the weight's gradient), X, dY, dBias "
                  f"({'a float32 buffer' if P['bias'] else '0 without bias'}); geometry; stream")
            if "dgrad" in want:
                check(fake.fake_log_param(0, 1) == fake.fake_log_param(i, 2), f"{what}: both read the same dY")
        check(formats_ok(conv, xg), f"{what}: gradients of the right shapes and dtypes, in {fmt}")
        wl = conv.last_backward
        check(wl == {"input": ("dgrad" if "dgrad" in grad_ops else "pytorch") if need[0] else None,
                     "weight": ("wgrad" if "wgrad" in grad_ops else "pytorch") if need[1] else None,
                     "bias": ("wgrad" if "wgrad" in grad_ops and need[1] else "pytorch") if need[2] else None},
              f"{what}: last_backward {wl}")
        if need == (False, False, True) and not fused:
            check(torch.equal(conv.bias.grad, dy.sum((0, 2, 3))), f"{what}: the bias's gradient alone is dY summed")
    # grad_output in the other memory format (or not aligned) is copied
    # into the kernel's first.
    if P["c"] > 1 and not fused:
        launches, xg, dy = run(conv, (True, True, False), dy_format=other)
        ptrs = [fake.fake_log_param(i, 1 if launches[i] == image("dgrad")["kernel"] else 2)
                for i in range(len(launches))] if "dgrad" in grad_ops else [fake.fake_log_param(0, 2)]
        check(launches and all(p != dy.data_ptr() and p % 16 == 0 for p in ptrs) and formats_ok(conv, xg),
              "grad_output in the other memory format: the kernels read a copy in the kernel's")
    # A weight in the other memory format: dgrad reads forward's copy of
    # it, and backward leaves that copy to forward's fast path.
    if P["c"] > 1 and "dgrad" in grad_ops:
        c = new_conv()
        c.weight.data = c.weight.data.contiguous(memory_format=other)
        launches, xg, dy = run(c, (True, False, False))
        copy_ = c._weight_copy
        check(launches[:1] == [image("dgrad")["kernel"]] and copy_ is not None
              and fake.fake_log_param(0, 2) == copy_[1].data_ptr() != c.weight.data_ptr()
              and torch.equal(copy_[1], c.weight) and c._fast[7] == copy_[1].data_ptr(),
              "a weight in the other memory format: dgrad reads forward's copy in the kernel's, which stays")
    # PyTorch's path: the constructor's keyword and the class switch.
    for what, c in (("use_convgen_backward=False", new_conv(use_convgen_backward=False)), ("class switch", None)):
        if c is None:
            Conv.use_convgen_backward = False
            c = new_conv()
        try:
            launches, xg, dy = run(c, (True, True, P["bias"]))
        except RuntimeError as e:  # PyTorch's CPU convolution lacks some dtypes
            print(f"  ({what}: PyTorch's backward on the CPU: {str(e)[:80]})")
            launches = []
        finally:
            if what == "class switch":
                Conv.use_convgen_backward = True
        check(launches == [] and c.last_backward in (None, {"input": "pytorch", "weight": "pytorch",
                                                            "bias": "pytorch" if P["bias"] else None}),
              f"{what}: backward launches nothing, PyTorch computes every gradient")
        if launches == [] and mod.DTYPE is torch.float32 and c.last_backward is not None:
            check(grads_ok(c, xg, dy), f"{what}: the gradients are float64 autograd's (rel. error < 1e-5)")
    check(Conv.use_convgen_backward is True and new_conv().use_convgen_backward is True,
          "use_convgen_backward: True by default")
    # A GPU on which no image of the gradient kernels runs: PyTorch's
    # gradients, with one warning per kernel.
    c = new_conv()
    c._grad_kernels = {}
    cc[0] = 10
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            launches, xg, dy = run(c, (True, True, False))
            launches += run(c, (True, True, False))[0]
        except RuntimeError as e:
            print(f"  (PyTorch's backward on the CPU: {str(e)[:80]})")
            launches = []
    warned = [w for w in caught if issubclass(w.category, RuntimeWarning) and "PyTorch computes" in str(w.message)]
    check(launches == [] and len(warned) == len(grad_ops) and all(c._grad_kernels[(o, None)] is None for o in grad_ops),
          f"no gradient image runs on the GPU: PyTorch's backward, one warning per kernel ({len(warned)})")
    # backward_info loads the kernels on the current device.
    cc[0] = (cubin or ptx)["cc"]
    current, torch.cuda.current_device = torch.cuda.current_device, lambda: 0
    try:
        info = new_conv().backward_info()
    finally:
        torch.cuda.current_device = current
    want = {"input": "dgrad" if "dgrad" in grad_ops else None, "weight": "wgrad" if "wgrad" in grad_ops else None}
    ok = all((info[k] == "pytorch") if o is None else (info[k]["op"] == o and info[k]["kernel"] == image(o)["kernel"])
             for k, o in want.items())
    check(ok and (info["bias"] is info["weight"] if P["bias"] else info["bias"] is None), f"backward_info: {info}")
    check(new_conv(use_convgen_backward=False).backward_info("cuda:0") == {
        "input": "pytorch", "weight": "pytorch", "bias": "pytorch" if P["bias"] else None},
        "backward_info with use_convgen_backward=False: PyTorch's")
    c = new_conv()
    check(copy.deepcopy(c)._grad_kernels == {}, "deepcopy drops the loaded gradient kernels")
    fake.fake_set_nparams(nparams)


backward_checks()

# A kernel whose module keeps a workspace (a global KERNEL_count): its
# launches are ordered through an event, whatever the streams; a kernel
# without one launches with no event calls.
cc[0] = cubin["cc"] if cubin else ptx["cc"]
fake.fake_set_current(0)
fake.fake_set_nparams(nparams)
fake.fake_set_workspace(0)
plain = mod._Kernel(op, 0)
plain.launch(0x5000, *range(1, nparams + 1))
check(not plain.serial and fake.fake_order() == b"L", "a kernel without a workspace: launches with no event calls")
fake.fake_set_workspace(1)
serial = mod._Kernel(op, 0)
for st in (0x5000, 0x6000, 0x6000):
    serial.launch(st, *range(1, nparams + 1))
streams = [fake.fake_order_stream(i) for i in range(9)]
check(serial.serial and fake.fake_order() == b"LRWLRWLR" and streams[:8] == [0x5000] * 2 + [0x6000] * 6,
      f"a kernel with a workspace: each launch waits for the last one's event (order {fake.fake_order()})")
fake.fake_set_workspace(0)

# A kernel with a prologue (KERNEL_prologue in its module): each launch is
# the prologue (its own geometry, the same parameters) then the kernel,
# ordered like a workspace's, on the fast path and on the careful one.
fake.fake_set_prologue(1)
fake.fake_log_reset()
pro = mod._Kernel(op, 0)
kname = (cubin or ptx)["kernel"]
pro.launch(0x5000, *range(1, nparams + 1))
fake.fake_set_current(0x7777)  # a foreign context: the careful path
try:
    pro.launch(0x6000, *range(1, nparams + 1))
except mod.KernelError:
    pass
fake.fake_set_current(0)
pro.launch(0x6000, *range(1, nparams + 1))
n = fake.fake_log_count()
names = [fake.fake_log_function(i).decode() for i in range(n)]
first = [i for i in range(n) if names[i].endswith("_prologue")]
geometry_ok = all(fake.fake_log_grid(i, 0) == mod._PROLOGUE_BLOCKS and fake.fake_log_block(i, 0) == mod._PROLOGUE_THREADS
                  and fake.fake_log_shared(i) == 0 for i in first)
params_ok = all(fake.fake_log_param(i, j) == fake.fake_log_param(i + 1, j) == j + 1 for i in first for j in range(nparams))
check(pro.serial and n >= 4 and n % 2 == 0 and names[0::2] == [kname + "_prologue"] * (n // 2) and names[1::2] == [kname] * (n // 2)
      and geometry_ok and params_ok and fake.fake_order().startswith(b"LLR"),
      f"a kernel with a prologue: prologue then kernel, same parameters, serial ({names}, order {fake.fake_order()})")
fake.fake_set_prologue(0)
fake.fake_log_reset()
plain = mod._Kernel(op, 0)
plain.launch(0x5000, *range(1, nparams + 1))
check(fake.fake_log_count() == 1 and not plain.serial, "without a prologue: one launch")

with tempfile.NamedTemporaryFile(suffix=".ptx", delete=False) as f:
    f.write(b"FAIL this PTX")
bad = dict(op, cubin=None, ptx=dict(ptx or cubin, file=f.name, cc=10))
cc[0] = 90
try:
    mod._Kernel(bad, 0)
    check(False, "a failed load raises KernelError")
except mod.KernelError as e:
    check("CUDA_ERROR_FAKE" in str(e) and "ptxas fatal: fake failure" in str(e),
          "a failed load raises KernelError with the driver's error and the JIT log")
os.unlink(f.name)

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all driver checks passed")
