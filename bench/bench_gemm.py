#!/usr/bin/env python3
"""bench_gemm.py - tilec's GEMMs against torch.matmul on the issue-14 grid, in
one run. See bench/README.md for the command.

What it measures, for every shape M x N x K of the grid and each dtype
(bf16, f16):
  gemm        examples/gemm.tile with its defaults (dtype only; the target
              picks the tile: 128 x 256 x 64 in 4 stages on sm_90a);
  splitk      examples/gemm_splitk.tile (64 x 128 tiles, one warpgroup) and
  splitk-m128 the same with block_M=128, threads=256 (and splitk-n64,
              128 x 64 tiles, when N <= 128): each at the split
              count tilec.splitk.choose_splits gives, half and twice that
              (at least 2 K tiles per split); only where split-K applies
              (gemm.tile's tiles do not fill the SMs, or the heuristic
              splits); split-K fused (gemm_splitk_fused, one launch: the
              last block of each tile adds the partials) under the label
              (splitk-m128/3), and the same tile and split count as the two
              kernels (gemm_splitk + splitk_reduce, what tilec.gemm runs)
              under the label's /2k form (splitk-m128/3/2k), both
              pre-bound, so one run compares them;
  thin/S      examples/gemm_thin.tile (C^T = B^T A^T: a 16-row A tile, so
              16 stages of B fit) over S K ranges, for M <= THIN_ROWS (16):
              one launch at S = 1, else partials + splitk_reduce (not in the
              plan yet: this column is how it is judged); thin-n128/S the
              same with 128 columns (256-byte rows of B, 12 stages on sm_90a,
              warp-specialized; tilec.splitk.THIN_TILES);
  plan        what tilec.gemm() runs for the shape (Gemm.plan: one of the
              above), the figure a user gets without choosing;
  --bound     adds gemm-bound and splitk-bound/S: M, N, K bound with -D
              (on sm_90a the copies with 16-byte aligned rows become TMA
              boxes; one compile per shape);
  torch       torch.matmul (cuBLAS).
The table gives, per row, every tilec variant's TFLOP/s, the best one and
its ratio to torch, and the plan's ratio to torch. --fp8 adds rows of
examples/gemm_fp8.tile (defaults: f8e4m3 x f8e4m3 -> f16; its f16 tiles
are not pipelined) and examples/gemm_fp8_nt.tile (its defaults: on sm_90a
FP8 tiles, the native kernel; the rows' plan) against
torch._scaled_mm (per-tensor scales) at 4096^3 and 8192^3 and the small-M
shapes.

Every variant is checked before it is timed: fresh random inputs, the
output poisoned with NaN, the result compared to a float32 torch product
(max|out - ref| / max|ref| <= 4 ulps of the output dtype); a wrong result is
reported, not timed. Times (--timing): "flush" (default),
bench_attention.Timer: CUDA events around each run, L2 flushed before it,
median of >= 20 runs -- every run starts cold and the GPU idles between
runs; "sustained": back-to-back runs for --sustained-ms after as long a
warm-up, total time / runs -- the steady state of a training loop, where
an H100 sits at its power limit and lowers its clock (a kernel's standing
against cuBLAS differs between the two: bench/results/
2026-11-24-nvidia-h100-session9-notes.md). TFLOP/s = 2 M N K / t.

The rows run in child processes (--worker): a crash, a hang (per-row
timeout) or a sticky CUDA error there fails that row only, and a fresh worker
takes the next rows. Each row's peer (torch) is timed in the same worker
right after tilec's variants, on the same GPU state; with --rounds N the
worker times the row's tilec variants and its peer N times in turn and
reports the medians. A failing peer is reported and skipped. Tables are
printed last and written with the GPU's name in the file names:
<out-dir>/<date>-<gpu>-gemm.md, .json, and .png (when matplotlib is there).
"""

import argparse
import datetime
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("BENCH_KEEP_TRITON_CACHE", "1")  # no Triton here: no cold cache to make
import bench_attention as ba  # noqa: E402  (Timer, rel_error, short, tables)
from _common import run_worker_rows, worker_loop, worker_start  # noqa: E402

# The issue-14 grid: large squares, a wide-K rectangle, ragged sizes (no
# dimension a multiple of 64), small M (decode; 4096 x 4096 too, where the
# plan's thin rule splits 8 ways), small N, large K with small M * N.
GRID = ["4096x4096x4096", "8192x8192x8192", "8192x1024x8192", "3000x5000x2000", "4001x3001x4999",
        "1x8192x8192", "16x8192x8192", "64x8192x8192", "128x8192x8192", "8192x64x8192",
        "512x512x65536", "1x4096x4096", "16x4096x4096"]
FP8_GRID = ["4096x4096x4096", "8192x8192x8192", "1x8192x8192", "16x8192x8192", "64x8192x8192", "128x8192x8192",
            "8192x64x8192"]
QUICK_GRID = ["4096x4096x4096", "3000x5000x2000", "16x8192x8192", "512x512x65536"]
BOUND = {"f16": 4 * 2.0 ** -10, "bf16": 4 * 2.0 ** -7}
# The split-K tiles are tilec.splitk.SPLITK_TILES's (the plan's own labels).


def parse_shape(s):
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)", s.strip())
    if not m:
        raise argparse.ArgumentTypeError("bad shape %r (want MxNxK)" % s)
    return tuple(int(x) for x in m.groups())


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def tflops(m, n, k, ms):
    return 2.0 * m * n * k / ms * 1e-9


# ------------------------------------------------------- the tilec worker ---

def split_candidates(tilec, m, n, k, sms, smem):
    """{label: [splits...]} of the split-K variants to try for this shape
    (splitk-n64 only for N <= 128, where 128 columns would be half empty)."""
    out = {}
    plain_tiles = -(-m // 128) * -(-n // (256 if smem >= 200 * 1024 else 128))
    for label, extra in tilec.splitk.SPLITK_TILES.items():
        if label == "splitk-n64" and n > 128:
            continue
        t = dict(tilec.splitk.SPLITK_DEFAULTS)
        t.update(extra)
        smem_block = (t["block_M"] + t["block_N"]) * t["block_K"] * 2 * t["num_stages"]
        per_sm = max(1, min(smem // smem_block, 2048 // t["threads"]))
        s = tilec.splitk.choose_splits(m, n, k, sms, t["block_M"], t["block_N"], t["block_K"], per_sm)
        if s == 1 and plain_tiles >= sms:
            continue  # split-K does not apply: the plain gemm fills the GPU
        k_tiles = -(-k // t["block_K"])
        cands = sorted({c for c in (s, max(2, s // 2), 2 * s) if 2 <= c <= max(2, k_tiles // 2)})
        if cands:
            out[label] = cands
    return out


def two_kernel_fn(g, a, b, c, splits, stream):
    """tilec.splitk.Gemm g's split-K as two bound launches (the partial
    products into g's workspace, then the reduction into c), one callable."""
    m, n = c.shape
    part, reduce = g.splitk_kernels()
    ws = g._workspace[:splits * m * n]
    p1 = part.bind(a, b, ws.view(splits, m, n), stream=stream)
    p2 = reduce.bind(ws.view(splits, m * n), c.view(m * n), stream=stream)

    def fn():
        p1()
        p2()
    return fn


def thin_fn(g, label, a, b, c, splits, stream):
    """gemm_thin (examples/gemm_thin.tile, the THIN_TILES build `label`)
    bound on g's workspace, and splitk_reduce after it for more than one
    split, one callable."""
    m, n = c.shape
    p3 = g.workspace_for(a, splits, m, n)
    launches = [g.thin_kernel(label).bind(a, b, p3, c, stream=stream)]
    if splits > 1:
        reduce = g.splitk_kernels("splitk")[1]
        launches.append(reduce.bind(p3.view(splits, m * n), c.view(m * n), stream=stream))

    def fn():
        for launch in launches:
            launch()
    return fn


def best_variant(variants):
    """The label of the fastest variant that ran, or None."""
    ok = {l: v for l, v in variants.items() if "ms" in v}
    return min(ok, key=lambda l: ok[l]["ms"]) if ok else None


def median_of_rounds(entries, m, n, k):
    """One variant's (or the peer's) result over a row's rounds: the median
    ms (TFLOP/s recomputed) with every round's ms in "rounds"; the first
    failure as it is, if any round failed."""
    bad = [e for e in entries if not e or "ms" not in e]
    if bad:
        return bad[0] or {"error": "missing in a round"}
    out = dict(entries[0])
    mss = sorted(e["ms"] for e in entries)
    out["ms"] = mss[len(mss) // 2]
    out["rounds"] = [e["ms"] for e in entries]
    out["tflops"] = tflops(m, n, k, out["ms"])
    return out


def worker_main(spec_path):
    w = worker_start(spec_path, ba.Timer, ba.short)
    if w is None:
        return 0
    torch, tilec, ctx, timer, stream = w.torch, w.tilec, w.ctx, w.timer, w.stream
    if w.spec.get("timing") == "sustained":
        timer = ba.SustainedTimer(torch, rep_ms=w.spec["sustained_ms"], warmup_ms=w.spec["sustained_ms"])
    rounds = max(1, int(w.spec.get("rounds", 1)))
    # --splitk-tile: more split-K tiles to time beside the plan's (the
    # candidates come from tilec.splitk.SPLITK_TILES; the plan's rule
    # picks only its own three labels).
    tilec.splitk.SPLITK_TILES.update(w.spec.get("splitk_tiles", {}))
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    smem = 227 * 1024 if props.major >= 9 else 163 * 1024 if (props.major, props.minor) == (8, 0) else 99 * 1024
    gemms = {}

    def gemm_obj(dt, label):
        key = (dt, label)
        if key not in gemms:
            gemms[key] = tilec.splitk.Gemm(ctx, dt, splitk_defines=tilec.splitk.SPLITK_TILES.get(label, {}))
        return gemms[key]

    def one_round(row):
        if row["kind"] == "fp8":
            res = tilec_fp8(torch, tilec, ctx, timer, row, stream)
        else:
            res = tilec_row(torch, tilec, ctx, timer, row, stream, gemm_obj, sms, smem)
        res["torch"] = torch_row(torch, timer, row)
        return res

    def run_row(row):
        results = [one_round(row) for _ in range(rounds)]
        res, (m, n, k) = results[0], (row["m"], row["n"], row["k"])
        res["variants"] = {l: median_of_rounds([r["variants"].get(l) for r in results], m, n, k)
                           for l in res["variants"]}
        res["torch"] = median_of_rounds([r["torch"] for r in results], m, n, k)
        res["best"] = best_variant(res["variants"])
        return res

    return worker_loop(w, run_row, ba.short, empty_cache=True)


def tilec_row(torch, tilec, ctx, timer, row, stream, gemm_obj, sms, smem):
    m, n, k, dt = row["m"], row["n"], row["k"], row["dtype"]
    tdt = ba.torch_dtype(torch, dt)
    a = torch.randn((m, k), device="cuda", dtype=tdt)
    b = torch.randn((k, n), device="cuda", dtype=tdt)
    ref = torch.matmul(a.float(), b.float())
    c = torch.empty((m, n), device="cuda", dtype=tdt)
    variants = {}

    def measure(label, g, splits, fused=True, variant=None):
        c.fill_(float("nan"))
        try:
            g(a, b, c, splits=splits, stream=stream, fused=fused, variant=variant)
            torch.cuda.synchronize()
            err = ba.rel_error(torch, c, ref)
            if not err <= BOUND[dt]:
                variants[label] = {"error": "wrong result: error %.3g > %.0e" % (err, BOUND[dt]), "err": err}
                return
            if variant in tilec.splitk.THIN_TILES:
                fn = thin_fn(g, variant, a, b, c, splits, stream)
            elif splits == 1:
                fn = g.gemm_kernel().bind(a, b, c, stream=stream)
            elif fused:
                ws = g._workspace[:splits * m * n]
                counters = g.counter_buffer(a, g.counter_tiles(m, n))
                fn = g.fused_kernel().bind(a, b, ws.view(splits, m, n), c, counters, stream=stream)
            else:
                fn = two_kernel_fn(g, a, b, c, splits, stream)
            ms, runs = timer(fn)
            variants[label] = {"ms": ms, "runs": runs, "tflops": tflops(m, n, k, ms), "err": err}
        except Exception as e:
            variants[label] = {"error": ba.short(e)}
            if "CUDA_ERROR" in str(e) or "CUDA error" in str(e):
                raise

    measure("gemm", gemm_obj(dt, "gemm"), 1)
    for label, cands in split_candidates(tilec, m, n, k, sms, smem).items():
        for s in cands:
            measure("%s/%d" % (label, s), gemm_obj(dt, label), s)
            measure("%s/%d/2k" % (label, s), gemm_obj(dt, label), s, fused=False)
    if m <= tilec.splitk.THIN_ROWS:
        # examples/gemm_thin.tile (C^T = B^T A^T, 16-row A tiles) in each of
        # its builds: one launch where its tiles fill the SMs, else enough
        # splits for one block per SM, and twice that.
        for label, extra in tilec.splitk.THIN_TILES.items():
            # One block per SM (a thin tile's stages fill its shared memory).
            s1 = tilec.splitk.choose_splits(m, n, k, sms, block_M=16, block_N=int(extra.get("block_N", 64)))
            for s in sorted({1, s1, 2 * s1}):
                if s == 1 or -(-k // 64) // s >= 4:
                    measure("%s/%d" % (label, s), gemm_obj(dt, "gemm"), s, variant=label)
    if row.get("bound"):
        # M, N, K bound with -D: on sm_90a the copies become TMA boxes where
        # the row strides are 16-byte aligned (one compile per shape).
        dims = {"M": m, "N": n, "K": k}
        gb = tilec.splitk.Gemm(ctx, dt, defines=dims, splitk_defines=dims)
        measure("gemm-bound", gb, 1)
        for s in split_candidates(tilec, m, n, k, sms, smem).get("splitk", []):
            measure("splitk-bound/%d" % s, gb, s)
            measure("splitk-bound/%d/2k" % s, gb, s, fused=False)
    # The plan as tilec.gemm() runs it by default: split-K in two kernels (/2k).
    kind, s = gemm_obj(dt, "splitk").plan(m, n, k, sms, smem)
    if kind in tilec.splitk.THIN_TILES:   # gemm_thin.tile (+ splitk_reduce past one split)
        plan = "%s/%d" % (kind, s)
        if plan not in variants:
            measure(plan, gemm_obj(dt, "gemm"), s, variant=kind)
    else:
        plan = "gemm" if kind == "gemm" else "%s/%d/2k" % (kind, s)
        if plan not in variants:
            measure(plan, gemm_obj(dt, kind), s, fused=False)
    best = best_variant(variants)
    return {"variants": variants, "best": best, "plan": plan}


def fp8_inputs(torch, m, n, k):
    fp8 = torch.float8_e4m3fn
    a = (torch.randn((m, k), device="cuda") * 2).to(fp8)
    b = (torch.randn((k, n), device="cuda") * 2).to(fp8)
    sa, sb = 0.5, 0.25
    ref = torch.matmul(a.float(), b.float()) * (sa * sb)
    return a, b, sa, sb, ref


def tilec_fp8(torch, tilec, ctx, timer, row, stream):
    """gemm_fp8: examples/gemm_fp8.tile's defaults (FP8 codes widened to f16
    tiles, any target); gemm_fp8_nt: examples/gemm_fp8_nt.tile with FP8
    tiles (B given as [N, K], native FP8 wgmma on sm_90a, block_K 128), the
    kernel bench_fp8.py measures. The row's best is the faster."""
    m, n, k = row["m"], row["n"], row["k"]
    a, b, sa, sb, ref = fp8_inputs(torch, m, n, k)
    au, bu = a.view(torch.uint8), b.view(torch.uint8)  # the FP8 codes (docs/language.md, FP8)
    btu = b.t().contiguous().view(torch.uint8)         # [N, K] for gemm_fp8_nt
    nt_defs = {"out_dtype": "f16"}  # the rest follows the target: FP8 tiles, block_K 128 and shape choices on sm_90a
    variants = {}
    for label, file, name, defs, bt in (("gemm_fp8", "gemm_fp8.tile", "gemm_fp8", {}, bu),
                                        ("gemm_fp8_nt", "gemm_fp8_nt.tile", "gemm_fp8_nt", nt_defs, btu)):
        try:
            kern = ctx.load(os.path.join(ROOT, "examples", file), defines=defs).kernel(name)
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
            kern(au, bt, c, sa, sb, stream=stream)
            torch.cuda.synchronize()
            err = ba.rel_error(torch, c, ref)
            if not err <= BOUND["f16"]:
                variants[label] = {"error": "wrong result: error %.3g" % err, "err": err}
                continue
            ms, runs = timer(kern.bind(au, bt, c, sa, sb, stream=stream))
            variants[label] = {"ms": ms, "runs": runs, "tflops": tflops(m, n, k, ms), "err": err}
        except Exception as e:
            variants[label] = {"error": ba.short(e)}
            if "CUDA_ERROR" in str(e) or "CUDA error" in str(e):
                raise
    best = best_variant(variants)
    return {"variants": variants, "best": best, "plan": "gemm_fp8_nt"}


def run_tilec_rows(rows, args):
    """{row id: result}, each row in a worker process; a crash or a timeout
    fails that row and a fresh worker resumes after it."""
    return run_worker_rows(rows, [sys.executable, os.path.abspath(__file__), "--worker"],
                           {"seed": args.seed, "min_runs": args.min_runs, "rep_ms": args.rep_ms,
                            "timing": args.timing, "sustained_ms": args.sustained_ms, "rounds": args.rounds,
                            "splitk_tiles": dict(args.splitk_tile)},
                           args.row_timeout, log, summary, "bench-gemm-cache-",
                           "tilec worker died (exit %s): %s")


def summary(r):
    if r.get("error"):
        return "error: " + r["error"][:200]
    parts = []
    for label, v in r.get("variants", {}).items():
        parts.append("%s %s" % (label, "%.1f TF/s" % v["tflops"] if "tflops" in v else "ERROR " + v["error"][:80]))
    peer = r.get("torch") or {}
    parts.append("torch %s" % ("%.1f TF/s" % peer["tflops"] if "tflops" in peer else "ERROR"))
    return "; ".join(parts) + " | best %s, plan %s" % (r.get("best"), r.get("plan"))


# ------------------------------------------------------------------ peers ---

def torch_row(torch, timer, row):
    m, n, k, dt = row["m"], row["n"], row["k"], row["dtype"]
    try:
        if row["kind"] == "fp8":
            a, b, sa, sb, ref = fp8_inputs(torch, m, n, k)
            bcol = b.t().contiguous().t()  # _scaled_mm wants B column-major
            scale_a = torch.tensor(sa, device="cuda")
            scale_b = torch.tensor(sb, device="cuda")

            def fn():
                r = torch._scaled_mm(a, bcol, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.float16)
                return r[0] if isinstance(r, tuple) else r
            out = fn()
            bound = BOUND["f16"]
        else:
            tdt = ba.torch_dtype(torch, dt)
            a = torch.randn((m, k), device="cuda", dtype=tdt)
            b = torch.randn((k, n), device="cuda", dtype=tdt)
            ref = torch.matmul(a.float(), b.float())
            c = torch.empty((m, n), device="cuda", dtype=tdt)

            def fn():
                torch.matmul(a, b, out=c)
            fn()
            out = c
            bound = BOUND[dt]
        torch.cuda.synchronize()
        err = ba.rel_error(torch, out, ref)
        if not err <= bound:
            return {"error": "wrong result: error %.3g" % err, "err": err}
        ms, runs = timer(fn)
        return {"ms": ms, "runs": runs, "tflops": tflops(m, n, k, ms), "err": err}
    except Exception as e:
        return {"error": ba.short(e)}
    finally:
        torch.cuda.empty_cache()


# ----------------------------------------------------------------- tables ---

def fmt(v):
    if not v:
        return "-"
    if v.get("error"):
        return "FAILED"
    return "%.1f" % v["tflops"]


def ratio(t, p):
    if not t or not p or "ms" not in t or "ms" not in p:
        return "-"
    return "%.2fx" % (p["ms"] / t["ms"])


def table(rows):
    lines = [["dtype", "M x N x K", "torch", "gemm.tile", "split-K best", "best tilec", "best/torch",
              "plan", "plan/torch"]]
    for row in rows:
        r, peer = row.get("tilec") or {}, row.get("torch")
        vs = r.get("variants") or {}
        sk = {l: v for l, v in vs.items() if l.startswith("splitk") and "ms" in v}
        skb = min(sk, key=lambda l: sk[l]["ms"]) if sk else None
        best, plan = r.get("best"), r.get("plan")
        first = "gemm_fp8" if row["kind"] == "fp8" else "gemm"
        lines.append([
            "fp8 e4m3" if row["kind"] == "fp8" else row["dtype"], "%d x %d x %d" % (row["m"], row["n"], row["k"]),
            fmt(peer), fmt(vs.get(first)) if vs or not r.get("error") else "FAILED",
            ("%s %s" % (fmt(sk[skb]), skb)) if skb else ("-" if row["kind"] == "fp8" else "n/a"),
            best or ("FAILED" if r.get("error") else "-"),
            ratio(vs.get(best), peer) if best else "-",
            plan or "-", ratio(vs.get(plan), peer) if plan else "-"])
    return lines


def failures(rows):
    out = []
    for row in rows:
        r = row.get("tilec") or {}
        if r.get("error"):
            out.append("- tilec %s: %s" % (row["id"], r["error"]))
        for l, v in (r.get("variants") or {}).items():
            if v.get("error"):
                out.append("- tilec %s %s: %s" % (row["id"], l, v["error"]))
        if (row.get("torch") or {}).get("error"):
            out.append("- torch %s: %s" % (row["id"], row["torch"]["error"]))
    return out


def plot(path, rows):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:
        log("no plot: %s" % ba.short(e))
        return False
    groups = [g for g in ("bf16", "f16", "fp8") if any((r["kind"] == "fp8") == (g == "fp8") and
                                                       (g == "fp8" or r["dtype"] == g) for r in rows)]
    fig, axes = plt.subplots(len(groups), 1, figsize=(12, 3.4 * len(groups)), squeeze=False)
    for ax, g in zip(axes[:, 0], groups):
        sel = [r for r in rows if (r["kind"] == "fp8") == (g == "fp8") and (g == "fp8" or r["dtype"] == g)]
        xs = list(range(len(sel)))
        for off, key, color in ((-0.2, "best", "C0"), (0.2, "plan", "C1")):
            ys = []
            for r in sel:
                t = (r.get("tilec") or {})
                v = (t.get("variants") or {}).get(t.get(key)) or {}
                p = r.get("torch") or {}
                ys.append(p["ms"] / v["ms"] if "ms" in v and "ms" in p else 0)
            ax.bar([x + off for x in xs], ys, width=0.4, color=color,
                   label="best tilec / torch" if key == "best" else "tilec.gemm plan / torch")
        ax.axhline(1.0, color="k", linewidth=0.8)
        ax.axhline(0.9, color="k", linewidth=0.6, linestyle="--")
        ax.set_xticks(xs)
        ax.set_xticklabels(["%dx%dx%d" % (r["m"], r["n"], r["k"]) for r in sel], rotation=30, fontsize=7)
        ax.set_ylabel("ratio to torch")
        ax.set_title(g if g != "fp8" else "fp8 (gemm_fp8.tile vs torch._scaled_mm)", fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


# ------------------------------------------------------------------- main ---

def parse_splitk_tile(text):
    """NAME=K:V,... -> (NAME, {K: int V}) for --splitk-tile."""
    name, eq, body = text.partition("=")
    try:
        defines = dict((k.strip(), int(v)) for k, v in (kv.split(":") for kv in body.split(",") if kv.strip()))
    except ValueError:
        raise argparse.ArgumentTypeError("expected NAME=K:V,... with integer values, not %r" % text)
    if not name or not eq or not defines:
        raise argparse.ArgumentTypeError("expected NAME=K:V,..., not %r" % text)
    return name, defines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--shapes", default=",".join(GRID), help="MxNxK,... (default: the issue-14 grid)")
    ap.add_argument("--dtypes", default="bf16,f16")
    ap.add_argument("--fp8", action="store_true", help="add gemm_fp8.tile vs torch._scaled_mm rows")
    ap.add_argument("--fp8-shapes", default=",".join(FP8_GRID))
    ap.add_argument("--quick", action="store_true", help="4 shapes, bf16 only, fewer runs")
    ap.add_argument("--bound", action="store_true",
                    help="also gemm-bound and splitk-bound/S: M, N, K bound with -D (TMA on sm_90a; "
                         "a compile per shape)")
    ap.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    ap.add_argument("--min-runs", type=int, default=20)
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument("--row-timeout", type=int, default=300, help="seconds per tilec row")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timing", choices=("flush", "sustained"), default="flush",
                    help="flush: median of cold runs (L2 flushed); sustained: back-to-back runs at steady state")
    ap.add_argument("--sustained-ms", type=float, default=1000.0,
                    help="--timing sustained: warm-up and measured time per entry (ms)")
    ap.add_argument("--rounds", type=int, default=1, help="time each row's tilec variants and peer N times in turn")
    ap.add_argument("--splitk-tile", action="append", default=[], type=parse_splitk_tile, metavar="NAME=K:V,...",
                    help="also time gemm_splitk.tile with these defines over SPLITK_DEFAULTS, at the split counts "
                         "the plan's rule gives its tile and half and twice that (repeatable; a tile whose "
                         "module does not build shows its error in the row)")
    args = ap.parse_args()
    if args.worker:
        return worker_main(args.worker)
    if args.quick:
        args.shapes, args.dtypes, args.min_runs, args.rep_ms = ",".join(QUICK_GRID), "bf16", 10, 50.0
    shapes = [parse_shape(s) for s in args.shapes.split(",") if s.strip()]
    rows = [{"id": "%s-%dx%dx%d" % (dt, m, n, k), "kind": "gemm", "dtype": dt, "m": m, "n": n, "k": k,
             "bound": args.bound} for dt in args.dtypes.split(",") if dt for (m, n, k) in shapes]
    if args.fp8:
        rows += [{"id": "fp8-%dx%dx%d" % s, "kind": "fp8", "dtype": "f16", "m": s[0], "n": s[1], "k": s[2]}
                 for s in (parse_shape(x) for x in args.fp8_shapes.split(",") if x.strip())]
    import torch
    if not torch.cuda.is_available():
        print("bench_gemm.py needs a CUDA GPU (torch.cuda.is_available() is False)")
        return 1
    gpu = torch.cuda.get_device_name()
    log("%s, %d rows; torch %s" % (gpu, len(rows), torch.__version__))
    t0 = time.time()
    tres = run_tilec_rows(rows, args)
    for row in rows:
        row["tilec"] = tres.get(row["id"], {"error": "no result"})
        row["torch"] = row["tilec"].pop("torch", None) or {"error": "not timed (the row's worker failed)"}
    os.makedirs(args.out_dir, exist_ok=True)
    slug = re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-")
    base = os.path.join(args.out_dir, "%s-%s-gemm%s" % (datetime.date.today().isoformat(), slug,
                                                         "-sustained" if args.timing == "sustained" else ""))
    lines = table(rows)
    fails = failures(rows)
    with open(base + ".md", "w") as f:
        f.write("# GEMM grid, %s\n\n" % gpu)
        f.write("`python3 bench/bench_gemm.py %s` (%s, torch %s, %.0f s). TFLOP/s = 2MNK/t; ratios are "
                "torch time / tilec time; `plan` is what tilec.gemm() runs for the shape.\n\n"
                % (" ".join(sys.argv[1:]), datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                   torch.__version__, time.time() - t0))
        f.write(ba.md_table(lines) + "\n")
        if fails:
            f.write("\nFailures:\n\n" + "\n".join(fails) + "\n")
    with open(base + ".json", "w") as f:
        json.dump({"gpu": gpu, "torch": torch.__version__, "argv": sys.argv[1:], "rows": rows}, f, indent=1)
    png = plot(base + ".png", rows)
    log("wrote %s.md, .json%s" % (base, ", .png" if png else ""))
    if fails:
        print("\nFailures:\n" + "\n".join(fails))
    print("\nGEMM, TFLOP/s (%s)\n%s" % (gpu, ba.text_table(lines)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
