"""Checks the emitted package's CUDA driver calls against fakecuda.c (a
libcuda.so.1 stand-in that records its arguments), with PyTorch on the CPU
and torch.cuda's device queries patched. Usage: driver_check.py PACKAGE_DIR
(with the fake first on LD_LIBRARY_PATH). Exits non-zero on failure."""
import contextlib
import ctypes
import importlib.util
import os
import sys
import tempfile
import threading
import time
import types

import torch

pkg_dir = sys.argv[1]
spec = importlib.util.spec_from_file_location("convmod", os.path.join(pkg_dir, "__init__.py"),
                                              submodule_search_locations=[pkg_dir])
mod = importlib.util.module_from_spec(spec)
sys.modules["convmod"] = mod
spec.loader.exec_module(mod)

fake = ctypes.CDLL("libcuda.so.1")
for name, res in [("fake_loaded", ctypes.c_char_p), ("fake_function", ctypes.c_char_p),
                  ("fake_stream", ctypes.c_size_t),
                  ("fake_param", ctypes.c_uint64), ("fake_current", ctypes.c_size_t)]:
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
