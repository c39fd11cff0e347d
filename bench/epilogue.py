#!/usr/bin/env python3
"""The fused-epilogue benchmark (issue 24), on the GPU machine; bench/epilogue.sh
is its front end (it finds .dev/convgen, .dev/COMMIT and the driver version).

For each case (a shape, a precision and layout, a chain; see CASES):
  1. tune the fused kernel: `convgen -shape S -precision P -layout L -epilogue
     CHAIN -o WORK/go/NAME -torch WORK/torch/NAME -cache CACHE -q -time T`
     (convgen reuses a current record of this GPU from CACHE, which we commit
     as bench/epilogue-cache.json, and tunes otherwise), then write the same
     kernel configuration without the chain: `convgen ... -pin WINNER -o
     WORK/go/NAME_plain -torch WORK/torch/NAME_plain` (a pinned run
     measures that one candidate and writes no cache record; WINNER less
     the knobs that exist only with a chain, CHAIN_KNOBS);
  2. in this process, on fresh random inputs (the residual, scale and shift
     too), check every contender's output against PyTorch's float64 conv2d
     followed by the chain in float64 (the fused module's chain()), relative
     L2 error within the precision's bound, the module outputs poisoned
     first (a NaN-filled block of the output's size freed just before the
     call, which PyTorch's caching allocator hands to the module's output);
  3. time, CUDA events around the call alone, median of --runs after a
     warm-up, L2 flushed (a 256 MB fill) before every run, under no_grad:
       fused    the convgen module with the chain fused (Conv2dFused)
       plain    the same convgen kernel configuration without the chain
       conv     PyTorch's conv2d alone (cuDNN, bias included)
       eager    PyTorch eager: conv2d, then the chain as separate ops
                (scale_shift as one torch.addcmul, residual and activations
                in place: y.add_(r), y.relu_(), ...)
       compile  torch.compile of the eager function (mode default; a
                failure is reported, not fatal)
     cudnn.benchmark on; TF32 allowed in convolutions for tf32 cases
     (PyTorch's default), channels_last for NHWC.
  4. write bench/results-epilogue-DATE-GPU-COMMIT.md (+ .jsonl): the times,
     fused/plain, eager/fused, compile/fused and conv/plain per case, and the
     issue's targets with PASS/FAIL.

usage: bench/epilogue.py [--cases a,b] [--time 15s] [--runs 50] [--work DIR]
                         [--cache bench/epilogue-cache.json] [--out bench]
                         [--convgen .dev/convgen] [--commit C] [--driver D]
       bench/epilogue.py --dry-run      (prints the cases and convgen commands)
       bench/epilogue.py --self-check   (no GPU, no PyTorch: cases, commands, table)
"""
import argparse, datetime, importlib.util, json, math, os, re, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import suite  # noqa: E402  (bench/suite.py: cuda_times)
ROOT = os.path.dirname(HERE)
BOUNDS = {"fp32": 1e-5, "3xtf32": 1e-5, "tf32": 1e-3, "fp16": 2e-3, "bf16": 1e-2}
FLUSH_BYTES = 256 << 20
MIN_RUNS = 20
FLAGSHIP = "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2"
# KernelBench level 2, 1_Conv2D_ReLU_BiasAdd: nn.Conv2d(64, 128, 3) (bias,
# no padding) on 128x64x128x128, then ReLU, then + bias (128, 1, 1): the
# chain relu,scale_shift with scale 1 and shift the added bias.
KERNELBENCH = "N=128,C=64,H=128,W=128,K=128,R=3,S=3"
TARGET_FUSED_PLAIN = 1.05
TARGET_COMPILE = 4.0
TARGET_RESNET_EAGER = 2.0


class Case:
    def __init__(self, name, group, shape, precision, layout, chain, bias_only=False):
        self.name, self.group, self.shape = name, group, shape
        self.precision, self.layout, self.chain = precision, layout, chain
        self.bias_only = bias_only  # scale_shift used as a bias add: scale 1, eager adds the bias

    def __repr__(self):
        return f"{self.name}: {self.shape} {self.precision} {self.layout} {self.chain}"


def resnet_3x3(path):
    """ResNet-50's 3x3 layers of a suite file ('name | shape' lines), N=32."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line or "|" not in line:
                continue
            name, shape = (t.strip() for t in line.split("|", 1))
            if "R=3,S=3" in shape:
                out.append((name, "N=32," + shape))
    return out


def cases(suite):
    cs = []
    for prec, lay in (("tf32", "nchw"), ("fp16", "nhwc")):
        for chain in ("scale_shift,relu", "residual,relu"):
            tag = chain.split(",")[0].replace("scale_shift", "ss")
            cs.append(Case(f"alexnet-{prec}{lay}-{tag}", "flagship", FLAGSHIP, prec, lay, chain))
    for name, shape in resnet_3x3(suite):
        cs.append(Case(f"resnet50-{name}-fp16nhwc", "resnet50", shape, "fp16", "nhwc", "scale_shift,relu"))
    cs.append(Case("kb2-conv2d-relu-biasadd-tf32nchw", "kernelbench", KERNELBENCH, "tf32", "nchw", "relu,scale_shift",
                   bias_only=True))
    return cs


def pyname(name):
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def fused_command(convgen, c, work, cache, tune_time):
    cmd = [convgen, "-shape", c.shape, "-precision", c.precision, "-layout", c.layout, "-epilogue", c.chain,
           "-o", os.path.join(work, "go", pyname(c.name)), "-pkg", "fused",
           "-torch", os.path.join(work, "torch", pyname(c.name)), "-cache", cache, "-q"]
    return cmd + (["-time", tune_time] if tune_time else [])


# Knobs a configuration has only because of its chain (wgmmarow and
# wgmmahalf's ResidualPrefetch, with a residual): the plain pin leaves them
# out (their value without the chain is 0, which IDs omit).
CHAIN_KNOBS = ("ResidualPrefetch",)


def plain_pin(winner):
    """The fused winner's ID without the knobs that exist only with a chain."""
    fam, _, knobs = winner.partition("/")
    kept = [kv for kv in knobs.split(",") if kv and kv.split("=", 1)[0] not in CHAIN_KNOBS]
    return fam + "/" + ",".join(kept)


def plain_command(convgen, c, work, cache, winner):
    return [convgen, "-shape", c.shape, "-precision", c.precision, "-layout", c.layout, "-pin", plain_pin(winner),
            "-o", os.path.join(work, "go", pyname(c.name) + "_plain"), "-pkg", "plain",
            "-torch", os.path.join(work, "torch", pyname(c.name) + "_plain"), "-cache", cache, "-q"]


def winner_id(godir):
    """The tuned kernel's candidate ID, from the Go package's report.json."""
    with open(os.path.join(godir, "report.json")) as f:
        return json.load(f)["winner"]


# ---------------------------------------------------------------- results

def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def ratio(a, b):
    return a / b if a and b and math.isfinite(a) and math.isfinite(b) else float("nan")


def fmt(x, spec=".4f"):
    return "—" if x is None or not math.isfinite(x) else format(x, spec)


def targets(rows):
    """The issue's targets: (what, value text, PASS/FAIL)."""
    out = []
    ok_rows = [r for r in rows if r.get("ok")]
    fp = [ratio(r["fused_ms"], r["plain_ms"]) for r in ok_rows]
    worst = max(fp) if fp else float("nan")
    out.append((f"fused vs the same convgen kernel without the chain, every case (<= {TARGET_FUSED_PLAIN}x)",
                f"worst {fmt(worst, '.3f')}x, geomean {fmt(geomean(fp), '.3f')}x",
                math.isfinite(worst) and worst <= TARGET_FUSED_PLAIN and len(ok_rows) == len(rows)))
    for r in rows:
        if r["group"] != "flagship":
            continue
        ev, cv = ratio(r.get("eager_ms"), r.get("fused_ms")), ratio(r.get("conv_ms"), r.get("plain_ms"))
        out.append((f"{r['name']}: vs eager chain >= the plain convolution's ratio",
                    f"{fmt(ev, '.2f')}x vs {fmt(cv, '.2f')}x", r.get("ok") and math.isfinite(ev) and ev >= cv))
        co = ratio(r.get("compile_ms"), r.get("fused_ms"))
        out.append((f"{r['name']}: vs torch.compile chain >= {TARGET_COMPILE}x", f"{fmt(co, '.2f')}x"
                    + ("" if r.get("compile_ms") else f" (compile: {r.get('compile_error', 'not run')})"),
                    r.get("ok") and math.isfinite(co) and co >= TARGET_COMPILE))
    rn = [r for r in rows if r["group"] == "resnet50"]
    if rn:
        g = geomean([ratio(r.get("eager_ms"), r.get("fused_ms")) for r in rn if r.get("ok")])
        out.append((f"ResNet-50 3x3 layers, scale_shift,relu, fp16 NHWC, vs eager chain: geomean >= {TARGET_RESNET_EAGER}x",
                    f"{fmt(g, '.2f')}x over {sum(1 for r in rn if r.get('ok'))} of {len(rn)} layers",
                    all(r.get("ok") for r in rn) and math.isfinite(g) and g >= TARGET_RESNET_EAGER))
    return out


def render(meta, rows):
    L = [f"# Fused epilogues: convgen against PyTorch eager and torch.compile ({meta.get('device', '?')})", "",
         "Made by `bench/epilogue.sh` (`bench/epilogue.py`). Times in ms: CUDA events around the call alone, "
         f"median of {meta.get('runs', '?')} runs after a warm-up, L2 flushed before each, under no_grad, in one "
         "process. fused: the convgen module with the chain fused; plain: the same convgen kernel configuration "
         "without the chain (pinned); conv: PyTorch's conv2d alone (cuDNN); eager: conv2d then the chain as "
         "separate PyTorch ops; compile: torch.compile (mode default) of the eager function. Each output was "
         "checked against PyTorch's float64 conv2d followed by the chain in float64 before timing (rel. L2 error, "
         "bound per precision). Ratios: fused/plain = fused time ÷ plain time; vs eager = eager ÷ fused; "
         "vs compile = compile ÷ fused; conv/plain = PyTorch conv2d ÷ convgen plain; traffic = the fused kernel's "
         "fewest bytes moved ÷ the plain one's (a residual is one more read of the output's size), the floor of "
         "fused/plain for a memory-bound kernel.", ""]
    for k in ("device", "driver", "cuda", "cudnn", "pytorch", "date", "commit", "cache", "tune_time"):
        L.append(f"- {k}: {meta.get(k, '?')}")
    L += ["", "| case | shape | precision, layout | chain | fused | plain | conv | eager | compile | fused/plain | "
          "vs eager | vs compile | conv/plain | traffic | fused error | winner |", "|" + "---|" * 16]
    for r in rows:
        if not r.get("ok"):
            L.append(f"| {r['name']} | {r['shape']} | {r['precision']} {r['layout']} | {r['chain']} | "
                     f"failed: {r.get('error', '?')} |" + " |" * 11)
            continue
        L.append(" | ".join([f"| {r['name']}", r["shape"], f"{r['precision']} {r['layout']}", r["chain"],
                             fmt(r["fused_ms"]), fmt(r["plain_ms"]), fmt(r.get("conv_ms")), fmt(r.get("eager_ms")),
                             fmt(r.get("compile_ms")) if r.get("compile_ms") else "failed",
                             fmt(ratio(r["fused_ms"], r["plain_ms"]), ".3f"),
                             fmt(ratio(r.get("eager_ms"), r["fused_ms"]), ".2f"),
                             fmt(ratio(r.get("compile_ms"), r["fused_ms"]), ".2f"),
                             fmt(ratio(r.get("conv_ms"), r["plain_ms"]), ".2f"), fmt(r.get("traffic"), ".2f"),
                             fmt(r.get("fused_error"), ".1e"), f"`{r.get('winner', '?')}` |"]))
    L += ["", "## Targets (issue 24)", "", "| target | measured | result |", "|---|---|---|"]
    for what, value, ok in targets(rows):
        L.append(f"| {what} | {value} | {'PASS' if ok else 'FAIL'} |")
    errs = [r for r in rows if r.get("compile_error")]
    if errs:
        L += ["", "torch.compile failures:", ""] + [f"- {r['name']}: {r['compile_error']}" for r in errs]
    return "\n".join(L) + "\n"


# ------------------------------------------------------------ the GPU side

class Bench:
    def __init__(self, runs, seed=1):
        import torch
        import torch.nn.functional as F
        self.torch, self.F = torch, F
        self.runs, self.seed = max(runs, MIN_RUNS), seed
        self.flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        torch.backends.cudnn.benchmark = True

    def set_tf32(self, allowed):
        torch = self.torch
        conv = getattr(torch.backends.cudnn, "conv", None)
        if conv is not None and hasattr(conv, "fp32_precision"):
            conv.fp32_precision = "tf32" if allowed else "ieee"
        else:
            torch.backends.cudnn.allow_tf32 = allowed

    def time_it(self, fn, warmup=5):
        return statistics.median(suite.cuda_times(self.torch, self.flush, self.runs, fn, warmup))

    def poisoned(self, fn, shape, dtype, fmt):
        """fn() right after a NaN block of the output's size was freed: the
        caching allocator gives it to fn's output, so a kernel that writes
        nothing leaves NaN."""
        torch = self.torch
        t = torch.full(shape, float("nan"), dtype=dtype, device="cuda").contiguous(memory_format=fmt)
        del t
        return fn()

    def measure(self, c, fused_dir, plain_dir):
        torch, F = self.torch, self.F
        fm, pm = load(fused_dir, "fused_" + pyname(c.name)), load(plain_dir, "plain_" + pyname(c.name))
        self.set_tf32(c.precision == "tf32")
        P = fm.META["problem"]
        dtype, fmt_ = fm.DTYPE, fm.MEMORY_FORMAT
        kw = dict(stride=tuple(P["stride"]), padding=tuple(P["padding"]), dilation=tuple(P["dilation"]), groups=P["groups"])
        args = (P["c"], P["k"], (P["r"], P["s"]))
        torch.manual_seed(self.seed)
        fused = getattr(fm, fm.META["class"])(*args, **kw, bias=P["bias"], device="cuda")
        plain = pm.Conv2d(*args, **kw, bias=P["bias"], device="cuda")
        plain.load_state_dict({k: v for k, v in fused.state_dict().items() if k in ("weight", "bias")})
        g = torch.Generator(device="cuda").manual_seed(self.seed + 1)
        x = torch.randn(P["n"], P["c"], P["h"], P["w"], device="cuda", generator=g).to(dtype).contiguous(memory_format=fmt_)
        out_shape = (P["n"], P["k"], P["p"], P["q"])
        ss, has_res = fm._SCALE_SHIFT, fm._RESIDUAL
        scale = shift = r = None
        with torch.no_grad():
            if ss:
                if c.bias_only:
                    fused.scale.fill_(1.0)
                else:
                    fused.scale.copy_(torch.rand(P["k"], device="cuda", generator=g) + 0.5)
                fused.shift.copy_(torch.rand(P["k"], device="cuda", generator=g) * 2 - 1)
                scale, shift = fused.scale, fused.shift
            if has_res:
                r = torch.randn(out_shape, device="cuda", generator=g).to(dtype).contiguous(memory_format=fmt_)
        w, b = fused.weight.detach(), None if fused.bias is None else fused.bias.detach()
        elements = fm.META["epilogue"]["elements"]
        sv = None if scale is None else scale.to(dtype).view(1, -1, 1, 1)
        hv = None if shift is None else shift.to(dtype).view(1, -1, 1, 1)

        def eager():
            y = F.conv2d(x, w, b, **kw)
            for e in elements:
                y = eager_element(torch, F, e, y, sv, hv, r, c.bias_only)
            return y

        def conv_only():
            return F.conv2d(x, w, b, **kw)

        call_fused = (lambda: fused(x, r)) if has_res else (lambda: fused(x))
        call_plain = lambda: plain(x)
        es = torch.empty(0, dtype=dtype).element_size()
        plain_bytes = es * (x.numel() + w.numel() + math.prod(out_shape)) + (0 if b is None else es * b.numel())
        extra_bytes = (8 * P["k"] if ss else 0) + (es * math.prod(out_shape) if has_res else 0)
        row = {"traffic": (plain_bytes + extra_bytes) / plain_bytes}
        with torch.no_grad():
            conv64 = F.conv2d(x.double(), w.double(), None if b is None else b.double(), **kw)
            ref = fm.chain(conv64, None if scale is None else scale.double(), None if shift is None else shift.double(),
                           None if r is None else r.double())
            bound = BOUNDS[c.precision]
            errs = {}
            for name, fn, want in (("fused", call_fused, ref), ("plain", call_plain, conv64), ("conv", conv_only, conv64),
                                   ("eager", eager, ref)):
                out = self.poisoned(fn, out_shape, dtype, fmt_)
                errs[name] = rel(out, want)
            del conv64
            bad = {k: v for k, v in errs.items() if not v <= bound}
            row["fused_error"], row["errors"] = errs["fused"], errs
            if bad:
                raise CheckError(f"outputs off the float64 reference (bound {bound:.0e}): "
                                 + ", ".join(f"{k} {v:.2e}" for k, v in bad.items()))
            row["fused_ms"] = self.time_it(call_fused)
            row["plain_ms"] = self.time_it(call_plain)
            row["conv_ms"] = self.time_it(conv_only)
            row["eager_ms"] = self.time_it(eager)
            try:
                # A fresh dynamo state per case: every case's eager() shares one
                # code object, and past the recompile limit dynamo would run it
                # eagerly without saying so.
                dynamo = getattr(torch, "_dynamo", None)
                if dynamo is not None and hasattr(dynamo, "reset"):
                    dynamo.reset()
                compiled = torch.compile(eager)
                out = compiled()
                e = rel(out, ref)
                row["errors"]["compile"] = e
                if not e <= bound:
                    raise CheckError(f"torch.compile's output: rel. error {e:.2e} over {bound:.0e}")
                row["compile_ms"] = self.time_it(compiled)
            except Exception as ex:  # reported in the table, not fatal
                row["compile_error"] = f"{type(ex).__name__}: {str(ex).splitlines()[0][:160] if str(ex) else ''}"
            del ref
        return row


class CheckError(RuntimeError):
    """A contender's output is off the float64 reference."""


def eager_element(torch, F, e, y, sv, hv, r, bias_only):
    """One chain element as a PyTorch user writes it after the convolution
    (y is the convolution's fresh output, so in-place ops are safe)."""
    op, a = e["op"], e.get("args", [])
    if op == "scale_shift":
        return y + hv if bias_only else torch.addcmul(hv, y, sv)
    if op == "residual":
        return y.add_(r, alpha=a[0]) if a[0] != 1 else y.add_(r)
    inplace = {"relu": lambda: y.relu_(), "relu6": lambda: F.relu6(y, inplace=True),
               "leaky_relu": lambda: F.leaky_relu_(y, a[0] if a else 0.01), "clamp": lambda: y.clamp_(a[0], a[1]),
               "sigmoid": lambda: y.sigmoid_(), "tanh": lambda: y.tanh_(), "gelu": lambda: F.gelu(y),
               "gelu_tanh": lambda: F.gelu(y, approximate="tanh"), "silu": lambda: F.silu(y, inplace=True),
               "hardswish": lambda: F.hardswish(y, inplace=True), "mish": lambda: F.mish(y, inplace=True)}
    return inplace[op]()


def rel(a, b):
    a, b = a.double(), b.double()
    if a.isnan().any():
        return float("nan")
    return ((a - b).norm() / b.norm()).item()


def load(dirpath, name):
    dirpath = os.path.abspath(dirpath)
    spec = importlib.util.spec_from_file_location(name, os.path.join(dirpath, "__init__.py"),
                                                  submodule_search_locations=[dirpath])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def gpu_slug(device):
    s = re.sub(r"^NVIDIA ", "", device or "gpu")
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower().split("-")[0] or "gpu"


def run(a, cs):
    import torch
    device = torch.cuda.get_device_name(0)
    date = datetime.datetime.now(datetime.timezone.utc)
    meta = {"device": device, "driver": a.driver or "?",
            "cuda": f"{torch.version.cuda} (PyTorch's)", "cudnn": str(torch.backends.cudnn.version()),
            "pytorch": torch.__version__, "date": date.strftime("%Y-%m-%dT%H:%M:%SZ"), "commit": a.commit,
            "cache": os.path.relpath(a.cache, ROOT), "tune_time": a.time, "runs": max(a.runs, MIN_RUNS)}
    stem = os.path.join(a.out, f"results-epilogue-{date:%Y-%m-%d}-{gpu_slug(device)}-{a.commit}")
    bench = Bench(a.runs)
    rows, t0 = [], time.time()
    for c in cs:
        row = {"name": c.name, "group": c.group, "shape": c.shape, "precision": c.precision, "layout": c.layout,
               "chain": c.chain, "ok": False}
        rows.append(row)
        godir = os.path.join(a.work, "go", pyname(c.name))
        try:
            t = time.time()
            step("tune", c, fused_command(a.convgen, c, a.work, a.cache, a.time), a.tune_timeout)
            row["winner"] = winner_id(godir)
            step("pin", c, plain_command(a.convgen, c, a.work, a.cache, row["winner"]), a.tune_timeout)
            row["tune_s"] = round(time.time() - t, 1)
            row.update(bench.measure(c, os.path.join(a.work, "torch", pyname(c.name)),
                                     os.path.join(a.work, "torch", pyname(c.name) + "_plain")))
            row["ok"] = True
        except Exception as ex:
            row["error"] = f"{type(ex).__name__}: {str(ex)[:300]}"
        print(f"epilogue: {c.name}: " + (f"fused {fmt(row.get('fused_ms'))} ms, plain {fmt(row.get('plain_ms'))}, "
                                         f"eager {fmt(row.get('eager_ms'))}, compile {fmt(row.get('compile_ms'))}"
                                         if row["ok"] else row["error"]) + f" ({time.time() - t0:.0f}s in all)",
              file=sys.stderr, flush=True)
        torch.cuda.empty_cache()
        with open(stem + ".jsonl", "w") as f:
            f.write(json.dumps({"meta": meta}) + "\n")
            for r in rows:
                f.write(json.dumps(r) + "\n")
        with open(stem + ".md", "w") as f:
            f.write(render(meta, rows))
    print(render(meta, rows))
    print(f"epilogue: wrote {stem}.md and .jsonl in {time.time() - t0:.0f}s", file=sys.stderr)
    return 0 if all(r["ok"] for r in rows) else 1


def step(what, c, cmd, timeout):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{what}: exit {p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}")


# ------------------------------------------------------------ self-check

def self_check(suite):
    fails = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            fails.append(what)

    cs = cases(suite)
    rn = [c for c in cs if c.group == "resnet50"]
    check(len([c for c in cs if c.group == "flagship"]) == 4, "four flagship cases (tf32 nchw, fp16 nhwc) x (scale_shift,relu, residual,relu)")
    check(len(rn) == 7 and all(c.shape.startswith("N=32,") and "R=3,S=3" in c.shape for c in rn),
          f"ResNet-50's seven 3x3 layers at N=32 ({len(rn)})")
    check(len({pyname(c.name) for c in cs}) == len(cs) and all(pyname(c.name).isidentifier() for c in cs),
          "case names make distinct Python package names")
    cmd = fused_command(".dev/convgen", cs[0], "/w", "bench/epilogue-cache.json", "15s")
    check(cmd[cmd.index("-epilogue") + 1] == "scale_shift,relu" and cmd[-2:] == ["-time", "15s"]
          and cmd[cmd.index("-torch") + 1] == "/w/torch/alexnet_tf32nchw_ss", "the fused command")
    pc = plain_command(".dev/convgen", cs[0], "/w", "c.json", "mma/TileK=48")
    check("-epilogue" not in pc and pc[pc.index("-pin") + 1] == "mma/TileK=48" and "-time" not in pc,
          "the plain command pins the winner, without the chain")
    w = "wgmmarow/Lag=1,ResidualPrefetch=1,RowsPerBlock=214,Slots=8,TileK=48,Warpgroups=2"
    pc = plain_command(".dev/convgen", cs[1], "/w", "c.json", w)
    check(pc[pc.index("-pin") + 1] == "wgmmarow/Lag=1,RowsPerBlock=214,Slots=8,TileK=48,Warpgroups=2"
          and plain_pin("wgmmahalf/Overlap=0,ResidualPrefetch=2") == "wgmmahalf/Overlap=0",
          "the plain pin drops ResidualPrefetch (a knob of residual chains only)")
    rows = []
    for i, c in enumerate(cs):
        r = {"name": c.name, "group": c.group, "shape": c.shape, "precision": c.precision, "layout": c.layout,
             "chain": c.chain, "ok": True, "fused_ms": 1.0, "plain_ms": 0.98, "conv_ms": 2.0, "eager_ms": 2.6,
             "compile_ms": 4.5, "fused_error": 1e-4, "winner": "x/A=1"}
        rows.append(r)
    t = {w: ok for w, _, ok in targets(rows)}
    check(all(t.values()), f"targets all PASS on good figures ({len(t)} targets)")
    rows[0]["fused_ms"] = 1.2
    rows[1]["compile_ms"] = None
    rows[1]["compile_error"] = "RuntimeError: x"
    rows[-1]["ok"], rows[-1]["error"] = False, "x"
    t = targets(rows)
    check(not t[0][2] and any("vs torch.compile" in w and not ok for w, _, ok in t), "a slow fused kernel, a failed compile and a failed case FAIL")
    md = render({"device": "NVIDIA H100 80GB HBM3", "runs": 50}, rows)
    check("| target | measured | result |" in md and "FAIL" in md and "failed: x" in md, "the table renders")
    check(gpu_slug("NVIDIA H100 80GB HBM3") == "h100" and gpu_slug("NVIDIA H200") == "h200", "the GPU slug")
    print("self-check: " + ("FAIL" if fails else "ok"))
    return 1 if fails else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", help="only these case names (comma-separated)")
    ap.add_argument("--suite", default=os.path.join(HERE, "suites", "resnet50.txt"))
    ap.add_argument("--time", default="15s", help="convgen -time per tuned case (default 15s)")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--work", default=os.path.join(ROOT, ".dev", "epilogue"))
    ap.add_argument("--cache", default=os.path.join(HERE, "epilogue-cache.json"))
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--convgen", default=os.path.join(ROOT, ".dev", "convgen"))
    ap.add_argument("--commit", default=os.environ.get("CONVGEN_COMMIT", "unknown"))
    ap.add_argument("--driver", default="")
    ap.add_argument("--tune-timeout", type=int, default=600)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--self-check", action="store_true")
    a = ap.parse_args()
    if a.self_check:
        return self_check(a.suite)
    cs = cases(a.suite)
    if a.cases:
        want = set(a.cases.split(","))
        unknown = want - {c.name for c in cs}
        if unknown:
            print(f"epilogue: unknown cases {sorted(unknown)}; known: {[c.name for c in cs]}", file=sys.stderr)
            return 2
        cs = [c for c in cs if c.name in want]
    if a.dry_run:
        for c in cs:
            print(c)
            print("  " + " ".join(fused_command(a.convgen, c, a.work, a.cache, a.time)))
            print("  " + " ".join(plain_command(a.convgen, c, a.work, a.cache, "WINNER")))
        return 0
    return run(a, cs)


if __name__ == "__main__":
    sys.exit(main())
