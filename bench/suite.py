#!/usr/bin/env python3
"""The suite benchmark: convgen against PyTorch (cuDNN) on every shape of a
suite file, in every mode asked for, on the GPU machine. bench/suite.sh is
its front end (it finds the prebuilt .dev/convgen and the driver version).

For each shape line (`name | shape`; the batch size is --n unless the line
has its own N=) and each mode (precision:layout):
  1. tune with `convgen -shape ... -precision P -layout L -o TMP/pkg -cache
     CACHE -q` at default flags (-time when --time is given): convgen reuses
     a current record of this GPU from the cache and tunes otherwise; the
     wall time is recorded, and whether the record was reused;
  2. load the winner from the cache record (its CUBIN, gunzipped) with CuPy
     and launch it with the record's grid, block and dynamic shared memory
     on random tensors in the layout (input NCHW or NHWC, filter KCRS or
     KRSC, output NKPQ or NPQK; float32, or 2-byte fp16/bf16 for those
     precisions), the output poisoned with NaN first;
  3. check it, and PyTorch's own result, against PyTorch's float64 conv2d on
     the same (rounded) inputs: ||out - ref|| / ||ref|| within the
     precision's bound;
  4. time both in the same process: CUDA events around the kernel alone,
     warm-up, L2 flushed (a 256 MB memset) before every run, median of
     --runs (at least 30); cudnn.benchmark on, channels_last for NHWC, TF32
     allowed only for tf32 (fp32 and 3xtf32 against PyTorch's strict FP32);
  5. append a JSON line to the results' .jsonl and rewrite the .md table.
A shape that fails to tune, load or verify is a row saying so, not a crash.

--op dgrad or --op wgrad (env OP; default fprop, unchanged) benchmarks a
gradient of every shape instead (problem.Op, docs/families.md#ops):
  1. convgen gets `-op OP` (the shape as the line gives it, bias included:
     wgrad's kernel writes dBias with a bias, dgrad has none), its records
     go to bench/grad-cache.json unless --cache says otherwise, and the
     record is found by its op too (the key's "op", absent for fprop);
  2. fresh random inputs per op (dgrad: dY and W; wgrad: X and dY), rounded
     to fp16/bf16 for those precisions, in the layout (NHWC / KRSC arrays
     for nhwc); convgen's outputs (dX; dW and, with a bias, the FP32 dBias)
     poisoned with NaN; the kernel launched with the record's geometry and
     the op's parameters (dX, dY, W, null) or (dW, X, dY, dBias or null);
  3. PyTorch's side is torch.ops.aten.convolution_backward (what autograd
     calls for conv2d: cuDNN's dgrad or wgrad kernels, and dY's reduction
     for dBias), output_mask [True, False, False] for dgrad and [False,
     True, bias] for wgrad, channels_last tensors for NHWC, the same TF32
     flags and timing as the forward's;
  4. the error is ||out - ref|| / ||ref|| against float64 gradients
     (convolution_backward on float64 copies; dW and dBias summed over
     batch slices), for wgrad the larger of dW's and dBias's (both in the
     .jsonl), against the precision's bound;
  5. FLOPs are the forward's; the roofline's bytes are the op's tensors
     (dgrad: dY, W read and dX written; wgrad: X, dY read and dW, plus K
     FP32 dBias values, written); the files are
     results-suite-SUITE-nN-OP-MODES-DATE-GPU-COMMIT.md/.jsonl and the tables name
     the op.

usage: bench/suite.py --suite FILE --n N --modes fp16:nhwc,tf32:nchw [--out DIR]
                      [--op fprop|dgrad|wgrad] [--only a,b] [--time 60s] [--runs 30] [--dry-run]
       bench/suite.py --self-check      (no GPU: record decoding, parsing, table, the ops' paths)
       bench/suite.py --table ROWS.jsonl -o RESULTS.md   (rebuild a table)
"""
import argparse, base64, datetime, gzip, json, math, os, re, shlex, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from table import ELEMENT_BYTES, ERROR_BOUNDS, cudnn_version  # noqa: E402  (stdlib only)

PRECISIONS = ("fp32", "tf32", "3xtf32", "fp16", "bf16")
LAYOUTS = ("nchw", "nhwc")
# Dense peak of each precision as a multiple of the FP32 FFMA peak (SMs x 256
# FLOP/clk x clock), as bench/table.py: sm_90's datasheet dense tensor rates;
# 3xTF32 does three TF32 products per FP32-accurate one.
PEAK_FACTOR = {"fp32": 1.0, "tf32": 8.0, "3xtf32": 8.0 / 3, "fp16": 16.0, "bf16": 16.0}
MIN_RUNS = 30
FLUSH_BYTES = 256 << 20
ELF_MAGIC = b"\x7fELF"
# A kernel's prologue (kernels/launch: PrologueSuffix, PrologueBlocks,
# PrologueThreads): KERNEL_prologue, launched just before the kernel on
# the same stream with the same parameters, in this geometry.
PROLOGUE_SUFFIX, PROLOGUE_BLOCKS, PROLOGUE_THREADS = "_prologue", 1024, 256
# NO_PROLOGUE=1 launches every kernel alone: a kernel with a prologue must
# then still be right (its blocks make the copies themselves).
NO_PROLOGUE = os.environ.get("NO_PROLOGUE", "") not in ("", "0")
INDEX_LIMIT = 2**31 - 1  # convgen's kernels index with 32-bit integers
# The ops (problem.Op, convgen -op) and the kernel's four pointer parameters
# of each, always (out, in, filter, bias), as problem/op.go's table: None is
# a null pointer (dgrad's unused bias; wgrad's dBias for a shape without
# bias).
OPS = ("fprop", "dgrad", "wgrad")
KERNEL_PARAMS = {"fprop": ("y", "x", "w", "bias"), "dgrad": ("dx", "dy", "w", None), "wgrad": ("dw", "x", "dy", "dbias")}
OP_TITLES = {"fprop": "the forward convolution", "dgrad": "the input gradient dX", "wgrad": "the filter gradient dW and dBias"}
SHAPE_KEYS = ("n", "c", "h", "w", "k", "r", "s", "stride", "stride_h", "stride_w", "pad", "pad_h", "pad_w",
              "dilation", "dilation_h", "dilation_w", "groups", "bias")


class UsageError(Exception):
    """A bad command line or suite file: exit status 2."""


class ShapeError(ValueError):
    """A shape string that convgen's grammar does not accept."""


def parse_shape(text):
    """Parses convgen's -shape grammar into a dict of ints (and bias), with
    P and Q; raises ShapeError on what convgen would refuse as malformed."""
    kv = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise ShapeError(f"{part!r} is not KEY=VALUE")
        k, v = (t.strip() for t in part.split("=", 1))
        k = k.lower()
        if k not in SHAPE_KEYS:
            raise ShapeError(f"unknown key {k!r}")
        if k in kv:
            raise ShapeError(f"key {k!r} given twice")
        kv[k] = v
    s = {}
    for k in ("n", "c", "h", "w", "k", "r", "s"):
        if k not in kv:
            raise ShapeError(f"missing {k.upper()}")
        s[k] = _int(kv, k, 1)
    for key, low in (("stride", 1), ("pad", 0), ("dilation", 1)):
        if key in kv and (key + "_h" in kv or key + "_w" in kv):
            raise ShapeError(f"{key} together with {key}_h or {key}_w")
        both = _int(kv, key, low) if key in kv else (0 if key == "pad" else 1)
        s[key + "_h"] = _int(kv, key + "_h", low) if key + "_h" in kv else both
        s[key + "_w"] = _int(kv, key + "_w", low) if key + "_w" in kv else both
    s["groups"] = _int(kv, "groups", 1) if "groups" in kv else 1
    b = kv.get("bias", "true").lower()
    if b not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
        raise ShapeError(f"bias {b!r} is not a boolean")
    s["bias"] = b in ("true", "1", "yes", "on")
    if s["c"] % s["groups"] or s["k"] % s["groups"]:
        raise ShapeError("C and K must be divisible by groups")
    for ax, size, r in (("h", s["h"], s["r"]), ("w", s["w"], s["s"])):
        if size + 2 * s["pad_" + ax] < s["dilation_" + ax] * (r - 1) + 1:
            raise ShapeError(f"output of less than 1 along {ax.upper()}")
    s["p"] = (s["h"] + 2 * s["pad_h"] - s["dilation_h"] * (s["r"] - 1) - 1) // s["stride_h"] + 1
    s["q"] = (s["w"] + 2 * s["pad_w"] - s["dilation_w"] * (s["s"] - 1) - 1) // s["stride_w"] + 1
    return s


def _int(kv, k, low):
    try:
        v = int(kv[k])
    except ValueError:
        raise ShapeError(f"{k}={kv[k]!r} is not an integer") from None
    if v < low:
        raise ShapeError(f"{k}={v} is below {low}")
    return v


def canonical(s):
    """convgen's canonical shape string (problem.Shape.String), the cache key."""
    out = "N={n},C={c},H={h},W={w},K={k},R={r},S={s}".format(**s)
    for key in ("stride", "pad", "dilation"):
        h, w = s[key + "_h"], s[key + "_w"]
        out += f",{key}={h}" if h == w else f",{key}_h={h},{key}_w={w}"
    return out + f",groups={s['groups']},bias={'true' if s['bias'] else 'false'}"


def read_suite(path, n):
    """The suite's shapes as (name, full shape string, parsed shape or
    ShapeError): N=n is prefixed unless the line has its own N (n None:
    every line must have its own)."""
    shapes = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if line.count("|") != 1:
                raise UsageError(f"{path}:{lineno}: want 'name | shape', got {line!r}")
            name, shape = (t.strip() for t in line.split("|"))
            has_n = any(p.split("=", 1)[0].strip().lower() == "n" for p in shape.split(",") if "=" in p)
            if not has_n:
                shape = f"N={n}," + shape if n is not None else shape
            try:
                parsed = parse_shape(shape)
            except ShapeError as e:
                parsed = ShapeError(f"{path}:{lineno}: {e}")
            shapes.append((name, shape, parsed))
    return shapes


def parse_modes(text):
    modes = []
    for m in text.split(","):
        m = m.strip().lower()
        if not m:
            continue
        prec, _, layout = m.partition(":")
        layout = layout or "nchw"
        if prec not in PRECISIONS or layout not in LAYOUTS:
            raise UsageError(f"mode {m!r}: want precision:layout with precision in {'/'.join(PRECISIONS)} "
                             f"and layout in {'/'.join(LAYOUTS)}")
        modes.append((prec, layout))
    if not modes:
        raise UsageError("no modes")
    return modes


def work(s, prec, op="fprop"):
    """FLOPs and bytes (every tensor read or written once) of shape s. The
    gradients count the forward's FLOPs; their bytes are the op's own
    tensors: dgrad reads dY and W and writes dX; wgrad reads X and dY and
    writes dW and, with a bias, dBias (K floats, FP32 in every precision)."""
    cg = s["c"] // s["groups"]
    flops = 2 * s["n"] * s["k"] * s["p"] * s["q"] * cg * s["r"] * s["s"]
    if op != "fprop":
        x, w, y = tensor_elems(s)
        if op == "dgrad":
            return flops, (y + w + x) * ELEMENT_BYTES[prec]
        return flops, (x + y + w) * ELEMENT_BYTES[prec] + (4 * s["k"] if s["bias"] else 0)
    elems = s["n"] * s["c"] * s["h"] * s["w"] + s["k"] * cg * s["r"] * s["s"] + (s["k"] if s["bias"] else 0) \
        + s["n"] * s["k"] * s["p"] * s["q"]
    return flops, elems * ELEMENT_BYTES[prec]


def tensor_elems(s):
    """Elements of the input, filter and output of shape s."""
    return (s["n"] * s["c"] * s["h"] * s["w"], s["k"] * (s["c"] // s["groups"]) * s["r"] * s["s"],
            s["n"] * s["k"] * s["p"] * s["q"])


def grad_arrays(s, op, layout):
    """The dims of the arrays a gradient kernel's pointers address, by role
    (KERNEL_PARAMS' names), as stored: activations NCHW or NHWC, filters KCRS
    or KRSC (NHWC's), dBias K (FP32) only with a bias; and the permutations
    that store a logical NCHW / KCRS tensor that way and view a stored array
    in the logical order again (None, None for NCHW: stored as it is)."""
    N, C, K, G, H, W, P, Q, R, S = (s[k] for k in ("n", "c", "k", "groups", "h", "w", "p", "q", "r", "s"))
    nhwc = layout == "nhwc"
    act = lambda ch, a, b: (N, a, b, ch) if nhwc else (N, ch, a, b)
    filt = (K, R, S, C // G) if nhwc else (K, C // G, R, S)
    arrays = dict(x=act(C, H, W), dx=act(C, H, W), dy=act(K, P, Q), w=filt, dw=filt)
    if op == "wgrad" and s["bias"]:
        arrays["dbias"] = (K,)
    names = [n for n in KERNEL_PARAMS[op] if n]
    return {n: arrays[n] for n in names if n in arrays}, (((0, 2, 3, 1), (0, 3, 1, 2)) if nhwc else (None, None))


def kernel_args(op, tensors):
    """The kernel's four arguments for op from tensors by role (a missing
    role, or KERNEL_PARAMS' None, is a null pointer)."""
    return tuple(tensors.get(n) if n else None for n in KERNEL_PARAMS[op])


def worse_error(*errors):
    """The larger of the errors (dW's and dBias's), None (infinite) when one is."""
    return None if any(e is None for e in errors) else max(errors)


def floor_ms(s, prec, facts, op="fprop"):
    """The roofline's time: max(FLOPs / dense peak of the mode, bytes / copy bandwidth)."""
    flops, nbytes = work(s, prec, op)
    peak = facts["sms"] * 256 * facts["clock_mhz"] * 1e6 * PEAK_FACTOR[prec]
    return max(flops / peak, nbytes / facts["bandwidth"]) * 1e3


def convgen_command(convgen, shape, prec, layout, pkgdir, cache, tune_time, op="fprop"):
    cmd = [convgen, "-shape", shape, "-precision", prec, "-layout", layout] + (["-op", op] if op != "fprop" else []) \
        + ["-o", pkgdir, "-pkg", "suitepkg", "-cache", cache, "-q"]
    if tune_time:
        cmd += ["-time", tune_time]
    return cmd


# ---------------------------------------------------------------- the cache


def load_cache(path):
    try:
        with open(path) as f:
            return json.load(f).get("records") or []
    except FileNotFoundError:
        return []


def decode_gzip_b64(text):
    """A record's cubin_gzip / ptx_gzip (base64 of a gzip stream) as bytes."""
    return gzip.decompress(base64.b64decode(text))


def record_id(rec):
    """What tells one tuning of a problem from another (not the checksum:
    convgen adds checksums to records written before them)."""
    return (rec.get("kernel_sha256"), (rec.get("summary") or {}).get("tuned_at"), (rec.get("winner") or {}).get("median_ms"))


def find_record(records, shape, prec, layout, device, kernel_sha256=None, op="fprop"):
    """The record of this problem and op tuned on device (and with this
    winner kernel hash when given), or None. A forward record has no "op"
    in its key (tunecache.Key.Op); records of other ops never match."""
    for r in records:
        k = r.get("key", {})
        if (k.get("shape"), k.get("precision"), k.get("layout"), k.get("device")) == (shape, prec, layout, device) \
                and (k.get("op") or "fprop") == op \
                and (kernel_sha256 is None or r.get("kernel_sha256") == kernel_sha256):
            return r
    return None


# ------------------------------------------------------------ the GPU side


def cuda_times(torch, flush, runs, fn, warmup=5):
    """fn()'s times in ms, sorted: CUDA events around each of runs calls after
    warmup ones, the L2 flushed (flush, a large buffer, filled) before each."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for i in range(runs):
        flush.fill_(i & 0xFF)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)


class GPU:
    """PyTorch and CuPy, imported only for a real run."""

    def __init__(self, runs, seed):
        import torch, torch.nn.functional as F
        import cupy as cp
        self.torch, self.F, self.cp = torch, F, cp
        self.runs, self.seed = max(runs, MIN_RUNS), seed
        self.flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        torch.backends.cudnn.benchmark = True

    def time_it(self, fn, warmup=5):
        times = cuda_times(self.torch, self.flush, self.runs, fn, warmup)
        q = lambda f: times[min(len(times) - 1, int(round(f * (len(times) - 1))))]
        return statistics.median(times), q(0.1), q(0.9)

    def measure(self, s, prec, layout, rec, scratch, index, op="fprop"):
        """Checks and times the record's kernel and PyTorch's conv2d (or its
        gradient) on shape s; returns the row's measured fields. Raises on a
        load failure."""
        try:
            if op == "fprop":
                return self._measure(s, prec, layout, rec, scratch, index)
            return self._measure_grad(s, prec, layout, rec, scratch, index, op)
        finally:  # the tensors died with _measure's frame (on success)
            self.torch.cuda.empty_cache()

    def _load(self, rec, scratch, index):
        """The record's kernel (its CUBIN loaded with CuPy), dynamic shared
        bytes, grid and block."""
        cubin = decode_gzip_b64(rec["cubin_gzip"])
        if cubin[:4] != ELF_MAGIC:
            raise RuntimeError("the record's CUBIN is not an ELF image")
        path = os.path.join(scratch, f"kernel-{index}.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        mod = self.cp.RawModule(path=path)
        fn = mod.get_function(rec["kernel"])
        shared = int(rec["shared_bytes"])
        if shared > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = shared
        if NO_PROLOGUE:  # the kernel alone, as a launcher that knows no prologue would
            return fn, shared, tuple(rec["grid"]), tuple(rec["block"])
        try:  # the kernel's prologue, where its module has one (kernels/launch's convention)
            pre = mod.get_function(rec["kernel"] + PROLOGUE_SUFFIX)
        except self.cp.cuda.driver.CUDADriverError:
            return fn, shared, tuple(rec["grid"]), tuple(rec["block"])

        def launch(grid, block, args, shared_mem, stream):
            pre((PROLOGUE_BLOCKS,), (PROLOGUE_THREADS,), args, stream=stream)
            fn(grid, block, args, shared_mem=shared_mem, stream=stream)

        return launch, shared, tuple(rec["grid"]), tuple(rec["block"])

    def _measure(self, s, prec, layout, rec, scratch, index):
        torch, F, cp = self.torch, self.F, self.cp
        row = {}
        fn, shared, grid, block = self._load(rec, scratch, index)

        dt = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prec, torch.float32)
        N, C, K, G = s["n"], s["c"], s["k"], s["groups"]
        gen = torch.Generator(device="cuda").manual_seed(self.seed + index)
        x = torch.randn(N, C, s["h"], s["w"], device="cuda", generator=gen).to(dt)
        w = (torch.randn(K, C // G, s["r"], s["s"], device="cuda", generator=gen) / math.sqrt(C // G * s["r"] * s["s"])).to(dt)
        b = torch.randn(K, device="cuda", generator=gen).to(dt) if s["bias"] else torch.zeros(1, device="cuda", dtype=dt)
        conv = dict(stride=(s["stride_h"], s["stride_w"]), padding=(s["pad_h"], s["pad_w"]),
                    dilation=(s["dilation_h"], s["dilation_w"]), groups=G)
        P, Q = s["p"], s["q"]
        if layout == "nhwc":  # dense NHWC, KRSC and NPQK arrays, whatever torch's stride rules for size-1 dims
            xi, wi = x.permute(0, 2, 3, 1).contiguous(), w.permute(0, 2, 3, 1).contiguous()
            out = torch.full((N, P, Q, K), float("nan"), device="cuda", dtype=dt)
        else:
            xi, wi = x.contiguous(), w.contiguous()
            out = torch.full((N, K, P, Q), float("nan"), device="cuda", dtype=dt)
        stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        args = tuple(cp.uint64(t.data_ptr()) for t in (out, xi, wi, b))

        def run_convgen():
            fn(grid, block, args, shared_mem=shared, stream=stream)

        run_convgen()
        torch.cuda.synchronize()
        out_nkpq = out.permute(0, 3, 1, 2) if layout == "nhwc" else out

        # PyTorch in the matching mode.
        tf32 = prec == "tf32"
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        xp, wp = x, w
        if layout == "nhwc":
            xp, wp = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
        bp = b if s["bias"] else None
        run_torch = lambda: F.conv2d(xp, wp, bp, **conv)
        pt_out = run_torch()
        torch.cuda.synchronize()

        # Errors against float64, a batch slice at a time (bounded memory).
        per_sample = C * s["h"] * s["w"] + K * P * Q
        step = max(1, (128 << 20) // max(1, per_sample))
        num_cg = num_pt = den = 0.0
        nan = 0
        b64 = b.double() if s["bias"] else None
        w64 = w.double()
        torch.backends.cudnn.benchmark = False  # no algorithm search for the float64 reference
        for n0 in range(0, N, step):
            ref = F.conv2d(x[n0:n0 + step].double(), w64, b64, **conv)
            o = out_nkpq[n0:n0 + step].double()
            nan += int(torch.isnan(o).sum().item())
            num_cg += float(((o - ref) ** 2).sum().item())
            num_pt += float(((pt_out[n0:n0 + step].double() - ref) ** 2).sum().item())
            den += float((ref ** 2).sum().item())
            del ref, o
        torch.backends.cudnn.benchmark = True
        den = math.sqrt(den) or 1.0
        row["nan_outputs"] = nan
        row["convgen_error"] = _finite(math.sqrt(num_cg) / den) if not nan else None  # None: not all written
        row["pytorch_error"] = _finite(math.sqrt(num_pt) / den)
        del pt_out

        c_med, c_p10, c_p90 = self.time_it(run_convgen)
        p_med, p_p10, p_p90 = self.time_it(run_torch)
        row.update(convgen_ms=c_med, convgen_p10_ms=c_p10, convgen_p90_ms=c_p90,
                   pytorch_ms=p_med, pytorch_p10_ms=p_p10, pytorch_p90_ms=p_p90)
        return row

    def _measure_grad(self, s, prec, layout, rec, scratch, index, op):
        """dgrad or wgrad: the record's kernel on fresh random inputs (dY and
        W, or X and dY) against PyTorch's convolution_backward (cuDNN's
        gradient kernels, as autograd runs them), both checked against
        float64 gradients of the same (rounded) inputs."""
        torch, cp = self.torch, self.cp
        row = {}
        fn, shared, grid, block = self._load(rec, scratch, index)

        dt = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prec, torch.float32)
        N, C, K, G = s["n"], s["c"], s["k"], s["groups"]
        H, W, P, Q, R, S = s["h"], s["w"], s["p"], s["q"], s["r"], s["s"]
        bias = op == "wgrad" and s["bias"]
        gen = torch.Generator(device="cuda").manual_seed(self.seed + index)
        dy = torch.randn(N, K, P, Q, device="cuda", generator=gen).to(dt)
        if op == "dgrad":
            w = (torch.randn(K, C // G, R, S, device="cuda", generator=gen) / math.sqrt(C // G * R * S)).to(dt)
            x = None  # only its shape matters: PyTorch gets a zero X
        else:
            x = torch.randn(N, C, H, W, device="cuda", generator=gen).to(dt)
            w = None  # only its shape matters: PyTorch gets a zero W
        arrays, (to_stored, to_logical) = grad_arrays(s, op, layout)
        stored = lambda t: t.permute(*to_stored).contiguous() if to_stored else t.contiguous()  # dense NHWC / KRSC arrays
        logical = lambda t: t.permute(*to_logical) if to_logical else t  # NCHW / KCRS views of them
        out_name = KERNEL_PARAMS[op][0]
        tensors = {out_name: torch.full(arrays[out_name], float("nan"), device="cuda", dtype=dt), "dy": stored(dy)}
        if op == "dgrad":
            tensors["w"] = stored(w)
        else:
            tensors["x"] = stored(x)
            if bias:
                tensors["dbias"] = torch.full((K,), float("nan"), device="cuda", dtype=torch.float32)
        for name, dims in arrays.items():
            if tuple(tensors[name].shape) != tuple(dims):
                raise RuntimeError(f"{name}: array {tuple(tensors[name].shape)}, want {dims}")
        stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        args = tuple(cp.uint64(0 if t is None else t.data_ptr()) for t in kernel_args(op, tensors))

        def run_convgen():
            fn(grid, block, args, shared_mem=shared, stream=stream)

        run_convgen()
        torch.cuda.synchronize()
        out = logical(tensors[out_name])
        dbias = tensors.get("dbias")

        # PyTorch in the matching mode: aten.convolution_backward, what
        # autograd calls for conv2d (cuDNN's dgrad or wgrad kernels, and for
        # dBias its reduction of dY), with the op's output mask.
        tf32 = prec == "tf32"
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
        dyp = dy.contiguous(memory_format=fmt)
        if op == "dgrad":
            xp = torch.zeros(N, C, H, W, device="cuda", dtype=dt).contiguous(memory_format=fmt)
            wp = w.contiguous(memory_format=fmt)
        else:
            xp = x.contiguous(memory_format=fmt)
            wp = torch.zeros(K, C // G, R, S, device="cuda", dtype=dt).contiguous(memory_format=fmt)
        geo = ([s["stride_h"], s["stride_w"]], [s["pad_h"], s["pad_w"]], [s["dilation_h"], s["dilation_w"]], False, [0, 0], G)
        mask = [True, False, False] if op == "dgrad" else [False, True, bias]
        bias_sizes = [K] if bias else None
        backward = torch.ops.aten.convolution_backward
        run_torch = lambda: backward(dyp, xp, wp, bias_sizes, *geo, mask)
        pt = run_torch()
        torch.cuda.synchronize()
        pt_out = pt[0] if op == "dgrad" else pt[1]
        pt_dbias = pt[2] if bias else None
        del pt

        # Errors against float64 gradients, a batch slice at a time (bounded
        # memory): dX per slice; dW and dBias summed over the slices.
        per_sample = C * H * W + K * P * Q
        step = max(1, (128 << 20) // max(1, per_sample))
        sums = lambda: dict(cg=0.0, pt=0.0, den=0.0)
        acc = dict(out=sums(), dbias=sums())
        nan = int(torch.isnan(out).sum().item()) + (int(torch.isnan(dbias).sum().item()) if bias else 0)

        def add(key, o, p, ref):
            a = acc[key]
            a["cg"] += float(((o.double() - ref) ** 2).sum().item())
            a["pt"] += float(((p.double() - ref) ** 2).sum().item())
            a["den"] += float((ref ** 2).sum().item())

        torch.backends.cudnn.benchmark = False  # no algorithm search for the float64 reference
        if op == "dgrad":
            w64 = w.double()
            for n0 in range(0, N, step):
                d64 = dy[n0:n0 + step].double()
                x64 = torch.zeros(d64.shape[0], C, H, W, device="cuda", dtype=torch.float64)
                ref = backward(d64, x64, w64, None, *geo, [True, False, False])[0]
                add("out", out[n0:n0 + step], pt_out[n0:n0 + step], ref)
                del d64, x64, ref
        else:
            w64 = torch.zeros(K, C // G, R, S, device="cuda", dtype=torch.float64)
            dw64 = torch.zeros(K, C // G, R, S, device="cuda", dtype=torch.float64)
            db64 = torch.zeros(K, device="cuda", dtype=torch.float64)
            for n0 in range(0, N, step):
                r = backward(dy[n0:n0 + step].double(), x[n0:n0 + step].double(), w64, bias_sizes, *geo, mask)
                dw64 += r[1]
                if bias:
                    db64 += r[2]
                del r
            add("out", out, pt_out, dw64)
            if bias:
                add("dbias", dbias, pt_dbias, db64)
        torch.backends.cudnn.benchmark = True
        err = lambda a, who: _finite(math.sqrt(a[who]) / (math.sqrt(a["den"]) or 1.0))
        row["nan_outputs"] = nan
        if op == "wgrad":
            row["convgen_error_dw"] = err(acc["out"], "cg") if not nan else None
            row["pytorch_error_dw"] = err(acc["out"], "pt")
            if bias:
                row["convgen_error_dbias"] = err(acc["dbias"], "cg") if not nan else None
                row["pytorch_error_dbias"] = err(acc["dbias"], "pt")
        row["convgen_error"] = worse_error(*(row[k] for k in ("convgen_error_dw", "convgen_error_dbias") if k in row)) \
            if op == "wgrad" else (err(acc["out"], "cg") if not nan else None)  # None: not all written
        row["pytorch_error"] = worse_error(*(row[k] for k in ("pytorch_error_dw", "pytorch_error_dbias") if k in row)) \
            if op == "wgrad" else err(acc["out"], "pt")
        del pt_out, pt_dbias

        c_med, c_p10, c_p90 = self.time_it(run_convgen)
        p_med, p_p10, p_p90 = self.time_it(run_torch)
        row.update(convgen_ms=c_med, convgen_p10_ms=c_p10, convgen_p90_ms=c_p90,
                   pytorch_ms=p_med, pytorch_p10_ms=p_p10, pytorch_p90_ms=p_p90)
        return row


def _finite(x):
    """x, or None for NaN and infinities (JSON has neither)."""
    return x if math.isfinite(x) else None


def device_facts(torch):
    """SMs, max SM clock and copy bandwidth of GPU 0: the environment's
    SMS, CLOCK_MHZ and BANDWIDTH where set, else bench/devicefacts.py's
    measurement."""
    import devicefacts
    facts = {}
    env = lambda k: os.environ.get(k) or None
    facts["sms"] = int(env("SMS") or torch.cuda.get_device_properties(0).multi_processor_count)
    try:
        facts["clock_mhz"] = float(env("CLOCK_MHZ") or devicefacts.max_sm_clock_mhz())
    except Exception as e:  # nvidia-smi missing: say so in the header
        print(f"suite.py: SM clock not measured ({e}); using 1980 MHz", file=sys.stderr)
        facts["clock_mhz"] = 1980.0
    facts["bandwidth"] = float(env("BANDWIDTH") or devicefacts.copy_bandwidth())
    torch.cuda.empty_cache()
    return facts


# ------------------------------------------------------------------ a row


def base_row(name, shape, prec, layout, op):
    """A row's first fields; "op" only for a gradient (fprop rows as before ops)."""
    row = dict(name=name, shape=shape, precision=prec, layout=layout, mode=f"{prec}:{layout}",
               bound=ERROR_BOUNDS[prec], status="ok")
    if op != "fprop":
        row["op"] = op
    return row


def run_one(args, gpu, device, name, shape, s, prec, layout, index, scratch, facts):
    op = getattr(args, "op", None) or "fprop"
    row = base_row(name, shape, prec, layout, op)
    if isinstance(s, ShapeError):
        return dict(row, status="bad-shape", failure=str(s))
    row["canonical"] = canonical(s)
    flops, nbytes = work(s, prec, op)
    row.update(flops=flops, bytes=nbytes, floor_ms=floor_ms(s, prec, facts, op))
    before = find_record(load_cache(args.cache), row["canonical"], prec, layout, device, op=op)
    pkg = os.path.join(scratch, f"pkg-{index}")
    cmd = convgen_command(args.convgen, shape, prec, layout, pkg, args.cache, args.time, op)
    row["command"] = " ".join(shlex.quote(c) for c in cmd)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.tune_timeout)
        rc, stdout, stderr = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, stdout, stderr = "timeout", e.stdout or "", e.stderr or ""
        stdout, stderr = (t.decode(errors="replace") if isinstance(t, bytes) else t for t in (stdout, stderr))
    row["tune_s"] = time.monotonic() - t0
    row["convgen_rc"] = rc
    tail = lambda t: [l for l in t.strip().splitlines() if l.strip()][-3:]
    row["stdout_tail"], row["stderr_tail"] = tail(stdout), tail(stderr)
    if rc != 0:
        last = (row["stderr_tail"] or row["stdout_tail"] or [""])[-1]
        what = f"after {args.tune_timeout} s" if rc == "timeout" else f"exit {rc}"
        return dict(row, status="tune-failed", failure=f"convgen {what}: {last}"[:300])
    # The record the package was written from: the report names its problem
    # (its op too, for a gradient), device and winner kernel hash.
    try:
        with open(os.path.join(pkg, "report.json")) as f:
            rep = json.load(f)
        key = (rep["shape"], rep["precision"], rep["layout"], rep["device"]["name"], rep["kernel_sha256"])
        rep_op = rep.get("op") or "fprop"
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        return dict(row, status="no-record", failure=f"cannot read the package's report.json: {e}")
    if rep_op != op:
        return dict(row, status="no-record", failure=f"the package's report is of op {rep_op}, not {op}")
    rec = find_record(load_cache(args.cache), *key, op=op)
    if rec is None:
        what = f"{key[0]} {prec} {layout}" + (f" {op}" if op != "fprop" else "")
        return dict(row, status="no-record", failure=f"no record in {args.cache} for {what} on {key[3]}")
    summ = rec.get("summary") or {}
    row.update(reused=before is not None and record_id(before) == record_id(rec), record_tuning_s=summ.get("duration_s"),
               winner_family=rec["winner"]["family"], winner_config=rec["winner"].get("config"),
               convgen_reported_ms=rec["winner"].get("median_ms"), kernel=rec["kernel"], grid=rec["grid"],
               block=rec["block"], shared_bytes=rec["shared_bytes"], arch=rec["arch"], device=key[3])
    if rec["key"].get("device") != device:
        row["note"] = f"record tuned on {rec['key'].get('device')}, measured on {device}"
    try:
        row.update(gpu.measure(s, prec, layout, rec, scratch, index, op) if op != "fprop"
                   else gpu.measure(s, prec, layout, rec, scratch, index))
    except Exception as e:  # a kernel that does not load or launch: a row, not a crash
        gpu.torch.cuda.empty_cache()
        return dict(row, status="run-failed", failure=f"{type(e).__name__}: {e}"[:300])
    finally:
        shutil.rmtree(pkg, ignore_errors=True)
    if row["nan_outputs"] or row["convgen_error"] is None or not row["convgen_error"] <= row["bound"]:
        row["status"] = "wrong"
        row["failure"] = (f"{row['nan_outputs']} outputs not written (NaN)" if row["nan_outputs"]
                          else f"error {_fmt(row['convgen_error'], '.2e')} above the bound {row['bound']:g}")
    row["ratio"] = row["pytorch_ms"] / row["convgen_ms"]
    row["tflops"] = flops / (row["convgen_ms"] * 1e-3) / 1e12
    row["roofline_share"] = row["floor_ms"] / row["convgen_ms"]
    row["pytorch_roofline_share"] = row["floor_ms"] / row["pytorch_ms"]
    return row


# ----------------------------------------------------------------- tables


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _median(xs):
    return statistics.median(xs) if xs else None


def summarize(rows):
    """Per-mode figures: geometric mean and minimum ratio and median share of
    the roofline over the verified shapes, tuning time, counts."""
    ok = [r for r in rows if r["status"] == "ok"]
    ratios = [r["ratio"] for r in ok]
    worst = min(ok, key=lambda r: r["ratio"]) if ok else None
    return dict(shapes=len(rows), served=sum(1 for r in rows if "kernel" in r), verified=len(ok),
                geomean=geomean(ratios), min_ratio=worst["ratio"] if worst else None,
                min_shape=worst["name"] if worst else None,
                median_roofline=_median([r["roofline_share"] for r in ok]),
                pytorch_median_roofline=_median([r["pytorch_roofline_share"] for r in ok if "pytorch_roofline_share" in r]),
                tune_s=sum(r.get("tune_s") or 0 for r in rows),
                recorded_tune_s=sum(r.get("record_tuning_s") or 0 for r in rows if "kernel" in r),
                reused=sum(1 for r in rows if r.get("reused")))


def _fmt(x, spec, suffix=""):
    return "—" if x is None else format(x, spec) + suffix


def _cell(text):
    return str(text).replace("|", "/").replace("\n", " ")


def render(meta, rows):
    """The results file's markdown: a header, a table and a summary per mode."""
    lines = []
    w = lines.append
    op = meta.get("op") or "fprop"
    grad = op != "fprop"
    what = f", op {op} ({OP_TITLES.get(op, '?')})" if grad else ""
    w(f"# convgen vs PyTorch (cuDNN){what}: suite `{meta.get('suite', '?')}`, N={meta.get('n', '?')}, on {meta.get('device', '?')}")
    w("")
    for label, key in (("op", "op_note"), ("suite file", "suite_file"), ("batch size", "n_note"), ("device", "device"), ("driver", "driver"),
                       ("CUDA", "cuda"), ("cuDNN", "cudnn"), ("PyTorch", "torch"), ("CuPy", "cupy"), ("date (UTC)", "date"),
                       ("convgen commit", "commit"), ("convgen flags", "flags"), ("tuning cache", "cache"),
                       ("roofline facts", "facts_note"), ("timed runs", "runs")):
        if meta.get(key) not in (None, ""):
            w(f"- {label}: {meta[key]}")
    w("")
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    summaries = {}
    for mode in modes:
        mrows = [r for r in rows if r["mode"] == mode]
        prec = mrows[0]["precision"]
        vs = "PyTorch strict FP32" if prec in ("fp32", "3xtf32") else f"PyTorch {prec}" + (" (TF32 allowed)" if prec == "tf32" else "")
        w(f"## {mode}{', ' + op if grad else ''} (vs {vs}; error bound {ERROR_BOUNDS[prec]:g})")
        w("")
        w("| shape | convgen ms | PyTorch ms | ratio | TFLOP/s | of roofline | convgen error | PyTorch error | winner | tuning s |")
        w("|---|---|---|---|---|---|---|---|---|---|")
        for r in mrows:
            tune = "—" if r.get("tune_s") is None else f"{r['tune_s']:.1f}"
            if r.get("reused"):
                rec_s = r.get("record_tuning_s")
                tune += " (reused" + (f"; tuned in {rec_s:.1f})" if rec_s else ")")
            if "convgen_ms" not in r:
                w(f"| {_cell(r['name'])} | FAILED ({r['status']}): {_cell(r.get('failure', '?'))} | — | — | — | — | — | — "
                  f"| {_cell(r.get('winner_family', '—'))} | {tune} |")
                continue
            flag = "" if r["status"] == "ok" else f" **{r['status'].upper()}: {_cell(r.get('failure', ''))}**"
            w(f"| {_cell(r['name'])} | {r['convgen_ms']:.4f}{flag} | {r['pytorch_ms']:.4f} | {r['ratio']:.2f}× | {r['tflops']:.1f} "
              f"| {r['roofline_share']:.0%} | {_fmt(r['convgen_error'], '.1e')} | {_fmt(r['pytorch_error'], '.1e')} | {_cell(r['winner_family'])} | {tune} |")
        sm = summaries[mode] = summarize(mrows)
        w("")
        g = "—" if sm["geomean"] is None else f"{sm['geomean']:.2f}×"
        mn = "—" if sm["min_ratio"] is None else f"{sm['min_ratio']:.2f}× ({sm['min_shape']})"
        med = "—" if sm["median_roofline"] is None else f"{sm['median_roofline']:.0%}"
        w(f"- geometric mean ratio: {g}; minimum ratio: {mn}; median share of the roofline: {med} "
          f"(PyTorch's: {_fmt(sm['pytorch_median_roofline'], '.0%')}; over the verified shapes)")
        w(f"- served {sm['served']}/{sm['shapes']}, verified {sm['verified']}/{sm['shapes']}; tuning wall time {sm['tune_s']:.1f} s in all "
          f"({sm['reused']} records reused from the cache; the records' own tuning time {sm['recorded_tune_s']:.1f} s)")
        w("")
    w(f"## Summary{f' ({op})' if grad else ''}")
    w("")
    w("| mode | served | verified | geomean ratio | min ratio | median of roofline | tuning s |")
    w("|---|---|---|---|---|---|---|")
    for mode, sm in summaries.items():
        w(f"| {mode} | {sm['served']}/{sm['shapes']} | {sm['verified']}/{sm['shapes']} | {_fmt(sm['geomean'], '.2f', '×')} "
          f"| {_fmt(sm['min_ratio'], '.2f', '×')} | {_fmt(sm['median_roofline'], '.0%')} | {sm['tune_s']:.1f} |")
    w("")
    w("How the numbers are made:")
    w("")
    if grad:
        _grad_notes(w, op)
        return "\n".join(lines)
    w("- Both sides run in one process on the same GPU: convgen's winner loaded from its cache record (the CUBIN, with "
      "CuPy) and launched with the record's grid, block and dynamic shared memory; PyTorch's `F.conv2d` with "
      "`cudnn.benchmark = True`, channels_last tensors for NHWC, TF32 allowed only in tf32 modes (fp32 and 3xtf32 "
      "are compared with PyTorch's strict FP32). Times are CUDA events around the kernel alone, after warm-up, the "
      "L2 flushed (a 256 MB memset) before every timed run; the median is shown.")
    w("- ratio = PyTorch ms / convgen ms; TFLOP/s = 2·N·K·P·Q·(C/groups)·R·S / convgen ms.")
    w("- of roofline = max(FLOPs / dense peak of the mode, bytes / copy bandwidth) / convgen ms, where peak FP32 = "
      "SMs × 256 FLOP/clk × clock, TF32 8×, 3xTF32 8/3×, FP16 and BF16 16× that, and bytes = every tensor "
      "read or written once in the mode's element size.")
    w("- error = ‖out − ref‖ / ‖ref‖ over every output against PyTorch's float64 conv2d on the same (for fp16 and "
      "bf16, rounded) inputs; convgen's output is poisoned with NaN before its launch. A row is verified when "
      "every output was written and the error is within the bound.")
    w("- tuning s = wall time of the convgen call (compiles included); \"reused\" marks a current record of this "
      "GPU that convgen took from the cache instead of tuning, with the time its tuning took.")
    w("")
    return "\n".join(lines)


def _grad_notes(w, op):
    """The notes under a gradient's table."""
    outs = "dX" if op == "dgrad" else "dW and, with a bias, dBias"
    mask = "[True, False, False]" if op == "dgrad" else "[False, True, bias]"
    w("- Both sides run in one process on the same GPU: convgen's winner for the op loaded from its cache record (the "
      "CUBIN, with CuPy) and launched with the record's grid, block and dynamic shared memory, its parameters "
      + ("(dX, dY, W, null)" if op == "dgrad" else "(dW, X, dY, dBias; null without a bias)")
      + f"; PyTorch's `torch.ops.aten.convolution_backward` (what autograd runs for conv2d) with output_mask {mask}, "
      "`cudnn.benchmark = True`, channels_last tensors for NHWC, TF32 allowed only in tf32 modes (fp32 and 3xtf32 are "
      "compared with PyTorch's strict FP32). Times are CUDA events around the kernel (PyTorch: the call) alone, after "
      "warm-up, the L2 flushed (a 256 MB memset) before every timed run; the median is shown.")
    w("- ratio = PyTorch ms / convgen ms; TFLOP/s = the forward's 2·N·K·P·Q·(C/groups)·R·S / convgen ms.")
    w("- of roofline = max(FLOPs / dense peak of the mode, bytes / copy bandwidth) / convgen ms, where peak FP32 = "
      "SMs × 256 FLOP/clk × clock, TF32 8×, 3xTF32 8/3×, FP16 and BF16 16× that, and bytes = the op's tensors read "
      "or written once in the mode's element size ("
      + ("dY and W read, dX written" if op == "dgrad" else "X and dY read, dW written, and dBias, K FP32 values, with a bias")
      + ").")
    w(f"- error = ‖out − ref‖ / ‖ref‖ over every value of {outs} against PyTorch's float64 gradients "
      "(`convolution_backward` on float64 copies of the same, for fp16 and bf16 rounded, inputs)"
      + ("; the larger of dW's and dBias's errors is shown (the .jsonl has both)" if op == "wgrad" else "")
      + "; convgen's outputs are poisoned with NaN before its launch. A row is verified when every output was "
      "written and the error is within the bound.")
    w("- tuning s = wall time of the convgen call (compiles included); \"reused\" marks a current record of this "
      "GPU that convgen took from the cache instead of tuning, with the time its tuning took.")
    w("")


def results_base(suite, n, op, modes, date, device, commit):
    """The results files' name without extension: after the batch size the
    op for a gradient (none for fprop), then the modes ((precision, layout)
    pairs, "fp16nhwc-tf32nhwc"), so that runs of one commit in different
    modes do not share a name."""
    tag = "-".join(prec + layout for prec, layout in modes)
    return (f"results-suite-{suite}-{'own-n' if n is None else f'n{n}'}" + (f"-{op}" if op != "fprop" else "")
            + f"-{tag}-{date:%Y-%m-%d}-{gpu_slug(device)}-{commit}")


# ----------------------------------------------------------- the commands


def gpu_slug(device):
    words = [t for t in re.split(r"[^A-Za-z0-9]+", device or "") if t and t.upper() != "NVIDIA"]
    return words[0].lower() if words else "gpu"


def run(args):
    try:
        n = None if args.n in ("own", "-") else int(args.n)
    except ValueError:
        n = 0
    if n is not None and n < 1:
        raise UsageError(f"N {args.n!r}: want a positive batch size or 'own'")
    op = args.op or "fprop"
    if op not in OPS:
        raise UsageError(f"op {op!r}: want one of {', '.join(OPS)}")
    modes = parse_modes(args.modes)
    shapes = read_suite(args.suite, n)
    only = [t.strip() for t in (args.only or "").split(",") if t.strip()]
    if only:
        unknown = sorted(set(only) - {name for name, _, _ in shapes})
        if unknown:
            raise UsageError(f"ONLY names shapes the suite lacks: {', '.join(unknown)}")
        shapes = [t for t in shapes if t[0] in only]
    suite = os.path.splitext(os.path.basename(args.suite))[0]
    if args.dry_run:
        index = 0
        for name, shape, s in shapes:
            if isinstance(s, ShapeError):
                print(f"# {name}: bad shape: {s}")
                index += len(modes)
                continue
            for prec, layout in modes:
                index += 1
                cmd = convgen_command(args.convgen, shape, prec, layout, f"TMP/pkg-{index}", args.cache, args.time, op)
                print(f"# {name} {prec}:{layout}{' ' + op if op != 'fprop' else ''} ({canonical(s)}; {work(s, prec)[0] / 1e9:.2f} GFLOP)")
                if op == "fprop" and max(tensor_elems(s)) > INDEX_LIMIT:
                    print(f"#   note: a tensor of more than {INDEX_LIMIT} elements: convgen refuses it today (32-bit indices)")
                print(" ".join(shlex.quote(c) for c in cmd))
        print(f"# {len(shapes)} shapes x {len(modes)} modes from {args.suite}" + (f", op {op}" if op != "fprop" else ""))
        return 0
    if not os.access(args.convgen, os.X_OK):
        raise SystemExit(f"suite.py: {args.convgen} is not an executable (run scripts/build-device and carry .dev)")

    gpu = GPU(args.runs, args.seed)
    torch, cp = gpu.torch, gpu.cp
    device = torch.cuda.get_device_name(0)
    facts = device_facts(torch)
    date = datetime.datetime.now(datetime.timezone.utc)
    commit = args.commit or os.environ.get("CONVGEN_COMMIT") or _git_commit() or "unknown"
    base = results_base(suite, n, op, modes, date, device, commit)
    os.makedirs(args.out, exist_ok=True)
    md_path, jsonl_path = os.path.join(args.out, base + ".md"), os.path.join(args.out, base + ".jsonl")
    meta = dict(kind="meta", **({"op": op, "op_note": f"{op}: {OP_TITLES[op]}"} if op != "fprop" else {}),
                suite=suite, suite_file=args.suite, n="own" if n is None else n,
                n_note=("each line's own N" if n is None else f"{n} (lines with their own N= keep it)"),
                device=device, driver=args.driver or "?",
                cuda=f"{torch.version.cuda} (PyTorch's)" + (f", driver supports {args.driver_cuda}" if args.driver_cuda else ""),
                cudnn=cudnn_version(torch.backends.cudnn.version()), torch=torch.__version__, cupy=cp.__version__,
                date=date.strftime("%Y-%m-%dT%H:%M:%SZ"), commit=commit,
                flags="default" + (f", -time {args.time}" if args.time else "")
                + (", each kernel launched without its prologue (NO_PROLOGUE=1, as an outside launcher)" if NO_PROLOGUE else ""), cache=args.cache,
                facts=facts, runs=gpu.runs, modes=[f"{p}:{l}" for p, l in modes],
                facts_note=f"{facts['sms']} SMs, {facts['clock_mhz']:g} MHz, copy bandwidth {facts['bandwidth'] / 1e12:.2f} TB/s")
    print("suite: " + ", ".join(f"{k} {meta[k]}" for k in ("device", "driver", "cuda", "cudnn", "torch", "commit")), file=sys.stderr)
    rows = []
    scratch = tempfile.mkdtemp(prefix="convgen-suite-")
    with open(jsonl_path, "w") as out:
        out.write(json.dumps(meta) + "\n")
        index = 0
        for name, shape, s in shapes:
            for prec, layout in modes:
                index += 1
                try:
                    row = run_one(args, gpu, device, name, shape, s, prec, layout, index, scratch, facts)
                except Exception as e:  # anything unforeseen: a row, and on to the next
                    row = dict(base_row(name, shape, prec, layout, op), status="error", failure=f"{type(e).__name__}: {e}"[:300])
                rows.append(row)
                out.write(json.dumps(row) + "\n")
                out.flush()
                brief = (f"{row['ratio']:.2f}x, error {_fmt(row['convgen_error'], '.1e')}" if "ratio" in row else row.get("failure", ""))
                print(f"suite: {name} {prec}:{layout}: {row['status']}: {brief}", file=sys.stderr, flush=True)
                with open(md_path, "w") as f:  # rewritten after each row: a killed run leaves its table
                    f.write(render(meta, rows))
    shutil.rmtree(scratch, ignore_errors=True)
    print(render(meta, rows))
    print(f"suite: wrote {md_path} and {jsonl_path}", file=sys.stderr)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


def _git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=HERE).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def rebuild_table(jsonl, out):
    meta, rows = {}, []
    with open(jsonl) as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                if d.get("kind") == "meta":
                    meta = d
                else:
                    rows.append(d)
    with open(out, "w") as f:
        f.write(render(meta, rows))
    return 0


# ------------------------------------------------------------- self-check


# A stand-in for convgen in the self-check: writes -o/report.json naming the
# cache record of the asked precision, layout and op (-op; the report's "op"
# as convgen writes it, absent for fprop), as a real run does; bf16 fails the
# way convgen does when nothing serves.
_FAKE_CONVGEN = r'''
import json, os, sys
a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
if a["-precision"] == "bf16":
    sys.exit(print("convgen: no candidate served", file=sys.stderr) or 1)
for r in json.load(open(a["-cache"]))["records"]:
    k = r["key"]
    if (k["precision"], k["layout"], k.get("op", "")) == (a["-precision"], a["-layout"], a.get("-op", "")):
        os.makedirs(a["-o"], exist_ok=True)
        rep = dict(shape=k["shape"], precision=k["precision"], layout=k["layout"], device=dict(name=k["device"]),
                   kernel_sha256=r["kernel_sha256"])
        if "-op" in a:
            rep["op"] = a["-op"]
        json.dump(rep, open(os.path.join(a["-o"], "report.json"), "w"))
        sys.exit(0)
sys.exit(1)
'''


class _FakeGPU:
    """The GPU side of a row in the self-check: returns set figures."""

    class torch:
        class cuda:
            @staticmethod
            def empty_cache():
                pass

    def __init__(self, result):
        self.result, self.seen, self.ops = result, [], []

    def measure(self, s, prec, layout, rec, scratch, index, op="fprop"):
        self.seen.append(rec["kernel"])
        self.ops.append(op)
        return dict(self.result)


def self_check():
    """Checks, without a GPU, what the GPU run relies on: record decoding,
    shape parsing and canonical form, the suites, the roofline arithmetic
    and the table. Prints each check and exits 1 on any failure."""
    root = os.path.dirname(HERE)
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    # 1. Every record of the example cache: CUBIN and PTX decode.
    recs = load_cache(os.path.join(root, "examples", "alexnet", "convgen-cache.json"))
    check(len(recs) >= 6, f"examples/alexnet/convgen-cache.json holds {len(recs)} records (want the flagship's 6)")
    for r in recs:
        what = f"{r['key']['precision']}:{r['key']['layout']} ({r['kernel']})"
        try:
            cubin, ptx = decode_gzip_b64(r["cubin_gzip"]), decode_gzip_b64(r["ptx_gzip"]).decode()
        except Exception as e:
            check(False, f"{what}: decode: {e}")
            continue
        check(cubin[:4] == ELF_MAGIC, f"{what}: CUBIN ({len(cubin)} bytes) starts with the ELF magic")
        check(ptx.lstrip().startswith(("//", ".version")), f"{what}: PTX decodes to text")
        check(f".entry {r['kernel']}" in ptx or f"{r['kernel']}(" in ptx, f"{what}: the PTX defines the record's kernel name")
        check(r["kernel"].encode() in cubin, f"{what}: the CUBIN holds the record's kernel name")
        s = parse_shape(r["key"]["shape"])
        check(canonical(s) == r["key"]["shape"], f"{what}: canonical form of the key's shape is the key")
        found = find_record(recs, r["key"]["shape"], r["key"]["precision"], r["key"]["layout"], r["key"]["device"], r["kernel_sha256"])
        check(found is r, f"{what}: find_record finds it by problem, device and kernel hash")
    check(find_record(recs, recs[0]["key"]["shape"], "fp32", "nchw", "NVIDIA B200") is None, "find_record: another device finds nothing")
    try:
        decode_gzip_b64(base64.b64encode(b"not gzip").decode())
        check(False, "decoding a record that is not gzip raises")
    except OSError:
        check(True, "decoding a record that is not gzip raises")

    # 2. Shapes: canonical form, P/Q, refusals.
    s = parse_shape(" n=8,C=32,H=512,W=512,K=64,R=5,S=9,pad_h=2,pad_w=4,dilation_h=2,dilation_w=3,bias=false")
    check(canonical(s) == "N=8,C=32,H=512,W=512,K=64,R=5,S=9,stride=1,pad_h=2,pad_w=4,dilation_h=2,dilation_w=3,groups=1,bias=false",
          "canonical form of an asymmetric shape")
    check((s["p"], s["q"]) == (508, 496), f"P, Q of the dilated shape: {s['p']}, {s['q']} (want 508, 496)")
    for bad in ("N=1,C=3,H=5,W=5,K=4,R=3", "N=1,C=3,H=5,W=5,K=4,R=3,S=3,groups=2", "N=1,C=3,H=2,W=5,K=3,R=3,S=3",
                "N=1,C=3,H=5,W=5,K=3,R=3,S=3,pad=1,pad_h=1", "N=1,C=3,H=5,W=5,K=3,R=3,S=3,foo=1", "N=1,C=3,H=5,W=5,K=3,R=3,S=3,bias=maybe"):
        try:
            parse_shape(bad)
            check(False, f"refuses {bad}")
        except ShapeError:
            check(True, f"refuses {bad}")

    # 3. The suites parse, with the counts their READMEs give.
    for suite, count, n in (("resnet50", 23, 32), ("mobilenetv2", 12, 32), ("kernelbench-l1", 11, None), ("flagship", 1, None)):
        shapes = read_suite(os.path.join(HERE, "suites", suite + ".txt"), n)
        bad = [f"{name}: {p}" for name, _, p in shapes if isinstance(p, ShapeError)]
        check(len(shapes) == count and not bad, f"bench/suites/{suite}.txt: {len(shapes)} shapes (want {count}), bad: {bad or 'none'}")
    kb = dict((name, p) for name, _, p in read_suite(os.path.join(HERE, "suites", "kernelbench-l1.txt"), 32))
    check(kb["kb55"]["n"] == 8, "a line's own N wins over the run's N")
    rn = dict((name, p) for name, _, p in read_suite(os.path.join(HERE, "suites", "resnet50.txt"), 256))
    check(rn["stem"]["n"] == 256 and (rn["stem"]["p"], rn["stem"]["q"]) == (112, 112), "the run's N is prefixed; the stem's P = Q = 112")
    dw = dict((name, p) for name, _, p in read_suite(os.path.join(HERE, "suites", "mobilenetv2.txt"), 32))["dw-96-112s2"]
    check(dw["groups"] == 96 and dw["p"] == 56, "depthwise stride-2 shape: groups 96, P 56")
    check(parse_modes("fp16:nhwc, tf32:nchw,3xtf32") == [("fp16", "nhwc"), ("tf32", "nchw"), ("3xtf32", "nchw")], "modes parse")

    # 4. Roofline arithmetic: the flagship's figures (docs/performance.md).
    f = parse_shape("N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2")
    flops, nbytes = work(f, "fp32")
    check(flops == 53972582400 and nbytes == 451650048, f"flagship FLOPs {flops}, bytes {nbytes} (want 53972582400, 451650048)")
    h200 = dict(sms=132, clock_mhz=1980, bandwidth=4.3e12)
    check(abs(floor_ms(f, "fp32", h200) - 0.8067) < 1e-3 and abs(floor_ms(f, "tf32", h200) - 0.1050) < 1e-3,
          f"flagship floors {floor_ms(f, 'fp32', h200):.4f} ms fp32, {floor_ms(f, 'tf32', h200):.4f} ms tf32 (want 0.8067, 0.1050: memory-bound)")
    dflops, dbytes = work(dw, "fp16")
    check(dflops == 2 * 32 * 96 * 56 * 56 * 9, "depthwise FLOPs count C/groups = 1 channel per output")

    # 5. The table: a verified row, a failure, a wrong result.
    ok = lambda name, ratio: dict(name=name, mode="tf32:nhwc", precision="tf32", layout="nhwc", status="ok", kernel="k",
                                  convgen_ms=1.0, pytorch_ms=ratio, ratio=ratio, tflops=10.0, roofline_share=0.5,
                                  pytorch_roofline_share=0.25,
                                  convgen_error=1e-4, pytorch_error=2e-4, winner_family="igemm", tune_s=12.0)
    rows = [ok("a", 2.0), ok("b", 0.5), dict(ok("c", 9.0), status="wrong", failure="error 1e-1 above the bound"),
            dict(name="d", mode="tf32:nhwc", precision="tf32", layout="nhwc", status="tune-failed", tune_s=3.0,
                 failure="convgen exit 1: no | candidate")]
    sm = summarize(rows)
    check(abs(sm["geomean"] - 1.0) < 1e-12 and sm["min_ratio"] == 0.5 and sm["min_shape"] == "b",
          f"summary over verified rows only: geomean {sm['geomean']}, min {sm['min_ratio']} ({sm['min_shape']})")
    check((sm["served"], sm["verified"], sm["shapes"], sm["tune_s"]) == (3, 2, 4, 39.0), f"summary counts {sm}")
    md = render(dict(suite="t", n=32, device="NVIDIA H100"), rows)
    check("FAILED (tune-failed): convgen exit 1: no / candidate" in md, "a failed shape is a row with its failure (| escaped)")
    check("**WRONG: error 1e-1 above the bound**" in md, "a wrong result is flagged in its row")
    check("| tf32:nhwc | 3/4 | 2/4 | 1.00× | 0.50× | 50% | 39.0 |" in md, "the summary table's row")
    check(gpu_slug("NVIDIA H100 80GB HBM3") == "h100", "GPU slug")

    # 6. A row end to end, with a fake convgen (writes the package's
    # report.json from the example cache's record, or fails) and a fake GPU.
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache.json")
        shutil.copy(os.path.join(root, "examples", "alexnet", "convgen-cache.json"), cache)
        fake = os.path.join(tmp, "convgen")
        with open(fake, "w") as fh:
            fh.write(f"#!{sys.executable}\n" + _FAKE_CONVGEN)
        os.chmod(fake, 0o755)
        fargs = argparse.Namespace(convgen=fake, cache=cache, time=None, tune_timeout=60)
        fgpu = _FakeGPU(dict(nan_outputs=0, convgen_error=3e-7, pytorch_error=2e-6, convgen_ms=1.0, convgen_p10_ms=1.0,
                             convgen_p90_ms=1.0, pytorch_ms=2.5, pytorch_p10_ms=2.5, pytorch_p90_ms=2.5))
        flag = "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2"
        row = run_one(fargs, fgpu, "NVIDIA H200", "alexnet", flag, parse_shape(flag), "fp32", "nchw", 1, tmp, h200)
        check(row["status"] == "ok" and row.get("winner_family") == "winograd" and row.get("reused") is True
              and row.get("kernel") == "convgen_winograd_4f300814" and abs(row.get("ratio", 0) - 2.5) < 1e-12,
              f"a served shape: the record found through the package's report, reused, ratio 2.5 ({row.get('status')}, "
              f"{row.get('failure', '')}{row.get('winner_family')}, reused {row.get('reused')}, ratio {row.get('ratio')})")
        check(fgpu.seen == ["convgen_winograd_4f300814"], f"the GPU side got the record's kernel: {fgpu.seen}")
        row = run_one(fargs, fgpu, "NVIDIA H200", "alexnet", flag, parse_shape(flag), "bf16", "nchw", 2, tmp, h200)
        check(row["status"] == "tune-failed" and "exit 1: convgen: no candidate served" in row.get("failure", ""),
              f"a shape convgen fails: a tune-failed row with its message ({row['status']}: {row.get('failure')})")
        fgpu.result["convgen_error"] = 2e-5
        row = run_one(fargs, fgpu, "NVIDIA H200", "alexnet", flag, parse_shape(flag), "fp32", "nchw", 3, tmp, h200)
        check(row["status"] == "wrong" and "above the bound" in row.get("failure", ""),
              f"an error above fp32's bound is a wrong row ({row['status']}: {row.get('failure')})")
        fgpu.result["nan_outputs"] = 7
        row = run_one(fargs, fgpu, "NVIDIA H200", "alexnet", flag, parse_shape(flag), "fp32", "nchw", 4, tmp, h200)
        check(row["status"] == "wrong" and "7 outputs not written" in row.get("failure", ""), "unwritten (NaN) outputs are a wrong row")
        fgpu.result.update(nan_outputs=0, convgen_error=None)
        row = run_one(fargs, fgpu, "NVIDIA H200", "alexnet", flag, parse_shape(flag), "fp32", "nchw", 4, tmp, h200)
        check(row["status"] == "wrong" and "error — above" in row.get("failure", "") and "| —" in render({}, [row]),
              "an infinite error (None) is a wrong row, shown as —")
        row = run_one(fargs, fgpu, "NVIDIA B200", "alexnet", flag, parse_shape(flag), "tf32", "nhwc", 5, tmp, h200)
        check(row.get("reused") is False and "note" in row, "a record of another GPU is not 'reused' here, and the row says so")

    _self_check_grads(check, root, recs, h200)

    print(f"\nself-check: {'FAILED: ' + str(len(failures)) if failures else 'all passed'}")
    return 1 if failures else 0


def _self_check_grads(check, root, recs, h200):
    """The gradient ops' paths that need no GPU: the kernel's argument order
    against problem/op.go, the arrays' dims and permutations, work, the
    convgen command, record lookup by op, a row end to end, file names and
    the table."""
    # 7. Argument order: problem/op.go's table (out, in, filter, bias) per op.
    table = {}
    with open(os.path.join(root, "problem", "op.go")) as f:
        for line in f:
            m = re.match(r"^//\s+(fprop|dgrad|wgrad)\s+(\S+)\s+\(.*?\)\s+(\S+)\s+\(.*?\)\s+(\S+)\s+\(.*?\)\s+(\S+)", line)
            if m:
                table[m.group(1)] = tuple(None if t == "unused" else t.lower() for t in m.groups()[1:])
    check(set(table) == set(OPS), f"problem/op.go's operand table names every op: {sorted(table)}")
    for op in OPS:
        check(table.get(op) == KERNEL_PARAMS[op], f"{op}: kernel parameters {KERNEL_PARAMS[op]} are problem/op.go's {table.get(op)}")
    t = dict(dx="DX", dy="DY", w="W", x="X", dw="DW", dbias="DB")
    check(kernel_args("dgrad", t) == ("DX", "DY", "W", None), "dgrad's launch arguments: (dX, dY, W, null)")
    check(kernel_args("wgrad", t) == ("DW", "X", "DY", "DB"), "wgrad's launch arguments: (dW, X, dY, dBias)")
    check(kernel_args("wgrad", dict(t, dbias=None)) == ("DW", "X", "DY", None), "wgrad without bias: dBias null")

    # 8. Arrays: dims per layout, and the permutations store and view them.
    s = parse_shape("N=2,C=6,H=9,W=11,K=4,R=3,S=5,stride=2,pad=1,groups=2,bias=true")
    perm = lambda dims, p: tuple(dims[i] for i in p) if p else tuple(dims)
    logical = dict(x=(2, 6, 9, 11), dx=(2, 6, 9, 11), dy=(2, 4, s["p"], s["q"]), w=(4, 3, 3, 5), dw=(4, 3, 3, 5), dbias=(4,))
    for op in ("dgrad", "wgrad"):
        for layout in LAYOUTS:
            arrays, (to_stored, to_logical) = grad_arrays(s, op, layout)
            want = {n for n in KERNEL_PARAMS[op] if n}
            check(set(arrays) == want, f"{op} {layout}: arrays {sorted(arrays)} (want {sorted(want)})")
            good = all(perm(logical[n], to_stored) == arrays[n] and perm(arrays[n], to_logical) == logical[n]
                       for n in arrays if n != "dbias") and arrays.get("dbias", (4,)) == (4,)
            check(good, f"{op} {layout}: stored dims {arrays}, the permutations store and view them")
    arrays, _ = grad_arrays(s, "wgrad", "nhwc")
    check(arrays["dw"] == (4, 3, 5, 3) and arrays["x"] == (2, 9, 11, 6), "wgrad nhwc: dW KRSC, X NHWC")
    check("dbias" not in grad_arrays(dict(s, bias=False), "wgrad", "nchw")[0], "wgrad without bias: no dBias array")
    check(worse_error(1e-4, 3e-4) == 3e-4 and worse_error(1e-4, None) is None and worse_error(2e-5) == 2e-5,
          "the larger of dW's and dBias's errors; infinite when one is")

    # 9. Work: the forward's FLOPs; the op's bytes.
    f = parse_shape("N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2")
    x, w, y = tensor_elems(f)
    check(work(f, "fp32", "dgrad") == (53972582400, (x + w + y) * 4) == (53972582400, 451649664),
          f"flagship dgrad: FLOPs and bytes {work(f, 'fp32', 'dgrad')} (dY + W read, dX written)")
    check(work(f, "fp16", "wgrad") == (53972582400, (x + w + y) * 2 + 96 * 4),
          f"flagship wgrad fp16: bytes {work(f, 'fp16', 'wgrad')[1]} (X + dY read, dW written in fp16, dBias FP32)")
    check(work(dict(f, bias=False), "fp16", "wgrad")[1] == (x + w + y) * 2, "wgrad without bias: no dBias bytes")
    check(abs(floor_ms(f, "tf32", h200, "dgrad") - 451649664 / 4.3e12 * 1e3) < 1e-9, "dgrad's (memory-bound) tf32 floor from its bytes")

    # 10. The command: -op for a gradient, none for fprop; the dry run.
    c = convgen_command("cg", "N=1,C=1,H=3,W=3,K=1,R=3,S=3", "fp16", "nhwc", "pkg", "c.json", "30s", "wgrad")
    check(c[:9] == ["cg", "-shape", "N=1,C=1,H=3,W=3,K=1,R=3,S=3", "-precision", "fp16", "-layout", "nhwc", "-op", "wgrad"]
          and c[-2:] == ["-time", "30s"], f"wgrad's convgen command: {' '.join(c)}")
    c = convgen_command("cg", "N=1,C=1,H=3,W=3,K=1,R=3,S=3", "fp16", "nhwc", "pkg", "c.json", None)
    check("-op" not in c, "fprop's convgen command has no -op")
    suite = os.path.join(HERE, "suites", "flagship.txt")
    for op, cache in (("wgrad", "bench/grad-cache.json"), ("fprop", "bench/suite-cache.json")):
        p = subprocess.run([sys.executable, os.path.join(HERE, "suite.py"), "--dry-run", "--suite", suite, "--n", "own",
                            "--modes", "tf32:nchw,fp16:nhwc"], capture_output=True, text=True,
                           env=dict({k: v for k, v in os.environ.items() if k not in ("ONLY", "TIME", "CACHE")}, OP=op))
        cmds = [l for l in p.stdout.splitlines() if not l.startswith("#")]
        check(p.returncode == 0 and len(cmds) == 2 and all((" -op wgrad " in l) == (op == "wgrad") and f"-cache {cache}" in l
                                                          and "N=256," in l for l in cmds),
              f"OP={op} dry run of flagship.txt (own N): 2 commands, -op {'wgrad' if op == 'wgrad' else 'absent'}, cache {cache}")

    # 11. Records by op: a forward and a gradient record of one problem.
    g = json.loads(json.dumps(recs[0]))
    g["key"]["op"], g["kernel_sha256"], g["kernel"] = "wgrad", "ab" * 32, "convgen_wgrad_test"
    k = recs[0]["key"]
    both = [g] + recs
    check(find_record(both, k["shape"], k["precision"], k["layout"], k["device"], op="wgrad") is g,
          "find_record by op finds the gradient's record")
    check(find_record(both, k["shape"], k["precision"], k["layout"], k["device"]) is recs[0],
          "find_record for fprop skips a gradient's record of the same problem")
    check(find_record(both, k["shape"], k["precision"], k["layout"], k["device"], op="dgrad") is None,
          "find_record of another op finds nothing")

    # 12. A gradient row end to end (fake convgen, fake GPU).
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache.json")
        with open(os.path.join(root, "examples", "alexnet", "convgen-cache.json")) as fh:
            doc = json.load(fh)
        gw = [json.loads(json.dumps(r)) for r in doc["records"] if (r["key"]["precision"], r["key"]["layout"]) == ("fp32", "nchw")][0]
        gw["key"]["op"], gw["kernel_sha256"], gw["kernel"] = "wgrad", "cd" * 32, "convgen_wgrad_fake"
        doc["records"].append(gw)
        with open(cache, "w") as fh:
            json.dump(doc, fh)
        fake = os.path.join(tmp, "convgen")
        with open(fake, "w") as fh:
            fh.write(f"#!{sys.executable}\n" + _FAKE_CONVGEN)
        os.chmod(fake, 0o755)
        fargs = argparse.Namespace(convgen=fake, cache=cache, time=None, tune_timeout=60, op="wgrad")
        fgpu = _FakeGPU(dict(nan_outputs=0, convgen_error=3e-7, convgen_error_dw=3e-7, convgen_error_dbias=1e-7,
                             pytorch_error=2e-6, convgen_ms=1.0, convgen_p10_ms=1.0, convgen_p90_ms=1.0,
                             pytorch_ms=2.0, pytorch_p10_ms=2.0, pytorch_p90_ms=2.0))
        flag = "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2"
        row = run_one(fargs, fgpu, "NVIDIA H200", "flagship", flag, parse_shape(flag), "fp32", "nchw", 1, tmp, h200)
        check(row["status"] == "ok" and row.get("op") == "wgrad" and row.get("kernel") == "convgen_wgrad_fake"
              and " -op wgrad " in row.get("command", "") and fgpu.ops == ["wgrad"] and row.get("bytes") == work(f, "fp32", "wgrad")[1],
              f"a wgrad row: convgen ran with -op, the gradient's record measured as wgrad ({row['status']}: "
              f"{row.get('failure', '')} {row.get('kernel')}, {fgpu.ops})")
        miss = run_one(fargs, fgpu, "NVIDIA H200", "flagship", flag, parse_shape(flag), "tf32", "nhwc", 2, tmp, h200)
        check(miss["status"] == "tune-failed", f"a wgrad problem without its record: the fake convgen fails ({miss['status']})")
        fgpu.result.update(convgen_error=3e-5, convgen_error_dbias=3e-5)
        row2 = run_one(fargs, fgpu, "NVIDIA H200", "flagship", flag, parse_shape(flag), "fp32", "nchw", 3, tmp, h200)
        check(row2["status"] == "wrong", "a wgrad row whose dBias error passes the bound is wrong")

    # 13. File names and the table.
    d = datetime.datetime(2026, 11, 25, tzinfo=datetime.timezone.utc)
    check(results_base("flagship", None, "wgrad", [("tf32", "nchw")], d, "NVIDIA H100 80GB HBM3", "abc1234")
          == "results-suite-flagship-own-n-wgrad-tf32nchw-2026-11-25-h100-abc1234"
          and results_base("resnet50", 32, "dgrad", [("fp16", "nhwc")], d, "NVIDIA H200", "abc1234")
          == "results-suite-resnet50-n32-dgrad-fp16nhwc-2026-11-25-h200-abc1234"
          and results_base("resnet50", 32, "fprop", [("fp16", "nhwc"), ("tf32", "nhwc")], d, "NVIDIA H200", "abc1234")
          == "results-suite-resnet50-n32-fp16nhwc-tf32nhwc-2026-11-25-h200-abc1234"
          and results_base("resnet50", 32, "fprop", [("fp16", "nhwc")], d, "NVIDIA H200", "abc1234")
          != results_base("resnet50", 32, "fprop", [("tf32", "nhwc")], d, "NVIDIA H200", "abc1234"),
          "results file names: the op after N for a gradient, none for fprop, then the modes (one commit's runs "
          "in two modes do not share a name)")
    md = render(dict(suite="flagship", n="own", device="NVIDIA H100", op="wgrad", op_note="wgrad: " + OP_TITLES["wgrad"]), [row, row2])
    check(md.startswith("# convgen vs PyTorch (cuDNN), op wgrad (the filter gradient dW and dBias): suite `flagship`")
          and "- op: wgrad" in md and "## fp32:nchw, wgrad (vs PyTorch strict FP32" in md and "## Summary (wgrad)" in md
          and "convolution_backward" in md and "| fp32:nchw | 2/2 | 1/2 | 2.00× |" in md and "**WRONG: error 3.00e-05 above" in md,
          "a wgrad table: the op in its title, sections and notes; summary per mode")
    md = render(dict(suite="r", n=32, device="NVIDIA H100", op="dgrad"), [dict(row, op="dgrad")])
    check("op dgrad (the input gradient dX)" in md and "dY and W read, dX written" in md and "(dX, dY, W, null)" in md, "a dgrad table")
    md = render(dict(suite="r", n=32, device="NVIDIA H100"), [{k: v for k, v in row.items() if k != "op"}])
    check(" op " not in md and "convolution_backward" not in md and "F.conv2d" in md, "an fprop table names no op")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", help="suite file: 'name | shape' lines")
    ap.add_argument("--n", help="batch size for lines without their own N= ('own': every line has one)")
    ap.add_argument("--modes", help="precision:layout list, e.g. fp16:nhwc,tf32:nchw")
    ap.add_argument("--out", default=os.path.join(HERE), help="directory of the results files (default bench/)")
    ap.add_argument("--convgen", default=".dev/convgen", help="cuda-tagged convgen binary")
    ap.add_argument("--op", default=os.environ.get("OP") or "fprop", help="fprop, dgrad or wgrad (env OP; default fprop)")
    ap.add_argument("--cache", help="tuning cache convgen reads and writes (default bench/suite-cache.json for fprop, "
                    "bench/grad-cache.json for the gradients)")
    ap.add_argument("--only", default=os.environ.get("ONLY"), help="comma list of shape names to run (env ONLY)")
    ap.add_argument("--time", default=os.environ.get("TIME"), help="convgen -time budget, e.g. 60s (env TIME)")
    ap.add_argument("--runs", type=int, default=int(os.environ.get("RUNS", MIN_RUNS)), help=f"timed runs (at least {MIN_RUNS})")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random inputs")
    ap.add_argument("--tune-timeout", type=int, default=int(os.environ.get("TUNE_TIMEOUT", 1800)), help="seconds before a convgen call is killed")
    ap.add_argument("--commit", help="convgen commit (default: $CONVGEN_COMMIT, else git rev-parse)")
    ap.add_argument("--driver", help="NVIDIA driver version, for the header")
    ap.add_argument("--driver-cuda", help="CUDA version the driver supports, for the header")
    ap.add_argument("--dry-run", action="store_true", help="parse the suite and print the convgen commands; no GPU")
    ap.add_argument("--self-check", action="store_true", help="check decoding, parsing and the table without a GPU")
    ap.add_argument("--table", metavar="ROWS.jsonl", help="rebuild the markdown of a results .jsonl (with -o)")
    ap.add_argument("-o", dest="table_out", help="with --table: the markdown file to write")
    args = ap.parse_args()
    args.op = (args.op or "fprop").lower()
    if args.cache is None:
        args.cache = "bench/suite-cache.json" if args.op == "fprop" else "bench/grad-cache.json"
    if args.self_check:
        return self_check()
    if args.table:
        if not args.table_out:
            ap.error("--table needs -o")
        return rebuild_table(args.table, args.table_out)
    if not (args.suite and args.n and args.modes):
        ap.error("--suite, --n and --modes are required")
    try:
        return run(args)
    except (UsageError, OSError) as e:
        print(f"suite.py: {e}", file=sys.stderr)
        return 2 if isinstance(e, UsageError) else 1


if __name__ == "__main__":
    sys.exit(main())
