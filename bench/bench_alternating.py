#!/usr/bin/env python3
"""bench_alternating.py - the goal grids of issues 10 and 14, tilec and its
peer timed in alternation, launch by launch.

    python3 bench/bench_alternating.py [--attention] [--gemm] [--steps N]

bench_attention.py and bench_gemm.py time one implementation for ~100 ms,
then the next (--rounds repeats the sequence): each block of runs meets the
GPU in the state the previous block left (clock, temperature, power
history), and on an H100 at its 700 W limit a block's place in the sequence
moves a ratio by up to 2 % (bench/results/2026-11-24-nvidia-h100-session11-
notes.md, call 5). Here every step runs each implementation once, in an
order that rotates from step to step, each run after the same L2 flush and
between its own two CUDA events (the flush-timed regime of the other
scripts): the implementations share the GPU's state run for run. Each
implementation's figure is the median over the steps; the report gives the
interquartile range too.

Rows. --attention: examples/flash_attention.tile with its defaults for
(dtype, dim, causal) against SDPA's cuDNN backend (--peers adds
sdpa-flash), shapes as bench_attention.py (batch x seq = 16384 tokens,
heads x dim = 2048), dims 64 and 128, seq 2048-16384, f16 and bf16, causal
and not: issue 10's grid. --gemm: what tilec.gemm runs for the shape
(gemm.tile's defaults, or its split-K plan) against torch.matmul (cuBLAS),
default shapes 4096^3 and 8192^3 bf16: issue 14's squares. --fp8:
examples/gemm_fp8_nt.tile (f16 out) against torch._scaled_mm, 4096^3 and
8192^3 (--fp8-variant sk1=env.TILEC_STREAM_K:1 adds the stream-K build,
which FP8 GEMMs do not get by default). Every
implementation's output is checked against a float32 reference first
(outputs NaN-poisoned), as in the other scripts. One process; tilec's
kernels load before any timing starts, so no compile lands between runs.

Writes <out-dir>/<date>-<gpu>-alternating.{md,json} and prints the table.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

import _common  # noqa: E402
import bench_attention as ba  # noqa: E402
import bench_gemm  # noqa: E402

GEMM_BOUND = ba.GEMM_BOUND


class AlternatingTimer:
    """times({name: fn}) -> {name: [ms per step]}: warm-up (each fn for
    about warmup_ms, in turn), then steps until every fn has run min_steps
    times and rep_ms has passed (at most max_steps); a step runs every fn
    once, after an L2 flush each, in the order rotated by one per step."""

    def __init__(self, torch, min_steps=30, rep_ms=400.0, warmup_ms=50.0, max_steps=400):
        self.torch = torch
        self.min_steps, self.rep_ms, self.warmup_ms, self.max_steps = min_steps, rep_ms, warmup_ms, max_steps
        self.flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")

    def times(self, fns):
        torch = self.torch
        names = list(fns)
        est = {n: ba.estimate_ms(torch, fns[n]) for n in names}
        for _ in range(min(int(self.warmup_ms / max(est.values())), 100)):
            for n in names:
                fns[n]()
        steps = max(self.min_steps, min(self.max_steps, int(self.rep_ms / sum(est.values()))))
        events = {n: [] for n in names}
        for step in range(steps):
            k = step % len(names)
            for n in names[k:] + names[:k]:
                self.flush.zero_()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fns[n]()
                e.record()
                events[n].append((s, e))
        torch.cuda.synchronize()
        return {n: [s.elapsed_time(e) for s, e in events[n]] for n in names}


def summary(samples):
    q = statistics.quantiles(samples, n=4) if len(samples) >= 4 else [min(samples), 0, max(samples)]
    return {"ms": statistics.median(samples), "q1": q[0], "q3": q[2], "steps": len(samples)}


def attention_rows(args):
    rows = []
    for dt in args.dtypes:
        for dim in args.dims:
            for causal in {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]:
                for seq in args.seqlens:
                    rows.append({"kind": "attn", "dtype": dt, "dim": dim, "causal": causal, "seq": seq})
    return rows


def gemm_rows(shapes, kind="gemm", dtype="bf16"):
    rows = []
    for s in shapes:
        m, n, k = (int(x) for x in s.lower().split("x"))
        rows.append({"kind": kind, "dtype": dtype, "m": m, "n": n, "k": k})
    return rows


def parse_variants(specs):
    """--variant NAME=k:v,k:v[@PATH] -> {NAME: ({k: v}, PATH or None)}
    (values as given: the runtime takes -D text; PATH: another .tile, e.g.
    the committed version of an edited example; a key env.NAME sets that
    environment variable for the variant's own context and first launch,
    every kind of variant: load_variant)."""
    out = {}
    for spec in specs or []:
        name, _, rest = spec.partition("=")
        defs, _, path = rest.partition("@")
        out[name] = (dict(kv.split(":", 1) for kv in defs.split(",") if kv), os.path.abspath(path) if path else None)
    return out


def attention_fns(torch, ctx, row, peers, stream, variants):
    """{name: bound fn} for one attention row (tilec, its variants, the
    peers), each checked first."""
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel
    dt, dim, seq, causal = row["dtype"], row["dim"], row["seq"], row["causal"]
    bsz, _, heads, _ = ba.attn_shape(seq, dim)
    tdt = ba.torch_dtype(torch, dt)
    q, k, v, out = ba.attn_inputs(torch, "compact", bsz, seq, heads, dim, tdt)
    ref = ba.attn_reference(torch, q, k, v, causal)
    scale = math.log2(math.e) / math.sqrt(dim)
    errs, fns = {}, {}
    for name, (extra, path) in [("tilec", ({}, None))] + list(variants.items()):
        def first(kern):
            out.fill_(float("nan"))
            kern(q, k, v, out, scale, stream=stream)
        kern = _common.load_variant(ctx, path or os.path.join(ROOT, "examples", "flash_attention.tile"),
                                    "flash_attention", {"dtype": dt, "dim": dim, "is_causal": causal}, extra, first)
        torch.cuda.synchronize()
        errs[name] = ba.rel_error(torch, out, ref)
        fns[name] = kern.bind(q, k, v, out, scale, stream=stream)
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    for impl in peers:
        backend = ba.sdpa_backend(torch, impl)

        def fn(backend=backend):
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
        errs[impl] = ba.rel_error(torch, fn().transpose(1, 2), ref)
        fns[impl] = fn
    torch.cuda.synchronize()
    bad = {n: e for n, e in errs.items() if not e <= ba.ATTN_BOUND[dt]}
    return fns, errs, bad, ba.attn_flops(bsz, heads, seq, dim, causal)


def fp8_fns(torch, ctx, row, stream, variants):
    """examples/gemm_fp8_nt.tile (FP8 tiles, B as [N, K], f16 out: the kernel
    bench_gemm.py --fp8 rates) and its variants against torch._scaled_mm
    with the same per-tensor scales."""
    m, n, k = row["m"], row["n"], row["k"]
    a, b, sa, sb, ref = bench_gemm.fp8_inputs(torch, m, n, k)
    au, btu = a.view(torch.uint8), b.t().contiguous().view(torch.uint8)  # the FP8 codes; B as [N, K]
    path = os.path.join(ROOT, "examples", "gemm_fp8_nt.tile")
    fns, errs = {}, {}
    for name, (extra, vpath) in [("tilec", ({}, None))] + list(variants.items()):
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
        kern = _common.load_variant(ctx, vpath or path, "gemm_fp8_nt", {"out_dtype": "f16"}, extra,
                                    lambda kv: kv(au, btu, c, sa, sb, stream=stream))
        torch.cuda.synchronize()
        errs[name] = ba.rel_error(torch, c, ref)
        fns[name] = kern.bind(au, btu, c, sa, sb, stream=stream)
    bcol = b.t().contiguous().t()  # _scaled_mm wants B column-major
    scale_a, scale_b = torch.tensor(sa, device="cuda"), torch.tensor(sb, device="cuda")

    def peer():   # as bench_gemm.py times it (a fresh output each call)
        r = torch._scaled_mm(a, bcol, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.float16)
        return r[0] if isinstance(r, tuple) else r
    errs["torch"] = ba.rel_error(torch, peer(), ref)
    torch.cuda.synchronize()
    bad = {nm: e for nm, e in errs.items() if not e <= GEMM_BOUND["f16"]}
    fns["torch"] = peer
    return fns, errs, bad, 2.0 * m * n * k


def gemm_fns(torch, tilec, ctx, row, stream, sms, smem, variants):
    m, n, k, dt = row["m"], row["n"], row["k"], row["dtype"]
    tdt = ba.torch_dtype(torch, dt)
    a = torch.randn((m, k), device="cuda", dtype=tdt)
    b = torch.randn((k, n), device="cuda", dtype=tdt)
    ref = torch.matmul(a.float(), b.float())
    c = torch.full((m, n), float("nan"), device="cuda", dtype=tdt)
    c_torch = torch.full((m, n), float("nan"), device="cuda", dtype=tdt)
    g = tilec.splitk.Gemm(ctx, dt)
    kind, splits = g.plan(m, n, k, sms, smem)
    thin = kind in tilec.splitk.THIN_TILES
    row["plan"] = kind if kind == "gemm" else "%s/%d%s" % (kind, splits, "" if thin else "/2k")
    if kind != "gemm" and not thin:
        g = tilec.splitk.Gemm(ctx, dt, splitk_defines=tilec.splitk.SPLITK_TILES.get(kind, {}))
    g(a, b, c, splits=splits, stream=stream, fused=False, variant=kind if thin else None)
    if thin:
        fn = bench_gemm.thin_fn(g, kind, a, b, c, splits, stream)
    elif kind == "gemm":
        fn = g.gemm_kernel().bind(a, b, c, stream=stream)
    else:
        fn = bench_gemm.two_kernel_fn(g, a, b, c, splits, stream)

    fns = {"tilec": fn}
    errs = {}
    for name, (extra, path) in variants.items():   # gemm.tile (or PATH) with other defines, when the plan is gemm.tile
        if kind != "gemm":
            break
        cv = torch.full((m, n), float("nan"), device="cuda", dtype=tdt)
        kv = _common.load_variant(ctx, path or os.path.join(ROOT, "examples", "gemm.tile"), "gemm", {"dtype": dt},
                                  extra, lambda k_: k_(a, b, cv, stream=stream))
        torch.cuda.synchronize()
        if not name.endswith("!"):      # NAME! : timed only (a hand edit that drops work on purpose)
            errs[name] = ba.rel_error(torch, cv, ref)
        fns[name] = kv.bind(a, b, cv, stream=stream)

    def peer():
        torch.matmul(a, b, out=c_torch)
    peer()
    torch.cuda.synchronize()
    errs.update(tilec=ba.rel_error(torch, c, ref), torch=ba.rel_error(torch, c_torch, ref))
    bad = {nm: e for nm, e in errs.items() if not e <= GEMM_BOUND[dt]}
    fns["torch"] = peer
    return fns, errs, bad, 2.0 * m * n * k


def row_label(row):
    if row["kind"] == "attn":
        return "%s d%d %s %d" % (row["dtype"], row["dim"], "causal" if row["causal"] else "full", row["seq"])
    if row["kind"] == "fp8":
        return "fp8 %dx%dx%d (gemm_fp8_nt)" % (row["m"], row["n"], row["k"])
    return "%s %dx%dx%d (%s)" % (row["dtype"], row["m"], row["n"], row["k"], row.get("plan", "?"))


def table(results, peer_names, variant_names=()):
    """Markdown lines and the worst ratio of the first peer's time to
    tilec's (the defaults); variants get their own time and ratio columns."""
    mine = ["tilec"] + list(variant_names)
    ratio_cols = [(p, t) for t in mine for p in peer_names]
    lines = ["| row | " + " | ".join("%s ms [q1, q3]" % n for n in mine + list(peer_names))
             + " | tilec TFLOP/s | " + " | ".join("%s / %s" % (p, t) for p, t in ratio_cols) + " |",
             "|---|" + "---|" * (len(mine) + len(peer_names)) + "---|" + "---|" * len(ratio_cols)]
    worst = None
    for r in results:
        if "error" in r:
            lines.append("| %s | %s |%s" % (r["label"], r["error"],
                                            " |" * (len(mine) + len(peer_names) + len(ratio_cols))))
            continue
        t = r["times"]
        cell = lambda s: "%.4f [%.4f, %.4f]" % (s["ms"], s["q1"], s["q3"]) if s else "-"
        ratios = []
        for p, me in ratio_cols:
            if p in t and me in t:
                x = t[p]["ms"] / t[me]["ms"]
                ratios.append("%.3f" % x)
                if p == peer_names[0] and me == "tilec":
                    worst = x if worst is None else min(worst, x)
            else:
                ratios.append("-")
        lines.append("| %s | %s | %.1f | %s |" % (
            r["label"], " | ".join(cell(t.get(n)) for n in mine + list(peer_names)),
            r["flops"] / t["tilec"]["ms"] * 1e-9, " | ".join(ratios)))
    return lines, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attention", action="store_true", help="issue 10's flagship grid (default when neither is given)")
    ap.add_argument("--gemm", action="store_true", help="issue 14's bf16 squares")
    ap.add_argument("--gemm-dtypes", default="bf16", help="--gemm's dtypes (bf16, f16; --dtypes is attention's)")
    ap.add_argument("--fp8", action="store_true", help="issue 14's FP8 squares (gemm_fp8_nt.tile vs torch._scaled_mm)")
    ap.add_argument("--fp8-shapes", default="4096x4096x4096,8192x8192x8192")
    ap.add_argument("--fp8-variant", action="append", metavar="NAME=K:V,...[@PATH]",
                    help="also time gemm_fp8_nt.tile (or the .tile at PATH) with these defines, e.g. "
                         "sk1=env.TILEC_STREAM_K:1 (repeatable)")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--seqlens", default="2048,4096,8192,16384")
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--causal", choices=("both", "yes", "no"), default="both")
    ap.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192")
    ap.add_argument("--peers", default="sdpa-cudnn", help="attention peers (sdpa-cudnn, sdpa-flash), first one rated")
    ap.add_argument("--variant", action="append", metavar="NAME=K:V,...[@PATH]",
                    help="also time flash_attention.tile (or the .tile at PATH) with these defines; "
                         "a key env.NAME:V sets $NAME for the variant (repeatable)")
    ap.add_argument("--gemm-variant", action="append", metavar="NAME=K:V,...[@PATH]",
                    help="also time gemm.tile (or the .tile at PATH) with these defines where the plan is "
                         "gemm.tile (repeatable; a NAME ending in ! is timed without the check)")
    ap.add_argument("--min-steps", type=int, default=30)
    ap.add_argument("--rep-ms", type=float, default=400.0, help="time per row, all implementations together")
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args()
    if not args.attention and not args.gemm and not args.fp8:
        args.attention = True
    args.dims = [int(x) for x in args.dims.split(",") if x]
    args.seqlens = [int(x) for x in args.seqlens.split(",") if x]
    args.dtypes = [x for x in args.dtypes.split(",") if x]
    args.shapes = [x for x in args.shapes.split(",") if x]
    peers = [x for x in args.peers.split(",") if x]
    variants, gemm_variants = parse_variants(args.variant), parse_variants(args.gemm_variant)
    fp8_variants = parse_variants(args.fp8_variant)

    import torch
    import tilec
    ctx = tilec.Context(device="cuda")
    torch.cuda.set_stream(torch.cuda.Stream())
    stream = torch.cuda.current_stream().cuda_stream
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    smem = 227 * 1024 if props.major >= 9 else 163 * 1024
    timer = AlternatingTimer(torch, min_steps=args.min_steps, rep_ms=args.rep_ms)
    t0 = time.time()

    def run(rows, make):
        out = []
        for row in rows:
            r = {"row": row}
            try:
                fns, errs, bad, flops = make(row)
                r.update(label=row_label(row), errs=errs, flops=flops)
                if bad:
                    r["error"] = "wrong result: " + ", ".join("%s %.3g" % kv for kv in bad.items())
                else:
                    samples = timer.times(fns)
                    r["times"] = {n: summary(s) for n, s in samples.items()}
                    r["samples"] = samples
            except Exception as e:  # noqa: BLE001 - a failing row is reported, the rest go on
                r.setdefault("label", row_label(row))
                r["error"] = ba.short(e)
                torch.cuda.synchronize()
            print("  " + r["label"] + ": " + (r.get("error") or " ".join(
                "%s %.4f" % (n, s["ms"]) for n, s in r["times"].items())), flush=True)
            out.append(r)
            torch.cuda.empty_cache()
        return out

    gpu = _common.gpu_name()
    text = ["# tilec against its peers, timed in alternation, %s" % gpu, "",
            "`python3 bench/bench_alternating.py %s` (%s, torch %s). Each step runs every implementation once "
            "(order rotated per step), each after a 256 MB L2 flush, between its own CUDA events; medians "
            "over the steps, [q1, q3] the interquartile range; ratios are peer time / tilec time."
            % (" ".join(sys.argv[1:]), time.strftime("%Y-%m-%d %H:%M"), torch.__version__), ""]
    results = {}
    if args.attention:
        res = run(attention_rows(args), lambda row: attention_fns(torch, ctx, row, peers, stream, variants))
        lines, worst = table(res, peers, list(variants))
        text += ["## Flash attention forward (examples/flash_attention.tile defaults)", ""] + lines
        text += ["", "Worst tilec / %s: %s" % (peers[0], "%.3f" % worst if worst else "-"), ""]
        results["attention"] = res
    if args.gemm:
        rows = [r for dt in args.gemm_dtypes.split(",") if dt for r in gemm_rows(args.shapes, dtype=dt)]
        res = run(rows, lambda row: gemm_fns(torch, tilec, ctx, row, stream, sms, smem, gemm_variants))
        lines, worst = table(res, ["torch"], list(gemm_variants))
        text += ["## GEMM (what tilec.gemm runs: gemm.tile defaults or its split-K plan)", ""] + lines
        text += ["", "Worst torch / tilec: %s" % ("%.3f" % worst if worst else "-"), ""]
        results["gemm"] = res
    if args.fp8:
        res = run(gemm_rows([x for x in args.fp8_shapes.split(",") if x], "fp8", "fp8"),
                  lambda row: fp8_fns(torch, ctx, row, stream, fp8_variants))
        lines, worst = table(res, ["torch"], list(fp8_variants))
        text += ["## FP8 GEMM (gemm_fp8_nt.tile defaults, f16 out, against torch._scaled_mm)", ""] + lines
        text += ["", "Worst torch / tilec: %s" % ("%.3f" % worst if worst else "-"), ""]
        results["fp8"] = res
    text.append("Elapsed %.0f s." % (time.time() - t0))
    os.makedirs(args.out_dir, exist_ok=True)
    stem = _common.result_stem(gpu, "alternating")
    for part in results.values():   # the per-step samples stay out of the JSON (its size)
        for r in part:
            r.pop("samples", None)
    _common.write_report(args.out_dir, stem, "\n".join(text), args, [], results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
