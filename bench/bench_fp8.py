#!/usr/bin/env python3
"""bench_fp8.py - tilec's FP8 gemm against torch._scaled_mm on one GPU.

    python3 bench/bench_fp8.py [--sizes 4096,8192] [--formats e4m3,e5m2_e4m3]
                               [--out-dtype bf16] [--define NAME=VALUE ...]
                               [--variants fp8,fp8-tma,f16] [--out-dir DIR]

C = (A @ B) * scale_a * scale_b with FP8 codes A [M, K] and B [K, N] given
the way torch._scaled_mm takes it: B column-major, i.e. Bt = B^T [N, K]
row-major (examples/gemm_fp8_nt.tile), per-tensor f32 scales, f32
accumulation, C in --out-dtype. Sizes are squares ("4096") or MxNxK
("8192x1024x8192").

Rows per size and format:
  torch     torch._scaled_mm(A, Bt.t(), scale_a, scale_b, out_dtype) (cuBLASLt)
  tilec-fp8     FP8 shared tiles, FP8 wgmma m64nNk32 (sm_90a): -D a_tile=a_dtype
                -D b_tile=b_dtype -D block_K=128, plus --define; M, N, K
                dynamic (tiles by cp.async)
  tilec-fp8-tma the same with -D K=<K> (a constant row length: the tiles
                come by TMA)
  tilec-f16     the portable path: the copies widen the codes to f16 tiles
                and the gemm runs f16 wgmma (the example's defaults)
Formats: e4m3 (A and B e4m3), e5m2_e4m3 (A e5m2, B e4m3: gradients times
weights); cuBLASLt has no e5m2 x e5m2, so --formats e5m2 times tilec only.

Every implementation is checked before it is timed against a float32
reference of the decoded codes (output NaN-poisoned first; bound 4 ulps of
the output type of max|ref|); a wrong result is reported, not timed. Times:
the median of >= 20 CUDA-event runs with the L2 flushed before each
(bench_attention.py's Timer). TFLOP/s = 2 M N K / t. Prints a table and,
with --out-dir, writes <date>-<gpu>-fp8.{md,json} there.

Needs PyTorch with float8 types and torch._scaled_mm (2.4+) and an sm_89+
GPU for torch's rows; tilec's FP8-tile rows need sm_90a.
"""

import argparse
import datetime
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

OUT_BOUND = {"f16": 4 * 2.0 ** -10, "bf16": 4 * 2.0 ** -7, "f32": 1e-5}
FORMATS = {"e4m3": ("f8e4m3", "f8e4m3"), "e5m2_e4m3": ("f8e5m2", "f8e4m3"), "e5m2": ("f8e5m2", "f8e5m2"),
           "e4m3_e5m2": ("f8e4m3", "f8e5m2")}


def parse_size(s):
    p = [int(x) for x in s.lower().split("x")]
    return (p[0], p[0], p[0]) if len(p) == 1 else tuple(p)


def torch_fp8(torch, name):
    return {"f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}[name]


def torch_out(torch, name):
    return {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[name]


def quantize(torch, x, fp8):
    """Per-tensor scale = amax / largest finite, codes = fp8(x / scale)."""
    largest = torch.finfo(fp8).max
    scale = (x.abs().max().float() / largest).clamp_min(1e-12)
    return (x / scale).to(fp8), scale.reshape(())


def scaled_mm(torch, a, bt, sa, sb, out_dtype):
    r = torch._scaled_mm(a, bt.t(), scale_a=sa, scale_b=sb, out_dtype=out_dtype)
    return r[0] if isinstance(r, tuple) else r  # torch 2.4 returned (out, amax)


def rel_error(torch, out, ref):
    out = out.float()
    if not torch.isfinite(out).all():
        return float("inf")
    return float((out - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--formats", default="e4m3,e5m2_e4m3")
    ap.add_argument("--out-dtype", default="bf16", choices=sorted(OUT_BOUND))
    ap.add_argument("--variants", default="fp8,fp8-tma,f16",
                    help="tilec rows: fp8 (FP8 tiles), fp8-tma (FP8 tiles, K bound: TMA), f16 (f16 tiles)")
    ap.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                    help="-D for the tilec-fp8 rows (e.g. block_N=256, num_stages=3)")
    ap.add_argument("--min-runs", type=int, default=20)
    ap.add_argument("--out-dir")
    args = ap.parse_args()

    import torch
    import tilec
    from bench_attention import Timer

    gpu = torch.cuda.get_device_name()
    ctx = tilec.Context(device="cuda", cache_dir=tempfile.mkdtemp(prefix="bench-fp8-cache-"))
    timer = Timer(torch, min_runs=args.min_runs)
    torch.cuda.set_stream(torch.cuda.Stream())
    stream = torch.cuda.current_stream().cuda_stream
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False  # the reference is a float32 matmul
    extra = dict(d.split("=", 1) for d in args.define)
    rows = []
    for size in args.sizes.split(","):
        M, N, K = parse_size(size)
        for fmt in args.formats.split(","):
            a_name, b_name = FORMATS[fmt]
            a, sa = quantize(torch, torch.randn((M, K), device="cuda"), torch_fp8(torch, a_name))
            bt, sb = quantize(torch, torch.randn((N, K), device="cuda"), torch_fp8(torch, b_name))
            ref = torch.matmul(a.float(), bt.float().t()) * (sa * sb)
            out_t = torch_out(torch, args.out_dtype)
            impls = [("torch", None)]
            base = {"a_dtype": a_name, "b_dtype": b_name, "out_dtype": args.out_dtype}
            variants = args.variants.split(",")
            for v in ("fp8", "fp8-tma"):
                if v in variants:
                    d = dict(base, a_tile=a_name, b_tile=b_name, block_K=128)
                    d.update(extra)
                    if v == "fp8-tma":
                        d["K"] = K
                    impls.append(("tilec-" + v, d))
            if "f16" in variants:
                impls.append(("tilec-f16", dict(base)))
            for impl, defines in impls:
                row = {"size": "%dx%dx%d" % (M, N, K), "format": fmt, "impl": impl, "out": args.out_dtype}
                c = torch.full((M, N), float("nan"), device="cuda", dtype=out_t)
                try:
                    if impl == "torch":
                        fn = lambda: scaled_mm(torch, a, bt, sa, sb, out_t)  # noqa: E731
                        c = fn()
                    else:
                        row["config"] = " ".join("%s=%s" % kv for kv in sorted(defines.items()))
                        k = ctx.load(os.path.join(ROOT, "examples", "gemm_fp8_nt.tile"),
                                     defines=defines).kernel("gemm_fp8_nt")
                        # FP8 tensors go in as their bytes (uint8 views); the kernel's dtype says
                        # how to read them.
                        au, bu = a.view(torch.uint8), bt.view(torch.uint8)
                        fsa, fsb = float(sa), float(sb)
                        k(au, bu, c, fsa, fsb, stream=stream)
                        fn = k.bind(au, bu, c, fsa, fsb, stream=stream)
                    torch.cuda.synchronize()
                    err = rel_error(torch, c, ref)
                    row["err"] = err
                    if not err <= OUT_BOUND[args.out_dtype]:
                        row["error"] = "wrong result: error %.3g > %.1e" % (err, OUT_BOUND[args.out_dtype])
                    else:
                        ms, n = timer(fn)
                        row.update(ms=ms, runs=n, tflops=2.0 * M * N * K / ms * 1e-9)
                except Exception as e:  # an unsupported combination, a compile error: reported
                    row["error"] = ("%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0]))[:300]
                rows.append(row)
                print("%-16s %-10s %-10s %s" % (row["size"], fmt, impl,
                                                 "%.3f ms  %.1f TFLOP/s  err %.1e" % (row["ms"], row["tflops"], row["err"])
                                                 if "ms" in row else row["error"]), flush=True)

    # The table: one line per (size, format), tilec's rows as a ratio of torch's TFLOP/s.
    tilec_impls = [i for i in ("tilec-fp8", "tilec-fp8-tma", "tilec-f16") if any(r["impl"] == i for r in rows)]
    lines = ["| M x N x K | format | out | torch._scaled_mm TFLOP/s | " +
             " | ".join("%s TFLOP/s | ratio" % i for i in tilec_impls) + " |",
             "|---|---|---|---|" + "---|---|" * len(tilec_impls)]
    keys = []
    for r in rows:
        if (r["size"], r["format"]) not in keys:
            keys.append((r["size"], r["format"]))
    for size, fmt in keys:
        by = {r["impl"]: r for r in rows if r["size"] == size and r["format"] == fmt}
        t = by.get("torch", {}).get("tflops")

        def cell(impl):
            r = by.get(impl)
            if r is None:
                return "-", "-"
            if "tflops" not in r:
                return "failed: " + r.get("error", "?")[:80], "-"
            return "%.1f" % r["tflops"], ("%.2fx" % (r["tflops"] / t)) if t else "-"

        tc = "%.1f" % t if t else ("failed: " + by.get("torch", {}).get("error", "?")[:80])
        cells = [c for i in tilec_impls for c in cell(i)]
        lines.append("| %s | %s | %s | %s | %s |" % (size, fmt, args.out_dtype, tc, " | ".join(cells)))
    table = "\n".join(lines)
    configs = sorted({r["config"] for r in rows if r.get("config")})
    print("\n" + gpu + "\n" + table + "\n\ntilec configs:\n  " + "\n  ".join(configs))
    if args.out_dir:
        os.makedirs(args.out_dir, exist_ok=True)
        stem = "%s-%s-fp8" % (datetime.date.today().isoformat(), gpu.lower().replace(" ", "-"))
        with open(os.path.join(args.out_dir, stem + ".md"), "w") as f:
            f.write("# FP8 gemm, %s\n\n`python3 bench/bench_fp8.py %s`\n\n%s\n\ntilec configs:\n\n%s\n"
                    % (gpu, " ".join(sys.argv[1:]), table, "\n".join("- `%s`" % c for c in configs)))
        with open(os.path.join(args.out_dir, stem + ".json"), "w") as f:
            json.dump({"gpu": gpu, "argv": sys.argv[1:], "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
