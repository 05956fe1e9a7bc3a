#!/usr/bin/env python3
"""bench_attention.py - tilec's flash attention and GEMM on the GPU against
the peers, in one run. See bench/README.md for the command.

What it measures
  attention  tilec (examples/flash_attention.tile through the Python binding;
             seq_len, batch and heads dynamic, dim / is_causal / dtype bound
             with defines), torch SDPA with each backend forced
             (FLASH_ATTENTION, CUDNN_ATTENTION, EFFICIENT_ATTENTION), and the
             Triton FA2 forward kernel of triton_fa2.py (autotuned). Grid of
             the FlashAttention-3 paper: batch * seq_len = 16384,
             heads = 2048 / dim, dim 64 and 128, seq_len 512 .. 16384,
             causal and not, f16 and bf16. BSHD tensors (SDPA gets the
             [B, H, S, D] transposed view, which its kernels take as is).
             TFLOP/s = 4 * B * H * S^2 * D / t, half of that when causal,
             from the shape actually run. `--dims 96,256` adds the other
             head dims FlashAttention publishes (heads = 2048 // dim: 21 at
             dim 96, 8 at 256); triton_fa2 takes power-of-two dims only, so
             it does not run at dim 96 (its cells read "-").
  gemm       tilec (examples/gemm.tile) against torch.matmul, f16 and bf16,
             4096^3 and 8192^3; TFLOP/s = 2 M N K / t.
  layouts    (--layouts compact,bhsd,packed) tilec's flash attention on the
             same rows with strided inputs, no copy (the flagship declares
             strides (...)): `bhsd` passes q/k/v/out as .transpose(1, 2)
             views of [B, H, S, D] tensors, `packed` passes q/k/v as the
             .unbind(2) slices of one [B, S, 3, H, D] tensor (out compact).
             A table gives each layout's TFLOP/s and its ratio to compact
             from the same run.
  compile    tilec's front end (`tilec --emit=cuda`), a cold load (a fresh
             process, empty cache: front end + NVRTC + module load), a cache
             hit (another fresh process; bench/compile_times.py has the full
             table),
             and Triton's first call of its attention kernel in a fresh cache
             (one config, and the autotuned entry with all configs).

Every implementation is checked before it is timed: fresh random inputs, the
output poisoned with NaN (where the implementation writes into a given
tensor), and the result compared to a float32 torch reference (relative
error max|out - ref| / max|ref|; bounds below). A wrong result is reported,
not timed. Times are medians of >= 20 runs (CUDA events, L2 flushed before
each run, after warm-up).

--autotune: before tilec's attention rows of each (dtype, dim, causal), the
worker runs tilec.autotune over AUTOTUNE_SPACE (block_M, block_N, threads,
num_stages) at seq_len 4096 (--quick: the run's smallest seq_len), each
candidate checked against the float32 reference and timed with the same
Timer (fewer runs); configurations the compiler rejects (registers, shared
memory) are skipped and listed. Every row of that triple then runs the
chosen config, shown in the tables' "tilec config" column. The choice is
cached in autotune.json of the run's tilec cache (fresh each run), or in
--autotune-cache FILE to keep it between runs.

tilec runs in a child process (this script with --tilec-worker): its GPU
path is new, and a crash or a hang there (or a sticky CUDA error) must not
take the peers' numbers with it. A failed tilec row is reported as such; a
crashed worker is restarted at the next row.

Side by side: the worker times the attention peers of each compact row right
after tilec's, on the same inputs, so a row's ratios compare times taken
seconds apart. (Until 2026-11-24 every tilec row ran first and the peers
minutes later; on an H100 that let one row's ratio move by 10 % with the
GPU's clocks: bench/results/2026-11-24-nvidia-h100-session3-notes.md.)
--separate-peers restores that order (the peers in this process, after all
of tilec's rows), e.g. when a peer crashes the worker. --rounds N has tilec
and the peers take turns N times per row (each reports its median): a row's
figures move by 5-7 % between runs on an H100, so ratios near 1.0 need it.
"""

import argparse
import datetime
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from _common import rel_error, run_worker_rows, worker_loop, worker_start  # noqa: E402  (rel_error: also ba.rel_error)

# Triton's compile-time measurement needs a cold cache: one fresh directory for
# the whole run, set before anything imports triton.
if "--tilec-worker" not in sys.argv and not os.environ.get("BENCH_KEEP_TRITON_CACHE"):
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-triton-cache-")

ATTN_BOUND = {"f16": 1e-2, "bf16": 4e-2}     # of max|ref|; f16 kernels see ~1e-3, bf16 ~8e-3
GEMM_BOUND = {"f16": 4 * 2.0 ** -10, "bf16": 4 * 2.0 ** -7}  # 4 ulps of the output type
PEERS = ("sdpa-flash", "sdpa-cudnn", "sdpa-efficient", "triton")
AUTOTUNE_SPACE = {"block_M": [64, 128], "block_N": [64, 128], "threads": [128, 256],
                  "num_stages": [1, 2]}
IMPLS = ("tilec",) + PEERS


# ---------------------------------------------------------------- common ---

def torch_dtype(torch, name):
    return {"f16": torch.float16, "bf16": torch.bfloat16}[name]


def attn_flops(b, h, s, d, causal):
    f = 4.0 * b * h * s * s * d
    return f / 2 if causal else f


def attn_shape(seq, dim, tokens=16384, hidden=2048):
    """B, S, H, D; H = hidden // dim (dim 96: 21 heads, 2016 wide)."""
    return max(1, tokens // seq), seq, hidden // dim, dim  # B, S, H, D


def attn_reference(torch, q, k, v, causal):
    """float32 attention of BSHD q, k, v, computed a few heads at a time so
    the S x S scores stay under ~1 GiB."""
    bsz, seq, heads, dim = q.shape
    qf, kf, vf = (t.float().transpose(1, 2) for t in (q, k, v))   # B, H, S, D
    out = torch.empty((bsz, heads, seq, dim), device=q.device, dtype=torch.float32)
    chunk = max(1, (1 << 30) // (seq * seq * 4))
    mask = torch.ones((seq, seq), device=q.device, dtype=torch.bool).triu(1) if causal else None
    scale = 1.0 / math.sqrt(dim)
    for b in range(bsz):
        for h0 in range(0, heads, chunk):
            h1 = min(heads, h0 + chunk)
            s = torch.matmul(qf[b, h0:h1], kf[b, h0:h1].transpose(-1, -2)) * scale
            if causal:
                s.masked_fill_(mask, float("-inf"))
            out[b, h0:h1] = torch.matmul(torch.softmax(s, dim=-1), vf[b, h0:h1])
            del s
    return out.transpose(1, 2)


def estimate_ms(torch, fn):
    """fn's time in ms from three back-to-back runs after one more (the
    timers' first guess, which sizes their warm-up and run counts)."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(3):
        fn()
    end.record()
    torch.cuda.synchronize()
    return max(start.elapsed_time(end) / 3, 1e-3)


class Timer:
    """Median CUDA-event time of fn() in ms: warm-up, then >= min_runs runs
    (more while under rep_ms), each after an L2 flush (what
    triton.testing.do_bench does, with a guaranteed run count)."""

    def __init__(self, torch, min_runs=20, rep_ms=100.0, warmup_ms=25.0, max_runs=500):
        self.torch = torch
        self.min_runs, self.rep_ms, self.warmup_ms, self.max_runs = min_runs, rep_ms, warmup_ms, max_runs
        self.flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")

    def __call__(self, fn):
        torch = self.torch
        est = estimate_ms(torch, fn)
        for _ in range(min(int(self.warmup_ms / est), 100)):
            fn()
        n = max(self.min_runs, min(self.max_runs, int(self.rep_ms / est)))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        for i in range(n):
            self.flush.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)), n


class SustainedTimer:
    """Mean time of fn() in ms over back-to-back runs (no flush, no gaps)
    for rep_ms, after warmup_ms of the same: the steady state of a loop of
    launches, clocks and power included."""

    def __init__(self, torch, min_runs=20, rep_ms=1000.0, warmup_ms=1000.0):
        self.torch, self.min_runs, self.rep_ms, self.warmup_ms = torch, min_runs, rep_ms, warmup_ms

    def __call__(self, fn):
        torch = self.torch
        fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        runs = 0
        while time.perf_counter() - t0 < self.warmup_ms / 1e3 or runs < 3:
            fn()
            runs += 1
            if runs % 8 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        est = max((time.perf_counter() - t0) * 1e3 / runs, 1e-3)
        n = max(self.min_runs, int(self.rep_ms / est))
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / n, n


def short(e):
    """One line for tables and summaries: the first line of the message, and
    when that only introduces a log (NVRTC, cc), the log's first error."""
    text = [l.strip() for l in str(e).strip().splitlines() if l.strip()]
    line = text[0] if text else type(e).__name__
    if line.endswith(":"):
        first_err = next((l for l in text[1:] if "error" in l.lower()), None)
        if first_err:
            line += " " + first_err
    return ("%s: %s" % (type(e).__name__, line))[:400]


def first_error(text):
    """short() for a message kept as text (autotune's table)."""
    return short(text).split(": ", 1)[1]


def find_tilec_cli(args):
    if args.tilec_cli:
        return args.tilec_cli
    cands = []
    lib = os.environ.get("TILEC_LIBRARY")
    if lib:
        d = lib if os.path.isdir(lib) else os.path.dirname(lib)
        cands.append(os.path.join(d, "..", "bin", "tilec"))
    if os.environ.get("TILEC_BUILD_DIR"):
        cands.append(os.path.join(os.environ["TILEC_BUILD_DIR"], "bin", "tilec"))
    cands.append(os.path.join(ROOT, "build", "bin", "tilec"))
    for c in cands:
        if os.path.exists(c):
            return os.path.normpath(c)
    return shutil.which("tilec")


# ------------------------------------------------------- the tilec worker ---

def worker_main(spec_path):
    """Runs the tilec rows listed in the JSON file spec_path, one result line
    ("RESULT <json>") per row on stdout, flushed as it goes."""
    w = worker_start(spec_path, Timer, short)
    if w is None:
        return 0
    spec, torch, tilec, ctx, timer, stream = w.spec, w.torch, w.tilec, w.ctx, w.timer, w.stream
    modules = {}
    tuned = {}

    def tune(row):
        """The autotune result for row's (dtype, dim, causal); once per worker
        (and per run through the JSON cache, should a worker restart)."""
        at = row["autotune"]
        combo = (row["dtype"], row["dim"], row["causal"], at["seq"])
        if combo not in tuned:
            try:
                tuned[combo] = tilec_autotune_attention(torch, tilec, ctx, row, at, stream, spec)
            except Exception as e:
                tuned[combo] = e
        if isinstance(tuned[combo], Exception):
            raise tuned[combo]
        return tuned[combo]

    def kernel(path, name, defines):
        key = (path, tuple(sorted(defines.items())))
        if key not in modules:
            modules[key] = ctx.load(path, defines=defines).kernel(name)
        return modules[key]

    def run_row(row):
        if row["kind"] == "attn":
            return tilec_attention(torch, timer, kernel, row, stream, tune if row.get("autotune") else None)
        if row["kind"] == "gemm":
            return tilec_gemm(torch, timer, kernel, row, stream)
        if row["kind"] == "compile":
            return tilec_compile_times(tilec, row)
        return None

    return worker_loop(w, run_row, short, detail=True)


def tilec_autotune_attention(torch, tilec, ctx, row, at, stream, spec):
    """tilec.autotune of the flash attention for row's (dtype, dim, causal)
    at seq_len at["seq"]: every candidate gets the same seeded inputs and a
    NaN-poisoned output, is checked against the float32 reference, and is
    timed with Timer (L2 flushed, fewer runs than the final timing)."""
    dim, seq, causal, dt = row["dim"], at["seq"], row["causal"], row["dtype"]
    base = {"dtype": dt, "dim": dim, "is_causal": causal}
    base.update(row.get("defines") or {})
    bsz, _, heads, _ = attn_shape(seq, dim)
    shape = (bsz, seq, heads, dim)
    tdt = torch_dtype(torch, dt)
    scale = math.log2(math.e) / math.sqrt(dim)

    def make_args():
        g = torch.Generator(device="cuda").manual_seed(spec["seed"] + 7)
        q, k, v = (torch.randn(shape, device="cuda", dtype=tdt, generator=g) for _ in range(3))
        return q, k, v, torch.full_like(q, float("nan")), scale

    q, k, v, _, _ = make_args()
    ref = attn_reference(torch, q, k, v, causal)
    del q, k, v

    def check(outputs, reference):
        err = rel_error(torch, outputs[3], ref)
        if not err <= ATTN_BOUND[dt]:
            raise AssertionError("error %.3g > %.0e" % (err, ATTN_BOUND[dt]))

    tune_timer = Timer(torch, min_runs=10, rep_ms=30.0, warmup_ms=10.0, max_runs=100)
    key = "fa:%s:d%d:causal%d:seq%d:B%dH%d" % (dt, dim, int(causal), seq, bsz, heads)
    res = tilec.autotune(ctx, os.path.join(ROOT, "examples", "flash_attention.tile"),
                         "flash_attention", base, at["space"], make_args, key,
                         cache_file=at.get("cache_file"), check=check, stream=stream,
                         timer=lambda launch: tune_timer(launch)[0],
                         log=lambda line: print("LOG " + line, flush=True))
    del ref
    torch.cuda.empty_cache()
    return res


def tilec_attention(torch, timer, kernel, row, stream, tune=None):
    dim, seq, causal, dt = row["dim"], row["seq"], row["causal"], row["dtype"]
    defines = {"dtype": dt, "dim": dim, "is_causal": causal}
    defines.update(row.get("defines") or {})
    tune_info = {}
    if tune is not None:
        t = tune(row)
        defines.update(t.best_config)
        tune_info = {"config": t.config_str, "tune": {
            "key": t.key, "seq": row["autotune"]["seq"], "cache_hit": t.cache_hit,
            "best_ms": t.best_ms, "elapsed_s": t.elapsed_s,
            "results": [{"config": " ".join("%s=%s" % kv for kv in r["config"].items()),
                         "status": r["status"], "ms": r["ms"],
                         "error": first_error(r["error"]) if r["error"] else None}
                        for r in t.results]}}
    t0 = time.perf_counter()
    k = kernel(os.path.join(ROOT, "examples", "flash_attention.tile"), "flash_attention", defines)
    load_s = time.perf_counter() - t0
    bsz, _, heads, _ = attn_shape(seq, dim)
    q, kk, v, out = attn_inputs(torch, row.get("layout", "compact"), bsz, seq, heads, dim,
                                torch_dtype(torch, dt))
    scale = math.log2(math.e) / math.sqrt(dim)
    k(q, kk, v, out, scale, stream=stream)
    torch.cuda.synchronize()
    err = rel_error(torch, out, attn_reference(torch, q, kk, v, causal))
    res = {"err": err, "load_s": load_s}
    res.update(tune_info)
    if not err <= ATTN_BOUND[dt]:
        res["error"] = "wrong result: error %.3g > %.0e" % (err, ATTN_BOUND[dt])
        return res
    run = k.bind(q, kk, v, out, scale, stream=stream)
    ms, n = timer(run)
    flops = attn_flops(bsz, heads, seq, dim, causal)
    res.update(ms=ms, runs=n, tflops=flops / ms * 1e-9)
    peers = row.get("peers") or []
    if peers:
        # The same inputs and reference, timed right after tilec's; with
        # rounds > 1, tilec and the peers take turns that many times and
        # each reports the median of its rounds (ms_rounds keeps them all).
        ref = attn_reference(torch, q, kk, v, causal)
        res["peers"] = {impl: peer_row(torch, timer, impl, q, kk, v, causal, ref, dt, flops) for impl in peers}
        rounds = [ms]
        for _ in range(int(row.get("rounds", 1)) - 1):
            rounds.append(timer(run)[0])
            for impl, r in res["peers"].items():
                if r and "ms" in r:
                    r.setdefault("ms_rounds", [r["ms"]]).append(peer_attention(torch, timer, impl, q, kk, v, causal,
                                                                              ref, dt)["ms"])
        if len(rounds) > 1:
            res.update(ms=statistics.median(rounds), ms_rounds=rounds)
            res["tflops"] = flops / res["ms"] * 1e-9
            for r in res["peers"].values():
                if r and "ms_rounds" in r:
                    r["ms"] = statistics.median(r["ms_rounds"])
                    r["tflops"] = flops / r["ms"] * 1e-9
    return res


def peer_row(torch, timer, impl, q, k, v, causal, ref, dt, flops):
    """One peer's result for an attention row: None where it does not apply
    (triton_fa2 needs a power-of-two head dim), else peer_attention's with
    TFLOP/s, or the error."""
    if impl == "triton" and q.shape[-1] & (q.shape[-1] - 1):
        return None
    try:
        r = peer_attention(torch, timer, impl, q, k, v, causal, ref, dt)
        if "ms" in r:
            r["tflops"] = flops / r["ms"] * 1e-9
    except Exception as e:
        r = {"error": short(e)}
        torch.cuda.synchronize()
    return r


def attn_inputs(torch, layout, bsz, seq, heads, dim, dtype):
    """q, k, v, out as [B, S, H, D] tensors in the given layout (views, no
    copy): compact BSHD; bhsd: transpose(1, 2) views of [B, H, S, D]
    tensors; packed: q/k/v the unbind(2) slices of one [B, S, 3, H, D]
    tensor, out compact. out is NaN-poisoned."""
    if layout == "compact":
        q, k, v = (torch.randn((bsz, seq, heads, dim), device="cuda", dtype=dtype) for _ in range(3))
        return q, k, v, torch.full_like(q, float("nan"))
    if layout == "bhsd":
        q, k, v, out = (torch.randn((bsz, heads, seq, dim), device="cuda", dtype=dtype).transpose(1, 2)
                        for _ in range(4))
        out.fill_(float("nan"))
        return q, k, v, out
    if layout == "packed":
        q, k, v = torch.randn((bsz, seq, 3, heads, dim), device="cuda", dtype=dtype).unbind(2)
        return q, k, v, torch.full((bsz, seq, heads, dim), float("nan"), device="cuda", dtype=dtype)
    raise ValueError("unknown layout %r" % layout)


def layout_table(attn_rows, layout_rows):
    """TFLOP/s of tilec per layout beside compact (same run), and the ratio."""
    layouts = sorted({r["layout"] for r in layout_rows})
    head = ["dtype", "dim", "causal", "seq", "compact"]
    for l in layouts:
        head += [l, l + "/compact"]
    lines = [head]
    by_key = {(r["dtype"], r["dim"], r["causal"], r["seq"], r["layout"]): r["res"].get("tilec")
              for r in layout_rows}
    for row in attn_rows:
        base = row["res"].get("tilec")
        line = [row["dtype"], str(row["dim"]), "yes" if row["causal"] else "no", str(row["seq"]), fmt_t(base)]
        for l in layouts:
            r = by_key.get((row["dtype"], row["dim"], row["causal"], row["seq"], l))
            line += [fmt_t(r), ratio(r, base)]
        lines.append(line)
    return lines


def gemm_reference(torch, a, b):
    return torch.matmul(a.float(), b.float())


def tilec_gemm(torch, timer, kernel, row, stream):
    n, dt = row["n"], row["dtype"]
    defines = {"dtype": dt}
    defines.update(row.get("defines") or {})
    k = kernel(os.path.join(ROOT, "examples", "gemm.tile"), "gemm", defines)
    a = torch.randn((n, n), device="cuda", dtype=torch_dtype(torch, dt))
    b = torch.randn((n, n), device="cuda", dtype=torch_dtype(torch, dt))
    c = torch.full((n, n), float("nan"), device="cuda", dtype=a.dtype)
    k(a, b, c, stream=stream)
    torch.cuda.synchronize()
    err = rel_error(torch, c, gemm_reference(torch, a, b))
    res = {"err": err}
    if not err <= GEMM_BOUND[dt]:
        res["error"] = "wrong result: error %.3g > %.0e" % (err, GEMM_BOUND[dt])
        return res
    ms, runs = timer(k.bind(a, b, c, stream=stream))
    res.update(ms=ms, runs=runs, tflops=2.0 * n ** 3 / ms * 1e-9)
    return res


def tilec_compile_times(tilec, row):
    """Cold load and cache hit, each in a FRESH process (compile_times.py's
    children): a cold load in a new process with an empty cache (front end
    + NVRTC + cuModuleLoad, context creation excluded), then a load in
    another new process on the filled cache. Measuring in this worker would
    be wrong: NVRTC reuses work done earlier in the same process, and the
    figure came out ~20x below what a user's first call waits
    (issue 12). bench/compile_times.py has the full table (repeats,
    context creation, NVRTC phases, every variant)."""
    import compile_times as ct
    path = os.path.join(ROOT, "examples", "flash_attention.tile")
    defines = {"dtype": "f16", "dim": "128", "is_causal": "false"}
    cache = tempfile.mkdtemp(prefix="bench-tilec-cold-")
    try:
        cold = ct.run_child({"what": "load", "kind": "cold", "cache": cache, "path": path,
                             "defines": defines})
        if "error" in cold:
            raise RuntimeError("cold load: " + cold["error"])
        hits = [ct.run_child({"what": "load", "kind": "hit", "cache": cache, "path": path,
                              "defines": defines}) for _ in range(3)]
        for h in hits:
            if "error" in h:
                raise RuntimeError("cache hit: " + h["error"])
        return {"cold_s": cold["load cold"][0], "cold_from_cache": False,
                "again_same_process_s": cold["load again (same process)"][0],
                "warm_s": statistics.median(h["load cache hit"][0] for h in hits),
                "warm_from_cache": True, "fresh_process": True}
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def progress_text(r):
    """One row's result for a progress line."""
    if r.get("error"):
        return "error: " + str(r["error"])[:200]
    if "ms" in r:
        return "%.4f ms%s%s" % (r["ms"], " %.1f TFLOP/s" % r["tflops"] if r.get("tflops") else "",
                                " [%s]" % r["config"] if r.get("config") else "")
    return "done"


def run_tilec_rows(rows, args, log):
    """Runs rows in worker processes; returns {row id: result}. A crash or a
    per-row timeout fails that row and the next worker resumes after it.
    Logs a progress line as each row starts and ends ([done/total])."""
    return run_worker_rows(rows, [sys.executable, os.path.abspath(__file__), "--tilec-worker"],
                           {"seed": args.seed, "min_runs": args.min_runs, "rep_ms": args.rep_ms},
                           args.tilec_row_timeout, log, progress_text, "bench-tilec-cache-",
                           "tilec worker died (exit %s) during this row: %s")


# ---------------------------------------------------------------- peers ---

def sdpa_backend(torch, name):
    from torch.nn.attention import SDPBackend
    attr = {"sdpa-flash": "FLASH_ATTENTION", "sdpa-cudnn": "CUDNN_ATTENTION",
            "sdpa-efficient": "EFFICIENT_ATTENTION"}[name]
    backend = getattr(SDPBackend, attr, None)
    if backend is None:
        raise RuntimeError("this torch has no SDPBackend.%s" % attr)
    return backend


def peer_attention(torch, timer, impl, q, k, v, causal, ref, dt):
    import torch.nn.functional as F
    if impl == "triton":
        import triton_fa2
        out = torch.full_like(q, float("nan"))
        fn = lambda: triton_fa2.attention(q, k, v, causal=causal, out=out)
        fn()
        torch.cuda.synchronize()
        got = out
    else:
        from torch.nn.attention import sdpa_kernel
        backend = sdpa_backend(torch, impl)
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))   # [B, H, S, D] views

        def fn():
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
        got = fn().transpose(1, 2)
        torch.cuda.synchronize()
    err = rel_error(torch, got, ref)
    res = {"err": err}
    if not err <= ATTN_BOUND[dt]:
        res["error"] = "wrong result: error %.3g > %.0e" % (err, ATTN_BOUND[dt])
        return res
    ms, n = timer(fn)
    res.update(ms=ms, runs=n)
    return res


def triton_compile_times(torch):
    """Triton's first call of the attention kernel in a fresh cache: one
    fixed config, then the autotuned entry (compiles and times every config)."""
    import triton_fa2
    dim, seq = 128, 1024
    bsz, _, heads, _ = attn_shape(seq, dim)
    q, k, v = (torch.randn((bsz, seq, heads, dim), device="cuda", dtype=torch.float16) for _ in range(3))
    res = {"cache_dir": os.environ.get("TRITON_CACHE_DIR")}
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    triton_fa2.attention_fixed(q, k, v, causal=False)
    torch.cuda.synchronize()
    res["fixed_first_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    triton_fa2.attention_fixed(q, k, v, causal=False)
    torch.cuda.synchronize()
    res["fixed_second_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    triton_fa2.attention(q, k, v, causal=True)
    torch.cuda.synchronize()
    res["tuned_first_s"] = time.perf_counter() - t0
    res["tuned_configs"] = len(triton_fa2.CONFIGS)
    return res


def front_end_time(cli):
    """Median wall time of `tilec --emit=cuda` on the flagship (5 runs)."""
    if not cli:
        return {"error": "no tilec CLI found (--tilec-cli, or $TILEC_LIBRARY/../bin/tilec)"}
    cmd = [cli, os.path.join(ROOT, "examples", "flash_attention.tile"), "--emit=cuda",
           "--target=sm_90a", "-D", "dim=128", "-D", "dtype=f16", "-o", os.devnull]
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if p.returncode != 0:
            return {"error": "`%s` exited %d: %s" % (" ".join(cmd), p.returncode,
                                                    (p.stderr.strip().splitlines() or [""])[0][:200])}
    return {"s": statistics.median(times), "cmd": " ".join(cmd)}


# ------------------------------------------------------------- reporting ---

def fmt_t(r):
    if r is None:
        return "-"
    if r.get("error"):
        return "FAIL"
    return "%.1f" % r["tflops"]


def ratio(a, b):
    if not a or not b or a.get("error") or b.get("error"):
        return "-"
    return "%.2f" % (a["tflops"] / b["tflops"])


def attention_table(rows):
    head = ["dtype", "dim", "causal", "seq", "B", "H"] + list(IMPLS) + ["tilec/" + p for p in PEERS]
    tuned = any((row["res"].get("tilec") or {}).get("config") for row in rows)
    if tuned:
        head.append("tilec config")
    lines = [head]
    for row in rows:
        r = row["res"]
        lines.append([row["dtype"], str(row["dim"]), "yes" if row["causal"] else "no", str(row["seq"]),
                      str(row["B"]), str(row["H"])] + [fmt_t(r.get(i)) for i in IMPLS]
                     + [ratio(r.get("tilec"), r.get(p)) for p in PEERS])
        if tuned:
            lines[-1].append((r.get("tilec") or {}).get("config") or "-")
    return lines


def autotune_report(rows):
    """Per tuned (dtype, dim, causal): the choice, its time at the tuning
    seq_len, and what was rejected (first row of each triple carries it)."""
    out, seen = [], set()
    for row in rows:
        t = (row["res"].get("tilec") or {}).get("tune")
        if not t or t["key"] in seen:
            continue
        seen.add(t["key"])
        res = t["results"]
        ok = sorted((x for x in res if x["status"] == "ok"), key=lambda x: x["ms"])
        bad = [x for x in res if x["status"] != "ok"]
        out.append("- %s: **%s** %.3f ms at seq_len %d (%d of %d candidates ran%s); %s" % (
            t["key"], row["res"]["tilec"]["config"], t["best_ms"], t["seq"], len(ok), len(res),
            ", cache hit" if t["cache_hit"] else ", tuned in %.1f s" % (t["elapsed_s"] or 0),
            "ranking: " + ", ".join("%s %.3f" % (x["config"], x["ms"]) for x in ok)))
        for x in bad:
            out.append("  - %s: %s: %s" % (x["config"], x["status"], x["error"]))
    return out


def gemm_table(rows):
    lines = [["dtype", "M=N=K", "tilec", "torch.matmul", "tilec/torch"]]
    for row in rows:
        r = row["res"]
        lines.append([row["dtype"], str(row["n"]), fmt_t(r.get("tilec")), fmt_t(r.get("torch")),
                      ratio(r.get("tilec"), r.get("torch"))])
    return lines


def text_table(lines):
    w = [max(len(l[i]) for l in lines) for i in range(len(lines[0]))]
    out = []
    for j, l in enumerate(lines):
        out.append("  ".join(c.rjust(w[i]) for i, c in enumerate(l)))
        if j == 0:
            out.append("  ".join("-" * x for x in w))
    return "\n".join(out)


def md_table(lines):
    out = ["| " + " | ".join(lines[0]) + " |", "|" + "---|" * len(lines[0])]
    out += ["| " + " | ".join(l) + " |" for l in lines[1:]]
    return "\n".join(out)


def failures(rows, impls):
    seen = {}
    for row in rows:
        for i in impls:
            r = row["res"].get(i)
            if r and r.get("error"):
                seen.setdefault((i, r["error"]), []).append(row)
    out = []
    for (i, err), rs in seen.items():
        out.append("- %s failed on %d row%s: %s" % (i, len(rs), "" if len(rs) == 1 else "s", err))
    return out


def plot(path, attn_rows, log):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:
        log("no plot: %s" % short(e))
        return False
    dtypes = sorted({r["dtype"] for r in attn_rows}, reverse=True)
    combos = sorted({(r["dim"], r["causal"]) for r in attn_rows})
    if not dtypes or not combos:
        return False
    fig, axes = plt.subplots(len(dtypes), len(combos), figsize=(4.2 * len(combos), 3.6 * len(dtypes)),
                             squeeze=False)
    colors = {impl: "C%d" % i for i, impl in enumerate(IMPLS)}
    handles = {}
    for a, dt in enumerate(dtypes):
        for c, (dim, causal) in enumerate(combos):
            ax = axes[a][c]
            sel = sorted((r for r in attn_rows if r["dtype"] == dt and r["dim"] == dim
                          and r["causal"] == causal), key=lambda r: r["seq"])
            for impl in IMPLS:
                xs = [r["seq"] for r in sel if r["res"].get(impl) and not r["res"][impl].get("error")]
                ys = [r["res"][impl]["tflops"] for r in sel
                      if r["res"].get(impl) and not r["res"][impl].get("error")]
                if xs:
                    handles[impl] = ax.plot(xs, ys, marker="o", color=colors[impl], label=impl,
                                            linewidth=2.5 if impl == "tilec" else 1.2)[0]
            ax.set_xscale("log", base=2)
            ax.set_title("%s, dim %d, %s" % (dt, dim, "causal" if causal else "non-causal"), fontsize=9)
            ax.set_xlabel("seq_len")
            ax.set_ylabel("TFLOP/s")
            ax.grid(alpha=0.3)
    shown = [i for i in IMPLS if i in handles]
    fig.legend([handles[i] for i in shown], shown, loc="lower center", ncol=max(1, len(shown)),
               fontsize=8)
    fig.suptitle("flash attention forward (batch*seq_len = 16384, heads = 2048/dim)")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    return True


# ------------------------------------------------------------------ main ---

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="small subset: dim 64 and 128, seq_len 1024 and 4096, f16, causal and not; "
                         "GEMM 4096 only")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--seqlens", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--causal", default="both", choices=("both", "yes", "no"))
    ap.add_argument("--gemm-sizes", default="4096,8192", help="'' for none")
    ap.add_argument("--gemm-dtypes", default="bf16,f16")
    ap.add_argument("--impls", default=",".join(IMPLS), help="subset of " + ",".join(IMPLS))
    ap.add_argument("--no-compile-times", action="store_true")
    ap.add_argument("--separate-peers", action="store_true",
                    help="time the attention peers after all of tilec's rows, in this process (the old order)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="side by side: tilec and the peers take turns this many times per row; each reports "
                         "the median of its rounds")
    ap.add_argument("--layouts", default="compact",
                    help="tilec attention input layouts, e.g. compact,bhsd,packed (strided views, "
                         "no copy; compared with compact in the same run)")
    ap.add_argument("--tilec-define", action="append", default=[], metavar="NAME=VALUE",
                    help="extra define for tilec's attention kernel (e.g. block_M=128)")
    ap.add_argument("--gemm-define", action="append", default=[], metavar="NAME=VALUE",
                    help="-D for tilec's gemm rows (e.g. threads=256, block_N=256)")
    ap.add_argument("--autotune", action="store_true",
                    help="autotune tilec's attention per (dtype, dim, causal) over %s at seq_len "
                         "4096 (--quick: the smallest seq_len) before timing" % AUTOTUNE_SPACE)
    ap.add_argument("--autotune-cache", metavar="FILE",
                    help="keep the autotune choices in FILE (default: the run's fresh tilec cache)")
    ap.add_argument("--tilec-cli", help="the tilec binary (default: next to $TILEC_LIBRARY)")
    ap.add_argument("--tilec-row-timeout", type=int, default=180)
    ap.add_argument("--min-runs", type=int, default=20)
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    ap.add_argument("--tilec-worker", metavar="SPEC", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.tilec_worker:
        return worker_main(args.tilec_worker)
    if args.quick:
        args.seqlens, args.dtypes, args.gemm_sizes = "1024,4096", "f16", "4096"
    if args.min_runs < 20:
        ap.error("--min-runs must be >= 20")

    t_start = time.perf_counter()
    log = lambda s: print("[%6.1fs] %s" % (time.perf_counter() - t_start, s), flush=True)
    sys.path.insert(0, HERE)
    import torch
    if not torch.cuda.is_available():
        print("bench_attention.py: no CUDA device visible to torch", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False   # float32 references are float32
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(args.seed)
    gpu = torch.cuda.get_device_name()
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    bad = [i for i in impls if i not in IMPLS]
    if bad:
        ap.error("unknown impl %s" % bad)
    extra = dict(d.split("=", 1) for d in args.tilec_define)
    log("GPU %s, torch %s, seed %d" % (gpu, torch.__version__, args.seed))

    attn_rows = []
    for dt in (x for x in args.dtypes.split(",") if x):
        for dim in (int(x) for x in args.dims.split(",") if x):
            for causal in {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]:
                for seq in (int(x) for x in args.seqlens.split(",")):
                    b, s, h, d = attn_shape(seq, dim)
                    attn_rows.append({"id": "attn-%s-d%d-%s-s%d" % (dt, dim, "c" if causal else "n", seq),
                                      "kind": "attn", "dtype": dt, "dim": dim, "causal": causal,
                                      "seq": seq, "B": b, "H": h, "defines": extra, "res": {}})
    layouts = [x.strip() for x in args.layouts.split(",") if x.strip()]
    bad_layouts = [x for x in layouts if x not in ("compact", "bhsd", "packed")]
    if bad_layouts:
        ap.error("unknown layout %s (compact, bhsd, packed)" % bad_layouts)
    layout_rows = [dict(r, id="%s-%s" % (r["id"], l), layout=l, res={})
                   for l in layouts if l != "compact" for r in attn_rows]
    if args.autotune:
        seqs = [int(x) for x in args.seqlens.split(",")]
        tune = {"seq": min(seqs) if args.quick else 4096, "space": AUTOTUNE_SPACE,
                "cache_file": os.path.abspath(args.autotune_cache) if args.autotune_cache else None}
        for r in attn_rows + layout_rows:
            r["autotune"] = tune
    gemm_extra = dict(d.split("=", 1) for d in args.gemm_define)
    gemm_rows = [{"id": "gemm-%s-%s" % (dt, n), "kind": "gemm", "dtype": dt, "n": int(n), "defines": gemm_extra,
                  "res": {}}
                 for dt in args.gemm_dtypes.split(",") for n in args.gemm_sizes.split(",") if n]

    # 1. compile times (Triton first: its cache is still empty).
    compile_info = {}
    if not args.no_compile_times:
        if "triton" in impls:
            try:
                compile_info["triton"] = triton_compile_times(torch)
            except Exception as e:
                compile_info["triton"] = {"error": short(e)}
            log("triton compile: %s" % compile_info["triton"])
        compile_info["front_end"] = front_end_time(find_tilec_cli(args))
        log("tilec front end: %s" % compile_info["front_end"])

    # 2. tilec, in worker processes.
    if "tilec" in impls:
        rows = [dict((k, v) for k, v in r.items() if k != "res") for r in attn_rows + layout_rows + gemm_rows]
        peers_here = [] if args.separate_peers else [i for i in impls if i != "tilec"]
        for r in rows:
            if r.get("kind") == "attn" and r.get("layout", "compact") == "compact" and peers_here:
                r["peers"], r["rounds"] = peers_here, args.rounds
        if not args.no_compile_times:
            rows.insert(0, {"id": "compile", "kind": "compile"})
        torch.cuda.empty_cache()
        log("tilec: %d rows in a worker process" % len(rows))
        res = run_tilec_rows(rows, args, log)
        for r in attn_rows + layout_rows + gemm_rows:
            r["res"]["tilec"] = res.get(r["id"], {"error": "no result"})
            cfg = r["res"]["tilec"].get("config")
            log("tilec %s: %s%s" % (r["id"], fmt_result(r["res"]["tilec"]),
                                    " [%s]" % cfg if cfg else ""))
        if "compile" in res:
            compile_info["tilec"] = res["compile"]

    # 3. the peers, in this process.
    timer = Timer(torch, min_runs=args.min_runs, rep_ms=args.rep_ms)
    peer_rows = len(attn_rows) + len(gemm_rows)
    for i_row, row in enumerate(attn_rows):
        from_worker = (row["res"].get("tilec") or {}).pop("peers", None) or {}
        for impl, r in from_worker.items():
            row["res"][impl] = r
            log("%s [%d/%d] %s: %s (timed right after tilec, in its worker)" % (
                impl, i_row + 1, peer_rows, row["id"], fmt_result(r) if r else "-"))
        if all(i == "tilec" or i in from_worker for i in impls):
            continue
        b, s, h, d = attn_shape(row["seq"], row["dim"])
        dt = torch_dtype(torch, row["dtype"])
        q, k, v = (torch.randn((b, s, h, d), device="cuda", dtype=dt) for _ in range(3))
        ref = attn_reference(torch, q, k, v, row["causal"])
        flops = attn_flops(b, h, s, d, row["causal"])
        for impl in impls:
            if impl == "tilec" or impl in from_worker:
                continue
            if impl == "triton" and d & (d - 1):
                row["res"][impl] = None  # "-": triton_fa2's tl.arange needs a power-of-two dim
                log("triton [%d/%d] %s: not run (head dim %d is not a power of two)" % (i_row + 1, peer_rows,
                                                                                     row["id"], d))
                continue
            try:
                r = peer_attention(torch, timer, impl, q, k, v, row["causal"], ref, row["dtype"])
                if "ms" in r:
                    r["tflops"] = flops / r["ms"] * 1e-9
            except Exception as e:
                r = {"error": short(e)}
                torch.cuda.synchronize()
            row["res"][impl] = r
            log("%s [%d/%d] %s: %s" % (impl, i_row + 1, peer_rows, row["id"], fmt_result(r)))
        del q, k, v, ref
    for i_gemm, row in enumerate(gemm_rows):
        n, dt = row["n"], torch_dtype(torch, row["dtype"])
        a, b = torch.randn((n, n), device="cuda", dtype=dt), torch.randn((n, n), device="cuda", dtype=dt)
        try:
            c = torch.matmul(a, b)
            err = rel_error(torch, c, gemm_reference(torch, a, b))
            r = {"err": err}
            if err <= GEMM_BOUND[row["dtype"]]:
                ms, runs = timer(lambda: torch.matmul(a, b))
                r.update(ms=ms, runs=runs, tflops=2.0 * n ** 3 / ms * 1e-9)
            else:
                r["error"] = "wrong result: error %.3g" % err
        except Exception as e:
            r = {"error": short(e)}
        row["res"]["torch"] = r
        log("torch.matmul [%d/%d] %s: %s" % (len(attn_rows) + i_gemm + 1, peer_rows, row["id"],
                                             fmt_result(r)))

    # 4. report.
    date = datetime.date.today().isoformat()
    slug = re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-")
    os.makedirs(args.out_dir, exist_ok=True)
    md_path = os.path.join(args.out_dir, "%s-%s.md" % (date, slug))
    png_path = os.path.join(args.out_dir, "%s-%s.png" % (date, slug))
    have_plot = plot(png_path, attn_rows, log)
    compile_lines = compile_report(compile_info)
    with open(md_path, "w") as f:
        f.write("# Benchmark %s, %s\n\n" % (date, gpu))
        f.write("torch %s, CUDA %s, seed %d, command: `%s`\n\n" % (
            torch.__version__, torch.version.cuda, args.seed, " ".join(sys.argv)))
        f.write("Flash attention forward, TFLOP/s (a FAIL cell is explained below the table). batch*seq_len = 16384, "
                "heads = 2048/dim, BSHD; median of >= %d runs.\n\n" % args.min_runs)
        f.write(md_table(attention_table(attn_rows)) + "\n\n")
        if layout_rows:
            f.write("tilec flash attention on strided views (no copy) against compact BSHD, same run, TFLOP/s "
                    "(bhsd: transpose(1, 2) views of [B, H, S, D]; packed: unbind(2) of [B, S, 3, H, D])\n\n"
                    + md_table(layout_table(attn_rows, layout_rows)) + "\n\n")
        if gemm_rows:
            f.write("GEMM, TFLOP/s\n\n" + md_table(gemm_table(gemm_rows)) + "\n\n")
        if compile_lines:
            f.write("Compile times\n\n" + "\n".join("- " + l for l in compile_lines) + "\n\n")
        tune_lines = autotune_report(attn_rows)
        if tune_lines:
            f.write("Autotune (tilec.autotune over %s)\n\n" % AUTOTUNE_SPACE
                    + "\n".join(tune_lines) + "\n\n")
        fl = failures(attn_rows + layout_rows + gemm_rows, list(IMPLS) + ["torch"])
        if fl:
            f.write("Failures\n\n" + "\n".join(fl) + "\n\n")
        errs = max_errors(attn_rows + gemm_rows)
        f.write("Largest relative error seen per implementation (checked before timing): %s\n"
                % ", ".join("%s %.2e" % kv for kv in errs.items()))
        if have_plot:
            f.write("\n![plot](%s)\n" % os.path.basename(png_path))
    with open(md_path[:-3] + ".json", "w") as f:
        json.dump({"gpu": gpu, "attention": attn_rows, "layouts": layout_rows, "gemm": gemm_rows,
                   "compile": compile_info},
                  f, indent=1, default=str)

    print()
    for l in compile_lines:
        print(l)
    for l in failures(attn_rows + layout_rows + gemm_rows, list(IMPLS) + ["torch"]):
        print(l)
    print("\nwrote %s%s (%.0f s)" % (md_path, " and " + png_path if have_plot else "",
                                     time.perf_counter() - t_start))
    if gemm_rows:
        print("\nGEMM, TFLOP/s\n" + text_table(gemm_table(gemm_rows)))
    tune_lines = autotune_report(attn_rows)
    if tune_lines:
        print("\nAutotune\n" + "\n".join(tune_lines))
    print("\nFlash attention forward on %s, TFLOP/s\n" % gpu + text_table(attention_table(attn_rows)))
    if layout_rows:
        print("\ntilec on strided views vs compact (same run), TFLOP/s\n"
              + text_table(layout_table(attn_rows, layout_rows)))
    return 0


def fmt_result(r):
    if r.get("error"):
        return "FAIL %s" % r["error"]
    return "%.1f TFLOP/s (%.3f ms, %d runs, err %.1e)" % (r["tflops"], r["ms"], r["runs"], r["err"])


def max_errors(rows):
    out = {}
    for row in rows:
        for impl, r in row["res"].items():
            if r and "err" in r and math.isfinite(r["err"]):
                out[impl] = max(out.get(impl, 0.0), r["err"])
    return out


def compile_report(info):
    lines = []
    fe = info.get("front_end")
    if fe:
        lines.append("tilec front end (`tilec --emit=cuda`, flagship dim 128 f16): "
                     + ("FAIL %s" % fe["error"] if "error" in fe else "%.3f s" % fe["s"]))
    t = info.get("tilec")
    if t:
        if t.get("error"):
            lines.append("tilec load: FAIL %s" % t["error"])
        else:
            lines.append("tilec cold load (fresh process, empty cache: front end + NVRTC + cuModuleLoad;"
                         " context creation excluded): %.3f s%s"
                         % (t["cold_s"], " (came from the cache?!)" if t["cold_from_cache"] else ""))
            if "again_same_process_s" in t:
                lines.append("tilec load of the same source again in that process, another empty cache"
                             " (NVRTC reuses work; not what a user sees first): %.3f s"
                             % t["again_same_process_s"])
            lines.append("tilec cache hit (fresh process, context creation excluded): %.4f s%s"
                         % (t["warm_s"], "" if t["warm_from_cache"] else " (NOT a cache hit)"))
            lines.append("(full table, repeated, with context creation and NVRTC's phases:"
                         " bench/compile_times.py)")
    tr = info.get("triton")
    if tr:
        if tr.get("error"):
            lines.append("triton compile: FAIL %s" % tr["error"])
        else:
            lines.append("triton first call, one config, fresh cache: %.3f s (second call %.4f s)"
                         % (tr["fixed_first_s"], tr["fixed_second_s"]))
            lines.append("triton first call, autotuned over %d configs (compile + tune): %.3f s"
                         % (tr["tuned_configs"], tr["tuned_first_s"]))
    return lines


if __name__ == "__main__":
    sys.exit(main())
