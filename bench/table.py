#!/usr/bin/env python3
"""Builds the benchmark's results file (markdown) from two JSON-lines files:
the flagship example's (.dev/example-alexnet: one line per convgen variant)
and bench/cudnn.py's (one line per PyTorch mode). bench/run.sh calls it.

usage: bench/table.py --convgen convgen.jsonl --pytorch pytorch.jsonl -o results.md
                      [--device ... --driver ... --cuda ... --date ... --commit ...]
                      [--shape N=256,...] [--sms 132] [--clock-mhz 1980] [--bandwidth 4.3e12]
"""
import argparse, json, math, re, sys

FLAGSHIP = "N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2"

# (label, convgen variant, PyTorch mode, target ratio PyTorch/convgen, precision of the roofline)
PAIRS = [
    ("strict FP32, NCHW", "fp32", "fp32", 2.5, "fp32"),
    ("TF32, NCHW", "tf32", "tf32", 8.0, "tf32"),
    ("TF32, NHWC", "tf32nhwc", "tf32-nhwc", 6.8, "tf32"),
    ("3xTF32, NCHW (vs PyTorch strict FP32: cuDNN's only accurate mode)", "tf32x3", "fp32", 5.4, "3xtf32"),
    ("FP16, NHWC", "fp16nhwc", "fp16-nhwc", 7.5, "fp16"),
    ("BF16, NHWC", "bf16nhwc", "bf16-nhwc", None, "bf16"),
    # PyTorch's faster TF32 path: torch.compile of the module (no issue target).
    ("TF32, NCHW, vs torch.compile", "tf32", "tf32-compile", None, "tf32"),
]
# Convgen variants that an older example binary may lack: without one in the
# convgen JSON, its pair is not a failure but a "no convgen kernel yet" row.
OPTIONAL = {"fp16nhwc", "bf16nhwc"}
# PyTorch modes without a convgen kernel yet.
EXTRAS = []
# Bytes of one element (input, filter, bias and output) per precision.
ELEMENT_BYTES = {"fp32": 4, "tf32": 4, "3xtf32": 4, "fp16": 2, "bf16": 2}
# Relative L2 error bound per precision, as problem.Precision.ErrorBound.
ERROR_BOUNDS = {"fp32": 1e-5, "tf32": 1e-3, "3xtf32": 1e-5, "fp16": 2e-3, "bf16": 1e-2}


def parse_shape(text):
    kv = {}
    for part in text.split(","):
        if part.strip():
            k, v = part.split("=")
            kv[k.strip().lower()] = v.strip()
    g = lambda k, d=None: int(kv.get(k, d))
    s = dict(n=g("n"), c=g("c"), h=g("h"), w=g("w"), k=g("k"), r=g("r"), s=g("s"), groups=g("groups", 1))
    s["sh"], s["sw"] = g("stride_h", kv.get("stride", 1)), g("stride_w", kv.get("stride", 1))
    s["ph"], s["pw"] = g("pad_h", kv.get("pad", 0)), g("pad_w", kv.get("pad", 0))
    s["dh"], s["dw"] = g("dilation_h", kv.get("dilation", 1)), g("dilation_w", kv.get("dilation", 1))
    s["bias"] = kv.get("bias", "true").lower() in ("1", "true", "yes", "on")
    s["p"] = (s["h"] + 2 * s["ph"] - s["dh"] * (s["r"] - 1) - 1) // s["sh"] + 1
    s["q"] = (s["w"] + 2 * s["pw"] - s["dw"] * (s["s"] - 1) - 1) // s["sw"] + 1
    return s


def read_jsonl(path, key):
    rows = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line.startswith("{"):
                continue  # not a result line (e.g. a warning)
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"table.py: {path}:{n}: {e}")
            if key in row:
                rows[row[key]] = row
    return rows


def cudnn_version(v):
    if v in (None, ""):
        return "?"
    try:
        v = int(v)
    except (TypeError, ValueError):
        return str(v)
    if v >= 90000:  # cuDNN 9: major*10000 + minor*100 + patch
        return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
    return f"{v // 1000}.{v % 1000 // 100}.{v % 100}"  # cuDNN 8 and older


def cuda_of_torch(version):
    m = re.search(r"\+cu(\d+)(\d)$", version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def short_e(x):
    """1e-05 → 1e-5."""
    return re.sub(r"e([-+])0*(\d)", r"e\1\2", f"{x:.0e}").replace("e+", "e")


def ms(row):
    if not row or not row.get("median_ms"):
        return None
    return f"{row['median_ms']:.3f} ({row['p10_ms']:.3f}–{row['p90_ms']:.3f})"


def err(row):
    e = row.get("rel_error") if row else None
    return "—" if e is None else f"{e:.1e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--convgen", required=True, help="JSON lines of .dev/example-alexnet")
    ap.add_argument("--pytorch", required=True, help="JSON lines of bench/cudnn.py")
    ap.add_argument("-o", "--out", required=True, help="markdown file to write")
    ap.add_argument("--shape", default=FLAGSHIP)
    ap.add_argument("--device", help="GPU name (default: from the JSON)")
    ap.add_argument("--driver", default="?", help="NVIDIA driver version")
    ap.add_argument("--cuda", help="CUDA version(s) (default: PyTorch's, from its version string)")
    ap.add_argument("--date", default="?", help="date of the run (UTC)")
    ap.add_argument("--commit", default="?", help="convgen commit measured")
    ap.add_argument("--sms", type=int, default=132, help="streaming multiprocessors")
    ap.add_argument("--clock-mhz", type=float, default=1980, help="SM clock for the peak, MHz")
    ap.add_argument("--tf32-factor", type=float, default=8.0, help="TF32 tensor-core peak as a multiple of the FP32 peak (sm_90: 2048 vs 256 FLOP per SM per clock, the datasheet dense rates)")
    ap.add_argument("--fp16-factor", type=float, default=16.0, help="FP16 tensor-core peak as a multiple of the FP32 peak (sm_90: 4096 vs 256 FLOP per SM per clock, the datasheet dense rates)")
    ap.add_argument("--bandwidth", type=float, default=4.3e12, help="memory bandwidth, B/s (measured device-to-device copy)")
    args = ap.parse_args()

    cg = read_jsonl(args.convgen, "variant")
    pt = read_jsonl(args.pytorch, "mode")
    anyrow = next(iter(pt.values()), {})
    device = args.device or anyrow.get("device") or next(iter(cg.values()), {}).get("device", "?")
    torch = anyrow.get("torch", "?")
    cuda = args.cuda or cuda_of_torch(torch) or "?"

    s = parse_shape(args.shape)
    flops = 2 * s["n"] * s["k"] * s["p"] * s["q"] * (s["c"] // s["groups"]) * s["r"] * s["s"]
    elems = (s["n"] * s["c"] * s["h"] * s["w"], s["k"] * (s["c"] // s["groups"]) * s["r"] * s["s"],
             s["k"] if s["bias"] else 0, s["n"] * s["k"] * s["p"] * s["q"])
    # Every tensor read or written once, in the precision's element size.
    nbytes = lambda prec: sum(elems) * ELEMENT_BYTES[prec]
    peak32 = args.sms * 256 * args.clock_mhz * 1e6
    # Peak multiple of the FP32 FFMA peak per precision: 3xTF32 does three
    # TF32 products per FP32-accurate product.
    factor = {"fp32": 1.0, "tf32": args.tf32_factor, "3xtf32": args.tf32_factor / 3, "fp16": args.fp16_factor, "bf16": args.fp16_factor}
    mem_floor = lambda prec: nbytes(prec) / args.bandwidth

    def floor_s(prec):
        return max(flops / (peak32 * factor[prec]), mem_floor(prec))

    lines = []
    w = lines.append
    w(f"# convgen vs PyTorch (cuDNN): AlexNet's first convolution on {device}")
    w("")
    w(f"- shape: `{args.shape}` ({flops / 1e9:.2f} GFLOP, {nbytes('fp32') / 1e6:.1f} MB moved at least "
      f"with 4-byte elements, {nbytes('fp16') / 1e6:.1f} MB with 2-byte ones)")
    w(f"- device: {device}")
    w(f"- driver: {args.driver}")
    w(f"- CUDA: {cuda}")
    w(f"- cuDNN: {cudnn_version(anyrow.get('cudnn'))}")
    w(f"- PyTorch: {torch}")
    w(f"- date (UTC): {args.date}")
    w(f"- convgen commit: {args.commit}")
    w("")
    w("| mode | convgen ms (p10–p90) | PyTorch ms (p10–p90) | ratio (PyTorch/convgen) | target ratio | met? "
      "| convgen TFLOP/s | of roofline | convgen error | PyTorch error |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    failures = 0
    extras = []
    for label, variant, mode, target, prec in PAIRS:
        c, p = cg.get(variant), pt.get(mode)
        if c is None and variant in OPTIONAL:
            extras.append((label, mode))
            continue
        name = f"{label} — convgen `{variant}`, PyTorch `{mode}`"
        c_ms = ms(c)
        if c is None:
            c_ms, failures = "not run", failures + 1
        elif not c.get("ok", True):
            c_ms, failures = f"FAILED: {c.get('error', 'check failed')}".replace("|", "/"), failures + 1
        elif c_ms is None:
            c_ms = "—"
        p_ms = ms(p) or "not run"
        ratio = met = tflops = roof = "—"
        if c and c.get("ok", True) and c.get("median_ms"):
            cm = c["median_ms"]
            tflops = f"{flops / (cm * 1e-3) / 1e12:.1f}"
            roof = f"{floor_s(prec) * 1e3 / cm:.0%}"
            if p and p.get("median_ms"):
                r = p["median_ms"] / cm
                ratio = f"{r:.2f}×"
                met = "—" if target is None else ("yes" if r >= target else "no")
        tgt = "—" if target is None else f"{target:g}×"
        w(f"| {name} | {c_ms} | {p_ms} | {ratio} | {tgt} | {met} | {tflops} | {roof} | {err(c)} | {err(p)} |")
    for label, mode in extras + EXTRAS:
        p = pt.get(mode)
        w(f"| {label} — PyTorch `{mode}` | no convgen kernel yet | {ms(p) or 'not run'} | — | — | — | — | — | — | {err(p)} |")
    w("")
    w("How the numbers are made:")
    w("")
    w("- Both sides are timed the same way: CUDA events around the convolution kernel alone, after warm-up, "
      "with the L2 cache flushed (a 256 MB memset on the same stream) before every timed run; "
      "the median and the p10–p90 range of the timed runs are shown.")
    w("- ratio = PyTorch median / convgen median; met? = ratio ≥ target ratio.")
    w(f"- FLOPs = 2·N·K·P·Q·(C/groups)·R·S = {flops:.4g} (P = {s['p']}, Q = {s['q']}); "
      f"convgen TFLOP/s = FLOPs / median.")
    w(f"- bytes = (N·C·H·W + K·(C/groups)·R·S + K + N·K·P·Q) × element size = "
      f"({elems[0]} + {elems[1]} + {elems[2]} + {elems[3]}) × 4 = {nbytes('fp32'):.4g} B for fp32, tf32 and 3xtf32, "
      f"× 2 = {nbytes('fp16'):.4g} B for fp16: every tensor read or written once.")
    w(f"- peak FP32 = SMs × 256 FLOP/clk × clock = {args.sms} × 256 × {args.clock_mhz:g} MHz = {peak32 / 1e12:.1f} TFLOP/s; "
      f"peak TF32 = {args.tf32_factor:g} × that = {factor['tf32'] * peak32 / 1e12:.1f} TFLOP/s; "
      f"peak 3xTF32 = {args.tf32_factor:g}/3 × that = {factor['3xtf32'] * peak32 / 1e12:.1f} TFLOP/s "
      "(three TF32 products per FP32-accurate product); "
      f"peak FP16 = {args.fp16_factor:g} × that = {factor['fp16'] * peak32 / 1e12:.1f} TFLOP/s "
      f"(dense tensor cores, FP32 accumulation: {256 * args.fp16_factor:g} vs 256 FLOP/SM/clk).")
    w(f"- floor = max(FLOPs / peak, bytes / bandwidth), bandwidth = {args.bandwidth / 1e12:.2f} TB/s "
      f"(measured device-to-device copy): {floor_s('fp32') * 1e3:.3f} ms (fp32), {floor_s('tf32') * 1e3:.3f} ms (tf32), "
      f"{floor_s('3xtf32') * 1e3:.3f} ms (3xtf32), {floor_s('fp16') * 1e3:.3f} ms (fp16 and bf16); "
      f"memory alone {mem_floor('fp32') * 1e3:.3f} ms with 4-byte elements, {mem_floor('fp16') * 1e3:.3f} ms with 2-byte ones.")
    w("- of roofline = floor / convgen median. The floor is that of the mode's own arithmetic. For fp16 and bf16 "
      "the `wgmmahalf` family runs FP16/BF16 tensor cores (m64nNk16); the `wgmma` family, which may also win for "
      "them, widens the 2-byte values exactly to FP32 and multiplies them on TF32 tensor cores (the same products, "
      "half the tensor-core rate), so with a `wgmma` winner the fraction is of a floor its arithmetic cannot reach.")
    # Winograd kernels do fewer multiplies than the direct convolution the
    # FLOPs above count: say how many, and their own rate.
    wino_flops = 2 * 16 * s["c"] * s["sh"] * s["sw"] * s["n"] * -(-s["p"] // 2) * -(-s["q"] // 2) * s["k"]
    for variant in dict.fromkeys(v for _, v, _, _, _ in PAIRS):
        c = cg.get(variant)
        if c and "winograd" in c.get("kernel", "") and c.get("ok", True) and c.get("median_ms"):
            own = wino_flops / (c["median_ms"] * 1e-3)
            w(f"- `{variant}` runs the `winograd` family ({c['kernel']}): the stride split into {s['sh']}×{s['sw']} phases, "
              f"each a 3×3 convolution done with Winograd F(2×2, 3×3), all in FP32 (FFMA/FADD). It does "
              f"2·16·C·{s['sh']}·{s['sw']}·N·⌈P/2⌉·⌈Q/2⌉·K = {wino_flops / 1e9:.2f} GFLOP of multiply-adds, "
              f"{flops / wino_flops:.2f}× fewer than the FLOPs above, so its TFLOP/s and of roofline are effective "
              f"rates (they can pass what the FFMA units do): on its own arithmetic it runs at {own / 1e12:.1f} TFLOP/s, "
              f"{own / peak32:.0%} of peak FP32.")
    by_bound = {}  # bound → precisions, in order of first appearance
    for prec in ("fp32", "3xtf32", "tf32", "fp16", "bf16"):
        by_bound.setdefault(ERROR_BOUNDS[prec], []).append(prec)
    bounds = ", ".join(f"{short_e(b)} for {' and '.join(ps)}" for b, ps in by_bound.items())
    w("- error = relative L2 error ‖out − ref‖ / ‖ref‖ against a float64 reference: convgen's over 4096 sampled "
      f"outputs (bound {bounds}), PyTorch's over every output.")
    w("")
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    if failures:
        print(f"table.py: {failures} convgen variant(s) failed or did not run; see {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
