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
    k.launch(0x5000, 0x10, 0x20, 0x30, 0x40)
    check([fake.fake_param(i) for i in range(4)] == [0x10, 0x20, 0x30, 0x40],
          f"{what}: launch parameters out, in, filter, bias in order")
    check([fake.fake_grid(i) for i in range(3)] == img["grid"] and [fake.fake_block(i) for i in range(3)] == img["block"]
          and fake.fake_shared() == img["shared_bytes"] and fake.fake_stream() == 0x5000,
          f"{what}: grid {img['grid']}, block {img['block']}, {img['shared_bytes']} bytes, the given stream")
    fake.fake_set_current(0x9999)
    try:
        k.launch(0x5000, 1, 2, 3, 4)
        check(False, f"{what}: a foreign current context is refused")
    except mod.KernelError as e:
        check("other than PyTorch's" in str(e), f"{what}: a foreign current context is refused")
    fake.fake_set_current(0)
    n = fake.fake_launches()
    k.launch(0x5000, 1, 2, 3, 4)
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
