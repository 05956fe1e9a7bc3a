#!/usr/bin/env python3
"""bench_varlen.py - tilec's variable-length attention
(examples/varlen_attention.tile) on packed sequences of mixed lengths
against the ways PyTorch runs the same batch, and the paged KV cache of
examples/flash_decoding.tile against its contiguous cache (issue 13).

    python3 bench/bench_varlen.py [--quick] [--out-dir DIR]

Varlen rows: sequences of lengths 1..4097 mixed (seeded; 1, 2, 17, 129,
1000 and 4097 always among them) packed to --tokens tokens, THD layout,
heads = 2048 / dim, causal and not. Implementations:
  tilec-varlen           varlen_attention (cu_seqlens i32, max_seqlen_q)
  sdpa-flash-nested      SDPA FLASH on torch.nested jagged tensors (FA2's
                         varlen path inside PyTorch)
  fa2-varlen             flash_attn.flash_attn_varlen_func, when the
                         flash_attn package is installed
  sdpa-*-padded          SDPA on the batch padded to the longest sequence
                         (causal: FLASH and CUDNN, exact since every real
                         row sees only real keys; not causal: EFFICIENT and
                         CUDNN with a boolean key mask); the padding copies
                         are not timed, the work on padding is
TFLOP/s counts useful work only: sum over sequences of 4 L^2 H D (half when
causal), whatever an implementation spends on padding.

Paged rows: decoding (seqlen_q 1, batch 8, heads 32 over heads_kv 8,
dim 128) at KV length --kv-lens: flash_decoding_split + combine on the
contiguous cache (tilec-contiguous) and flash_decoding_paged_split +
combine on the same keys in shuffled pages of block_N tokens through an i32
block table (tilec-paged), the same num_split; goal: paged within 10% of
contiguous. GB/s = bytes of Q, K, V (at heads_kv) and O / time.

Each implementation's output is checked first (float32 reference; bounds
1e-2 f16, 4e-2 bf16 of max|ref|): a wrong result is reported, not timed.
Timing: bench_attention.Timer (CUDA events, L2 flushed before each run,
median). tilec and the peers run in two child processes (one's crash
cannot take the other's numbers). Output: one table, printed last and
written to <out-dir>/<date>-<gpu>-varlen.{md,json}.

--quick: dim 128 only, 16k tokens, one paged row, 10 runs per timing:
about a minute on an H100. --device cpu runs the tilec rows on the CPU back
end at small sizes with NumPy (float64 reference, no peers; what
tests/python/test_bench_varlen.py runs in CI).
"""

import argparse
import datetime
import math
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
BOUND = {"f16": 1e-2, "bf16": 4e-2}
CPU_BOUND = 5e-3   # f16 against float64 (the tests/numerics bound)
LOG2E = math.log2(math.e)
ANCHORS = (1, 4097, 2, 17, 1000, 129)   # always among the lengths (clipped to --max-len)


# ------------------------------------------------------ shapes and counts ---

def mixed_lengths(seed, tokens, lo=1, hi=4097):
    """Sequence lengths in [lo, hi]: the anchors inside the range, then
    seeded uniform draws until the sum reaches `tokens`."""
    if not 1 <= lo <= hi:
        raise ValueError("lengths: need 1 <= lo <= hi, got %d, %d" % (lo, hi))
    rng = random.Random(seed)
    lens = [n for n in ANCHORS if lo <= n <= hi] or [lo]
    while sum(lens) < tokens:
        lens.append(rng.randint(lo, hi))
    return lens


def cu_seqlens(lens):
    """Cumulative offsets: [0, l0, l0 + l1, ...] (len(lens) + 1 entries)."""
    cu = [0]
    for n in lens:
        cu.append(cu[-1] + n)
    return cu


def useful_flops(lens, heads, dim, causal):
    """4 L^2 H D per sequence (the two gemms), halved when causal."""
    return sum(4.0 * heads * n * n * dim for n in lens) / (2 if causal else 1)


def padded_flops(lens, heads, dim, causal):
    """The same count for the batch padded to its longest sequence."""
    return useful_flops([max(lens)] * len(lens), heads, dim, causal)


def decode_bytes(r, elem=2):
    """Bytes a decoding step must move: Q and O, K and V at heads_kv."""
    return elem * (2 * r["batch"] * r["seq_q"] * r["heads"] * r["dim"] +
                   2 * r["batch"] * r["seq_kv"] * r["heads_kv"] * r["dim"])


def num_split_for(r, sms, block_N=64, block_M=64):
    """About 4 blocks per SM, at least 2 key blocks per split (the rule of
    bench_attention_variants.py)."""
    base = r["batch"] * r["heads"] * math.ceil(r["seq_q"] / block_M)
    n_blocks = math.ceil(r["seq_kv"] / block_N)
    want = max(1, math.ceil(4 * sms / base))
    return max(1, min(want, n_blocks // 2 if n_blocks >= 2 else 1, 256))


def page_count(seq_kv, page):
    return -(-seq_kv // page)


def paged_cache(zeros, perm, k, page):
    """k [B, S, Hkv, D] as a paged cache: sequence b's key block n lands in
    page perm[b * mp + n] of the returned [B * mp, page, Hkv, D] (zeros past
    S). `zeros(shape)` makes the arrays (NumPy or torch, like k); perm an
    integer array or tensor of the B * mp page indices; the block table is
    perm viewed as [B, mp]."""
    b, s, hkv, d = k.shape
    mp = page_count(s, page)
    pad = zeros((b, mp * page, hkv, d))
    pad[:, :s] = k
    cache = zeros((b * mp, page, hkv, d))
    cache[perm] = pad.reshape(b * mp, page, hkv, d)
    return cache


# ------------------------------------------------------------------- rows ---

def make_rows(args):
    rows = []
    for dt in args.dtypes:
        for dim in args.dims:
            for causal in args.causal:
                lens = mixed_lengths(args.seed, args.tokens, 1, args.max_len)
                rows.append(dict(kind="varlen", dtype=dt, dim=dim, heads=args.heads or 2048 // dim,
                                 causal=causal, lens=lens))
        for skv in args.kv_lens:
            rows.append(dict(kind="paged", dtype=dt, dim=args.paged_dim, batch=args.paged_batch,
                             heads=args.paged_heads, heads_kv=args.paged_heads_kv, seq_q=1, seq_kv=skv))
    for r in rows:
        r["id"] = row_id(r)
    return rows


def row_id(r):
    if r["kind"] == "varlen":
        return "varlen-%s-d%d-h%d-%s-n%d-t%d" % (r["dtype"], r["dim"], r["heads"],
                                                 "causal" if r["causal"] else "full", len(r["lens"]), sum(r["lens"]))
    return "paged-%s-d%d-h%d-kv%d-b%d-q%d-s%d" % (r["dtype"], r["dim"], r["heads"], r["heads_kv"], r["batch"],
                                                  r["seq_q"], r["seq_kv"])


# --------------------------------------------------------------- reports ---

def num(x):
    """A rate: whole numbers from 100 on, else 3 significant digits."""
    return "%.0f" % x if x >= 100 else "%.3g" % x


def fmt_cell(e, r):
    if e is None:
        return "-"
    if "error" in e:
        return "FAIL: " + e["error"][:70]
    if r["kind"] == "varlen":
        return "%.3f ms, %s TFLOP/s" % (e["ms"], num(useful_flops(r["lens"], r["heads"], r["dim"], r["causal"])
                                           / (e["ms"] * 1e-3) / 1e12))
    return "%.1f us, %s GB/s" % (e["ms"] * 1e3, num(decode_bytes(r) / (e["ms"] * 1e-3) / 1e9))


def report(rows, results, device, when=None):
    """The one table: a line per (row, implementation), tilec's first; the
    last column compares with tilec-varlen (its time / this one's: > 1 means
    this implementation is faster) or, for paged rows, paged / contiguous."""
    when = when or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = ["# tilec varlen attention and paged KV on %s (%s)" % (device, when), "",
           "| case | implementation | time, useful rate | vs tilec |", "|---|---|---|---|"]
    for r in rows:
        entries = results.get(r["id"], [])
        if r["kind"] == "varlen":
            case = "varlen %s d%d h%d %s, %d seqs (1..%d), %d tokens" % (
                r["dtype"], r["dim"], r["heads"], "causal" if r["causal"] else "full", len(r["lens"]),
                max(r["lens"]), sum(r["lens"]))
            base = next((e for e in entries if e.get("impl") == "tilec-varlen" and "ms" in e), None)
        else:
            case = "paged decode %s d%d h%d/%d b%d q%d kv%d" % (r["dtype"], r["dim"], r["heads"], r["heads_kv"],
                                                              r["batch"], r["seq_q"], r["seq_kv"])
            base = next((e for e in entries if e.get("impl") == "tilec-contiguous" and "ms" in e), None)
        order = sorted(entries, key=lambda e: (not e.get("impl", "").startswith("tilec"), e.get("impl", "")))
        if r["kind"] == "paged":
            order = sorted(entries, key=lambda e: e.get("impl") != "tilec-contiguous")
        for i, e in enumerate(order or [None]):
            impl = e.get("impl", "?") if e else "(no result)"
            cmp = "-"
            if e and "ms" in e and base and e is not base:
                if r["kind"] == "varlen":
                    cmp = "%.2fx" % (base["ms"] / e["ms"])
                else:
                    cmp = "paged/contiguous %.2f (goal <= 1.10)" % (e["ms"] / base["ms"])
            note = (", split %d" % e["num_split"]) if e and "num_split" in e and "ms" in e else ""
            out.append("| %s | %s | %s%s | %s |" % (case if i == 0 else "", impl, fmt_cell(e, r), note, cmp))
    return "\n".join(out)


# ------------------------------------------------------------------- CPU ---

def np_attention(q, k, v, causal):
    """float64 softmax attention of one sequence: tilec.reference.attention."""
    if os.path.join(ROOT, "python") not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, "python"))
    from tilec.reference import attention
    return attention(q, k, v, causal)


def np_varlen_reference(q, k, v, lens, causal):
    import numpy as np
    cu = cu_seqlens(lens)
    return np.concatenate([np_attention(q[a:b], k[a:b], v[a:b], causal) for a, b in zip(cu, cu[1:])])


def cpu_time(fn, runs):
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def run_cpu(args, rows):
    """The tilec rows on the CPU back end (NumPy f16), checked against
    float64; returns {row id: [entries]}."""
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import tilec
    ctx = tilec.Context(device="cpu")
    rng = np.random.default_rng(args.seed)
    results = {}

    def check(impl, got, ref, fn):
        err = float(np.abs(got.astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30))
        if not np.isfinite(got).all() or not err <= CPU_BOUND:
            return {"impl": impl, "error": "wrong result: rel error %.3e > %.0e" % (err, CPU_BOUND)}
        return {"impl": impl, "ms": cpu_time(fn, args.min_runs), "err": err}

    for r in rows:
        d, h = r["dim"], r["heads"]
        defs = {"dim": d, "dtype": "f16", "is_causal": r.get("causal", False)}
        scale = 1.0 / math.sqrt(d) * LOG2E
        if r["kind"] == "varlen":
            t = sum(r["lens"])
            q, k, v = (rng.uniform(-1, 1, (t, h, d)).astype(np.float16) for _ in range(3))
            ref = np_varlen_reference(q, k, v, r["lens"], r["causal"])
            kern = ctx.load(os.path.join(ROOT, "examples", "varlen_attention.tile"), defines=defs).kernel("varlen_attention")
            cu = np.array(cu_seqlens(r["lens"]), np.int32)
            out = np.full_like(q, np.nan)
            kern(q, k, v, out, cu, cu, max(r["lens"]), scale)
            results[r["id"]] = [check("tilec-varlen", out, ref,
                                      lambda: kern(q, k, v, out, cu, cu, max(r["lens"]), scale))]
            continue
        b, hkv, sq, skv = r["batch"], r["heads_kv"], r["seq_q"], r["seq_kv"]
        q = rng.uniform(-1, 1, (b, sq, h, d)).astype(np.float16)
        k, v = (rng.uniform(-1, 1, (b, skv, hkv, d)).astype(np.float16) for _ in range(2))
        ref = np.stack([np_attention(q[i], k[i], v[i], False) for i in range(b)])
        mod = ctx.load(os.path.join(ROOT, "examples", "flash_decoding.tile"), defines=defs)
        split, combine, paged = (mod.kernel(n) for n in ("flash_decoding_split", "flash_decoding_combine",
                                                         "flash_decoding_paged_split"))
        ns = args.cpu_splits
        op = np.full((b, h, ns, sq, d), np.nan, np.float32)
        lp = np.full((b, h, ns, sq), np.nan, np.float32)
        out = np.full_like(q, np.nan)
        page = 64   # block_N, the kernels' default
        mp = page_count(skv, page)
        perm = rng.permutation(b * mp).astype(np.int32)
        table = perm.reshape(b, mp).copy()
        zeros = lambda shape: np.zeros(shape, np.float16)
        kc, vc = paged_cache(zeros, perm, k, page), paged_cache(zeros, perm, v, page)
        lens = np.full((b,), skv, np.int32)

        def contiguous():
            split(q, k, v, op, lp, out, scale)
            if ns > 1:   # one split writes out itself
                combine(op, lp, out)

        def paged_run():
            paged(q, kc, vc, table, lens, op, lp, scale)
            combine(op, lp, out)
        contiguous()
        e1 = check("tilec-contiguous", out, ref, contiguous)
        op[:], lp[:], out[:] = np.nan, np.nan, np.nan
        paged_run()
        e2 = check("tilec-paged", out, ref, paged_run)
        e1["num_split"] = e2["num_split"] = ns
        results[r["id"]] = [e1, e2]
    return results


# ------------------------------------------------------------------- GPU ---

def torch_reference_varlen(torch, q, k, v, lens, causal):
    """float32 reference, a sequence and a few heads at a time (a 4097-token
    sequence's scores for every head would be GBs)."""
    out = torch.empty(q.shape, device=q.device, dtype=torch.float32)
    cu = cu_seqlens(lens)
    h, d = q.shape[1], q.shape[2]
    g = h // k.shape[1]
    for a, b in zip(cu, cu[1:]):
        n = b - a
        chunk = max(1, min(h, (1 << 28) // (n * n)))
        mask = torch.ones((n, n), device=q.device, dtype=torch.bool).triu(1) if causal else None
        for h0 in range(0, h, chunk):
            h1 = min(h, h0 + chunk)
            idx = torch.arange(h0, h1, device=q.device) // g
            qf = q[a:b, h0:h1].float().transpose(0, 1)
            kf = k[a:b].index_select(1, idx).float().transpose(0, 1)
            vf = v[a:b].index_select(1, idx).float().transpose(0, 1)
            s = torch.matmul(qf, kf.transpose(-1, -2)) / math.sqrt(d)
            if mask is not None:
                s.masked_fill_(mask, float("-inf"))
            out[a:b, h0:h1] = torch.matmul(torch.softmax(s, dim=-1), vf).transpose(0, 1)
    return out


def torch_reference_decode(torch, q, k, v):
    """float32, q [B, Sq, H, D] against the whole cache k/v [B, S, Hkv, D],
    one sequence at a time, the g = H / Hkv query heads of a KV head as rows
    of one product (K and V are never expanded: a 128k cache in float32 for
    every query head would not fit)."""
    b, sq, h, d = q.shape
    hkv = k.shape[2]
    g = h // hkv
    out = torch.empty(q.shape, device=q.device, dtype=torch.float32)
    for i in range(b):
        kf, vf = (t[i].float().transpose(0, 1) for t in (k, v))                    # [Hkv, S, D]
        qf = q[i].float().transpose(0, 1).reshape(hkv, g * sq, d)                  # head = kv * g + j
        s = torch.matmul(qf, kf.transpose(-1, -2)) / math.sqrt(d)
        o = torch.matmul(torch.softmax(s, dim=-1), vf)                              # [Hkv, g * Sq, D]
        out[i] = o.reshape(h, sq, d).transpose(0, 1)
        del kf, vf, s
    return out


def inputs(torch, r, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[r["dtype"]]
    if r["kind"] == "varlen":
        t, h, d = sum(r["lens"]), r["heads"], r["dim"]
        return tuple(torch.randn((t, h, d), generator=g, device="cuda", dtype=dt) for _ in range(3))
    b, sq, skv, h, hkv, d = r["batch"], r["seq_q"], r["seq_kv"], r["heads"], r["heads_kv"], r["dim"]
    q = torch.randn((b, sq, h, d), generator=g, device="cuda", dtype=dt)
    k, v = (torch.randn((b, skv, hkv, d), generator=g, device="cuda", dtype=dt) for _ in range(2))
    return q, k, v


def measure(torch, timer, run, result, ref, dt, impl):
    """Runs once, checks result() against ref, then times run."""
    from _common import check_then_time
    run()
    torch.cuda.synchronize()
    return check_then_time(torch, timer, run, result, ref, BOUND[dt], impl)


def part_tilec(rows, args, torch, timer, emit):
    import tempfile
    from _common import error_result
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import tilec
    ctx = tilec.Context(device="cuda", cache_dir=tempfile.mkdtemp(prefix="bench-varlen-cache-"))
    torch.cuda.set_stream(torch.cuda.Stream())
    stream = torch.cuda.current_stream().cuda_stream
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    mods = {}

    def module(file, defs):
        key = (file, tuple(sorted(defs.items())))
        if key not in mods:
            mods[key] = ctx.load(os.path.join(ROOT, "examples", file), defines=dict(defs))
        return mods[key]

    for r in rows:
        try:
            q, k, v = inputs(torch, r, args.seed)
            defs = {"dim": str(r["dim"]), "dtype": r["dtype"], "is_causal": "true" if r.get("causal") else "false"}
            scale = 1.0 / math.sqrt(r["dim"]) * LOG2E
            if r["kind"] == "varlen":
                ref = torch_reference_varlen(torch, q, k, v, r["lens"], r["causal"])
                kern = module("varlen_attention.tile", defs).kernel("varlen_attention")
                cu = torch.tensor(cu_seqlens(r["lens"]), dtype=torch.int32, device="cuda")
                out = torch.full_like(q, float("nan"))
                run = kern.bind(q, k, v, out, cu, cu, max(r["lens"]), scale, stream=stream)
                emit(r["id"], measure(torch, timer, run, lambda: out, ref, r["dtype"], "tilec-varlen"))
                continue
            ref = torch_reference_decode(torch, q, k, v)
            mod = module("flash_decoding.tile", defs)
            split, combine, paged = (mod.kernel(n) for n in ("flash_decoding_split", "flash_decoding_combine",
                                                             "flash_decoding_paged_split"))
            b, h, sq, d, skv = r["batch"], r["heads"], r["seq_q"], r["dim"], r["seq_kv"]
            ns = num_split_for(r, sms)
            op = torch.full((b, h, ns, sq, d), float("nan"), device="cuda")
            lp = torch.full((b, h, ns, sq), float("nan"), device="cuda")
            out = torch.full_like(q, float("nan"))
            c1, c2 = split.bind(q, k, v, op, lp, out, scale, stream=stream), combine.bind(op, lp, out, stream=stream)
            res = measure(torch, timer, lambda: (c1(), c2() if ns > 1 else None), lambda: out, ref, r["dtype"],
                          "tilec-contiguous")
            res["num_split"] = ns
            emit(r["id"], res)
            page = 64   # block_N, the kernels' default
            perm = torch.randperm(b * page_count(skv, page), device="cuda")
            zeros = lambda shape: torch.zeros(shape, device="cuda", dtype=k.dtype)
            kc, vc = paged_cache(zeros, perm, k, page), paged_cache(zeros, perm, v, page)
            table = perm.to(torch.int32).view(b, -1).contiguous()
            lens = torch.full((b,), skv, device="cuda", dtype=torch.int32)
            for t in (op, lp, out):   # the contiguous run's partials must not pass for the paged run's
                t.fill_(float("nan"))
            p1 = paged.bind(q, kc, vc, table, lens, op, lp, scale, stream=stream)
            res = measure(torch, timer, lambda: (p1(), c2()), lambda: out, ref, r["dtype"], "tilec-paged")
            res["num_split"] = ns
            emit(r["id"], res)
            del kc, vc
        except Exception as e:  # noqa: BLE001 - reported in the table
            emit(r["id"], error_result("tilec", e, 200))


def part_peers(rows, args, torch, timer, emit):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from _common import error_result
    try:
        from flash_attn import flash_attn_varlen_func
    except Exception:  # noqa: BLE001 - optional
        flash_attn_varlen_func = None
    for r in (x for x in rows if x["kind"] == "varlen"):
        rid, lens, causal = r["id"], r["lens"], r["causal"]
        q, k, v = inputs(torch, r, args.seed)
        ref = torch_reference_varlen(torch, q, k, v, lens, causal)
        cu = cu_seqlens(lens)
        try:
            offs = torch.tensor(cu, device="cuda", dtype=torch.int64)
            nq, nk, nv = (torch.nested.nested_tensor_from_jagged(t, offs).transpose(1, 2) for t in (q, k, v))

            def nested():
                with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                    return F.scaled_dot_product_attention(nq, nk, nv, is_causal=causal)
            box = {}
            emit(rid, measure(torch, timer, lambda: box.__setitem__("o", nested()),
                              lambda: box["o"].transpose(1, 2).values(), ref, r["dtype"], "sdpa-flash-nested"))
        except Exception as e:  # noqa: BLE001
            emit(rid, error_result("sdpa-flash-nested", e, 150))
        if flash_attn_varlen_func is not None:
            try:
                cu32 = torch.tensor(cu, device="cuda", dtype=torch.int32)
                box = {}
                emit(rid, measure(torch, timer,
                                  lambda: box.__setitem__("o", flash_attn_varlen_func(
                                      q, k, v, cu32, cu32, max(lens), max(lens), causal=causal)),
                                  lambda: box["o"], ref, r["dtype"], "fa2-varlen"))
            except Exception as e:  # noqa: BLE001
                emit(rid, error_result("fa2-varlen", e, 150))
        # Padded to the longest sequence (copies outside the timing).
        n, L = len(lens), max(lens)
        pad = [torch.zeros((n, L) + tuple(t.shape[1:]), device="cuda", dtype=t.dtype) for t in (q, k, v)]
        for i, (a, b) in enumerate(zip(cu, cu[1:])):
            for p, t in zip(pad, (q, k, v)):
                p[i, :b - a] = t[a:b]
        qt, kt, vt = (p.transpose(1, 2) for p in pad)
        mask = None
        if not causal:
            mask = torch.zeros((n, 1, 1, L), device="cuda", dtype=torch.bool)
            for i, m in enumerate(lens):
                mask[i, ..., :m] = True
        peers = (("sdpa-flash-padded", "FLASH_ATTENTION"), ("sdpa-cudnn-padded", "CUDNN_ATTENTION")) if causal \
            else (("sdpa-efficient-padded", "EFFICIENT_ATTENTION"), ("sdpa-cudnn-padded", "CUDNN_ATTENTION"))
        for impl, be in peers:
            try:
                bk = getattr(SDPBackend, be)
                box = {}

                def padded(bk=bk):
                    with sdpa_kernel([bk]):
                        if mask is None:
                            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
                        return F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask)
                unpad = lambda: torch.cat([box["o"][i, :, :m].transpose(0, 1) for i, m in enumerate(lens)])
                emit(rid, measure(torch, timer, lambda padded=padded: box.__setitem__("o", padded()), unpad, ref,
                                  r["dtype"], impl))
            except Exception as e:  # noqa: BLE001
                emit(rid, error_result(impl, e, 150))
        box = pad = qt = kt = vt = mask = None   # free the padded copies before the next row


# ------------------------------------------------------------------ main ---

def csv_ints(ap, name, text):
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        ap.error("%s: comma-separated integers, not %r" % (name, text))
    if not vals or any(x < 1 for x in vals):
        ap.error("%s: positive integers, not %r" % (name, text))
    return vals


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--quick", action="store_true", help="dim 128, 16k tokens, one paged row, 10 runs")
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--causal", choices=("both", "yes", "no"), default="both")
    ap.add_argument("--tokens", type=int, default=None, help="packed tokens per varlen row (default 32768)")
    ap.add_argument("--max-len", type=int, default=4097, help="longest sequence length")
    ap.add_argument("--heads", type=int, default=0, help="varlen heads (default 2048 / dim)")
    ap.add_argument("--kv-lens", default=None, help="paged rows' KV lengths (default 8192,32768,131072)")
    ap.add_argument("--paged-batch", type=int, default=8)
    ap.add_argument("--paged-heads", type=int, default=32)
    ap.add_argument("--paged-heads-kv", type=int, default=8)
    ap.add_argument("--paged-dim", type=int, default=128, choices=(64, 128))
    ap.add_argument("--no-paged", action="store_true")
    ap.add_argument("--min-runs", type=int, default=None, help="timed runs at least (default 20; --quick 10)")
    ap.add_argument("--cpu-splits", type=int, default=3, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out-dir", default=".")
    ap.add_argument("--part", choices=("tilec", "peers"), help=argparse.SUPPRESS)
    ap.add_argument("--json-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.dtypes = [x for x in args.dtypes.split(",") if x]
    if not args.dtypes or any(x not in BOUND for x in args.dtypes):
        ap.error("--dtypes: f16 and/or bf16, not %r" % ",".join(args.dtypes))
    args.dims = csv_ints(ap, "--dims", args.dims)
    if any(d not in (64, 128) for d in args.dims):
        ap.error("--dims: 64 and/or 128")
    args.causal = {"both": [False, True], "yes": [True], "no": [False]}[args.causal]
    if args.max_len < 1:
        ap.error("--max-len must be positive")
    if args.device == "cpu":
        # Small enough for the C back end in seconds: lengths 1..130, f16.
        args.dtypes, args.dims = ["f16"], [64]
        args.max_len = min(args.max_len, 130)
        args.tokens = 300 if args.tokens is None else args.tokens
        args.heads = args.heads or 2
        kv = args.kv_lens or "200"
        args.paged_batch, args.paged_heads, args.paged_heads_kv, args.paged_dim = 2, 4, 2, 64
        args.min_runs = 2 if args.min_runs is None else args.min_runs
    else:
        kv = args.kv_lens or ("8192" if args.quick else "8192,32768,131072")
        if args.quick:
            args.dims = [128]
        args.tokens = (16384 if args.quick else 32768) if args.tokens is None else args.tokens
        args.min_runs = (10 if args.quick else 20) if args.min_runs is None else args.min_runs
    args.kv_lens = [] if args.no_paged else csv_ints(ap, "--kv-lens", kv)
    if args.tokens < 1 or args.min_runs < 1:
        ap.error("--tokens and --min-runs must be positive")
    if args.paged_heads % args.paged_heads_kv:
        ap.error("--paged-heads must be a multiple of --paged-heads-kv")
    return args


def main(argv=None):
    args = parse_args(argv)
    rows = make_rows(args)
    if args.device == "cpu":
        results = run_cpu(args, rows)
        text = report(rows, results, "the CPU (C back end)")
        print(text)
        return 0 if all("ms" in e for r in rows for e in results.get(r["id"], [{}])) else 1
    from _common import child_setup, gpu_name, json_emitter, result_stem, run_parts, write_report
    if args.part:
        torch, timer = child_setup(args.min_runs)
        if args.quick:
            timer.rep_ms = 50.0
        with open(args.json_out, "a") as f:
            emit = json_emitter(f, args.part)
            (part_peers if args.part == "peers" else part_tilec)(rows, args, torch, timer, emit)
        return 0
    os.makedirs(args.out_dir, exist_ok=True)
    results = run_parts(__file__, os.path.join(args.out_dir, "varlen-raw.jsonl"), "bench_varlen")
    gpu = gpu_name()
    write_report(args.out_dir, result_stem(gpu, "varlen"), report(rows, results, gpu), args, rows, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
