"""Checks an emitted convgen PyTorch package with PyTorch on the CPU: what
needs no GPU. Usage: cpu_check.py PACKAGE_DIR. Exits non-zero on failure."""
import copy
import importlib.util
import os
import pickle
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

pkg_dir = sys.argv[1]
spec = importlib.util.spec_from_file_location("convmod", os.path.join(pkg_dir, "__init__.py"),
                                              submodule_search_locations=[pkg_dir])
mod = importlib.util.module_from_spec(spec)
sys.modules["convmod"] = mod
spec.loader.exec_module(mod)

P = mod.META["problem"]
args = (P["c"], P["k"], (P["r"], P["s"]))
kw = dict(stride=tuple(P["stride"]), padding=tuple(P["padding"]), dilation=tuple(P["dilation"]),
          groups=P["groups"], bias=P["bias"])
nhwc = mod.META["layout"] == "nhwc"
Conv = getattr(mod, mod.META["class"])  # Conv2d, or Conv2dFused with an epilogue chain
fused = "epilogue" in mod.META
residual_chain = fused and mod._RESIDUAL
ss_chain = fused and mod._SCALE_SHIFT
out_shape = (P["n"], P["k"], P["p"], P["q"])
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def raises(exc, fn, *words):
    try:
        fn()
    except exc as e:
        missing = [w for w in words if w not in str(e)]
        return not missing or print("  message lacks", missing, ":", e)
    return False


# Construction and initialisation, draw for draw.
torch.manual_seed(5)
ref = nn.Conv2d(*args, **kw, dtype=mod.DTYPE)
torch.manual_seed(5)
conv = Conv(*args, **kw)
check(isinstance(conv, nn.Conv2d), f"{mod.META['class']} is an nn.Conv2d")
check(conv.weight.dtype == mod.DTYPE and conv.weight.shape == ref.weight.shape, "weight dtype and shape")
check(torch.equal(conv.weight, ref.weight), "weight initialised as nn.Conv2d's, draw for draw")
check((conv.bias is None) == (ref.bias is None) and (conv.bias is None or torch.equal(conv.bias, ref.bias)),
      "bias initialised as nn.Conv2d's")
check(conv.weight.is_contiguous(memory_format=mod.MEMORY_FORMAT),
      f"weight in the kernel's memory format ({mod.MEMORY_FORMAT})")
torch.manual_seed(9)
ref.reset_parameters()
torch.manual_seed(9)
conv.reset_parameters()
check(torch.equal(conv.weight, ref.weight) and conv.weight.is_contiguous(memory_format=mod.MEMORY_FORMAT),
      "reset_parameters draws as nn.Conv2d's and keeps the memory format")

# state_dict both ways.
sd = ref.state_dict()
fresh = Conv(*args, **kw)
missing = fresh.load_state_dict(sd, strict=not ss_chain).missing_keys
extra = {"scale", "shift"} if ss_chain else set()
check(all(torch.equal(fresh.state_dict()[k], v) for k, v in sd.items()) and set(fresh.state_dict()) == set(sd) | extra
      and set(missing) == extra, "nn.Conv2d's state_dict loads unchanged" + (" (strict=False: scale, shift)" if extra else ""))
back = nn.Conv2d(*args, **kw, dtype=mod.DTYPE)
back.load_state_dict({k: v for k, v in conv.state_dict().items() if k not in extra})
check(torch.equal(back.weight, conv.weight), "the module's state_dict loads into nn.Conv2d")

# Mismatched constructor arguments.
check(raises(ValueError, lambda: Conv(P["c"] + 1, *args[1:], **kw), "in_channels"), "in_channels mismatch raises")
check(raises(ValueError, lambda: Conv(*args, **{**kw, "stride": 7}), "stride"), "stride mismatch raises")
check(raises(ValueError, lambda: Conv(*args, **{**kw, "bias": not P["bias"]}), "bias"), "bias mismatch raises")
check(raises(ValueError, lambda: Conv(*args, **kw, padding_mode="reflect"), "padding_mode"),
      "padding_mode other than zeros raises")
check(raises(ValueError, lambda: Conv(*args, **kw, dtype=torch.float64), "dtype"), "dtype mismatch raises")
check(raises(ValueError, lambda: Conv(P["c"], P["k"] * 2, P["r"] + 2, **kw), "out_channels", "kernel_size"),
      "every mismatch is named")
if P["padding"] == [0, 0]:
    check(Conv(*args, **{**kw, "padding": "valid"}) is not None, "padding='valid' accepted")

# Inputs the kernel cannot take.
x = torch.randn(1, P["c"], P["h"], P["w"]).to(mod.DTYPE)
r = torch.randn(out_shape).to(mod.DTYPE).contiguous(memory_format=mod.MEMORY_FORMAT) if residual_chain else None


def call(m, x, r=r):
    return m(x, r) if residual_chain else m(x)


check(raises(ValueError, lambda: call(conv, x), "CUDA", "fallback=True"), "a CPU input raises ValueError")
check(raises(TypeError, lambda: call(conv, [1, 2])), "a non-tensor raises TypeError")
if fused:
    xs = torch.randn(P["n"], P["c"], P["h"], P["w"]).to(mod.DTYPE).contiguous(memory_format=mod.MEMORY_FORMAT)
    if residual_chain:
        check(raises(TypeError, lambda: conv(xs), "residual"), "a missing residual raises TypeError")
        check(raises(ValueError, lambda: conv(xs, None), "adds a residual", "forward(input, residual)"),
              "a residual None raises ValueError")
        check(raises(ValueError, lambda: conv(xs, r[:, :1]), "residual's shape"), "a residual of another shape raises")
        check(raises(ValueError, lambda: conv(xs, r.double()), "residual is torch.float64"),
              "a residual of another dtype raises")
        check(raises(TypeError, lambda: conv(xs, 3.0), "residual must be a torch.Tensor"), "a non-tensor residual raises")
    else:
        check(raises(ValueError, lambda: conv(xs, torch.zeros(out_shape, dtype=mod.DTYPE)), "adds no residual"),
              "a residual given to a chain without one raises ValueError")
    if ss_chain:
        check(conv.scale.dtype == torch.float32 and conv.scale.shape == (P["k"],) and torch.equal(conv.scale, torch.ones(P["k"]))
              and torch.equal(conv.shift, torch.zeros(P["k"])), "scale and shift: float32 (K,), 1 and 0")
        odd_ss = Conv(*args, **kw)
        odd_ss.scale = nn.Parameter(torch.ones(P["k"], dtype=torch.float64))
        check(raises(ValueError, lambda: call(odd_ss, x), "scale"), "a scale of another dtype raises")
        bn = nn.BatchNorm2d(P["k"], dtype=torch.float64)
        with torch.no_grad():
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-1, 1)
        bn.eval()
        folded = Conv(*args, **kw).fold_batch_norm(bn)
        v = torch.randn(2, P["k"], 3, 3, dtype=torch.float64)
        got_bn = v * folded.scale.double().view(1, -1, 1, 1) + folded.shift.double().view(1, -1, 1, 1)
        check(((got_bn - bn(v)).abs().max() < 1e-6).item(), "fold_batch_norm: scale*y + shift is bn(y) in eval mode")
        check(raises(ValueError, lambda: Conv(*args, **kw).fold_batch_norm(nn.BatchNorm2d(P["k"] + 1)), "running"),
              "fold_batch_norm refuses a BatchNorm2d of another width")
    check(mod.EPILOGUE in repr(conv), "repr names the epilogue")

# Parameters replaced after construction: the kernel reads a weight of the
# tuned shape and a bias exactly when tuned with one (a missing bias was a
# null pointer to the kernel, an added one ignored).
odd = Conv(*args, **kw)
saved_bias = odd.bias
if P["bias"]:
    odd.bias = None
else:
    odd.bias = nn.Parameter(torch.zeros(P["k"], dtype=mod.DTYPE))
check(raises(ValueError, lambda: call(odd, x), "bias"), "a bias added or removed after construction raises")
odd.bias = saved_bias
if P["bias"]:
    odd.bias = nn.Parameter(torch.zeros(P["k"] + 1, dtype=mod.DTYPE))
    check(raises(ValueError, lambda: call(odd, x), "bias's shape"), "a bias of another shape raises")
    odd.bias = saved_bias
odd.weight = nn.Parameter(torch.zeros(P["k"], P["c"] // P["groups"], P["r"] + 1, P["s"], dtype=mod.DTYPE))
check(raises(ValueError, lambda: call(odd, x), "weight's shape"), "a weight of another shape raises")
fb = Conv(*args, **kw, fallback=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        xf = x if not residual_chain else torch.randn(P["n"], P["c"], P["h"], P["w"]).to(mod.DTYPE)
        got = call(fb, xf)
        want = F.conv2d(xf, fb.weight, fb.bias, fb.stride, fb.padding, fb.dilation, fb.groups)
        if fused:
            with torch.no_grad():
                fb.scale.uniform_(0.5, 1.5) if ss_chain else None
                got = call(fb, xf)
            want = mod.chain(want.float(), *((fb.scale, fb.shift) if ss_chain else (None, None)),
                             r.float() if residual_chain else None).to(want.dtype)
        check(torch.equal(got, want), "fallback=True gives F.conv2d's output" + (" through chain()" if fused else ""))
    except RuntimeError as e:  # PyTorch's CPU convolution lacks some dtypes
        print("  (F.conv2d on the CPU:", str(e)[:80], ")")
check(any(issubclass(w.category, RuntimeWarning) and "F.conv2d" in str(w.message) for w in caught),
      "fallback=True warns")

# The backward's PyTorch path, in float64 against autograd (small problems;
# a chain's backward is chain_check.py's).
if not fused and P["n"] * P["c"] * P["h"] * P["w"] <= 1 << 20:
    g = torch.Generator().manual_seed(3)
    xd = torch.randn(P["n"], P["c"], P["h"], P["w"], generator=g, dtype=torch.float64, requires_grad=True)
    wd = torch.randn(conv.weight.shape, generator=g, dtype=torch.float64, requires_grad=True)
    bd = torch.randn(P["k"], generator=g, dtype=torch.float64, requires_grad=True) if P["bias"] else None
    y = F.conv2d(xd, wd, bd, tuple(P["stride"]), tuple(P["padding"]), tuple(P["dilation"]), P["groups"])
    check(tuple(y.shape) == (P["n"], P["k"], P["p"], P["q"]), "kernel.json's P and Q are PyTorch's")
    dy = torch.randn(y.shape, generator=g, dtype=torch.float64)
    y.backward(dy)
    b = mod._TorchBackward()
    close = lambda a, r: ((a - r).norm() / r.norm()).item() < 1e-12
    check(close(b.input(dy, wd.detach()), xd.grad), "backward: input gradient")
    check(close(b.weight(dy, xd.detach()), wd.grad), "backward: weight gradient")
    if bd is not None:
        check(close(b.bias(dy), bd.grad), "backward: bias gradient")

# Copies and pickles carry no loaded kernels.
conv._kernels[0] = object()
c2 = copy.deepcopy(conv)
check(c2._kernels == {} and torch.equal(c2.weight, conv.weight), "deepcopy works and drops the loaded kernels")
check(pickle.loads(pickle.dumps(conv))._kernels == {}, "pickle works")
check("convgen=" in repr(conv), "repr names convgen")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all CPU checks passed")
