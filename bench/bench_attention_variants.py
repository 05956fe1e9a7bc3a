#!/usr/bin/env python3
"""bench_attention_variants.py - tilec's grouped-query attention, split-KV
decoding (contiguous and paged caches) and varlen attention on the GPU
against torch SDPA, in one run (issue 13). See
bench/README.md for the command.

Modes (--modes gqa,decoding,varlen; default all three)
  gqa       examples/gqa_attention.tile against SDPA with enable_gqa=True,
            FLASH_ATTENTION and CUDNN_ATTENTION forced (a backend that
            refuses enable_gqa is reported as such), and the flagship
            (examples/flash_attention.tile) on K/V expanded to all heads
            (repeat_interleave, outside the timing) with cuDNN on the same
            expanded tensors: the ratio tilec-gqa / sdpa-cudnn is meant to
            match the flagship's. batch * seq_len = 16384, heads 32
            (dim 128) or 16 (dim 64), heads_kv 8 and 1, causal and not.
            TFLOP/s = 4 B H S^2 D / t (half when causal).
  decoding  examples/flash_decoding.tile (split kernel + combine kernel,
            num_split chosen per shape by the heuristic below) against SDPA
            FLASH_ATTENTION and EFFICIENT_ATTENTION on the same shapes, and
            the same tilec kernels with num_split = 1 (the plain forward:
            one block per (query block, head, batch) walking the whole cache).
            batch 8, heads 32, dim 128, seqlen_q 1 and 16, seqlen_kv 1k..128k,
            heads_kv 32 (MHA) and 8 (GQA; the EFFICIENT backend has no GQA,
            it gets K/V expanded outside the timing). Non-causal (seqlen_q
            tokens against the whole cache). tilec-paged: the same split
            count through flash_decoding_paged_split on a paged copy of the
            cache (pages of block_N = 64 tokens, shuffled; issue 13's goal:
            within 10% of tilec-split). tilec-gqa-packed (seqlen_q 1 with
            GQA): flash_decoding_gqa_split, a block per (split, KV head),
            the group's query heads as its rows, K/V read once per group. Bandwidth = bytes of Q, K, V and
            O (K and V counted once, at heads_kv) / t, as % of the device's:
            the datasheet figure (--peak-gbs, 3350 for an H100 SXM) and a
            measured device-to-device copy (1 GiB, read + write).

  varlen    examples/varlen_attention.tile on packed sequences (lengths
            1..4097 mixed, 16k+ tokens, seeded) against SDPA FLASH on
            torch.nested jagged tensors (FA2's varlen path), and SDPA on the
            batch padded to the longest sequence (causal: FLASH and CUDNN;
            not causal: EFFICIENT with a key-padding mask); useful TFLOP/s
            (sum over sequences of 4 L^2 H D, half when causal).

Every implementation is checked before it is timed against a float32 torch
reference (max|out - ref| / max|ref|; bounds 1e-2 f16, 4e-2 bf16); a wrong
result is reported, not timed. Timing: bench_attention.Timer (CUDA events,
L2 flushed before each run, median of >= 20 runs).

tilec and the peers run in two child processes (this script with --part
tilec / --part peers): a fault in tilec's new kernels cannot take the
peers' numbers with it. With --side-by-side one child times both, tilec's
rows then the peers' in each of --rounds N rounds, and reports each
implementation's median round (ms_rounds in the JSON keeps them all): the
short decoding kernels are then compared at the same moment of the GPU's
clock and power state rather than minutes apart. Results: <out-dir>/<date>-<gpu>-variants.{md,json};
the tables are printed last.
"""

import argparse
import datetime
import math
import os
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from _common import (check_then_time, child_setup, error_result, gpu_name, json_emitter, result_stem,  # noqa: E402
                     rounds_collector, run_parts, write_report)
BOUND = {"f16": 1e-2, "bf16": 4e-2}
LOG2E = math.log2(math.e)


def gqa_rows(args):
    rows = []
    for dt in args.dtypes:
        for dim in (64, 128):
            heads = 2048 // dim
            for hkv in (8, 1):
                for causal in (False, True):
                    for seq in args.gqa_seqs:
                        rows.append(dict(mode="gqa", dtype=dt, dim=dim, heads=heads, heads_kv=hkv,
                                         causal=causal, batch=max(1, 16384 // seq), seq=seq))
    return rows


def decoding_rows(args):
    rows = []
    for dt in args.dtypes:
        for batch in (1, 8):
            for hkv in (32, 8):
                for sq in (1, 16):
                    for skv in args.kv_lens:
                        rows.append(dict(mode="decoding", dtype=dt, dim=128, heads=32, heads_kv=hkv,
                                         causal=False, batch=batch, seq_q=sq, seq_kv=skv))
    return rows


def varlen_rows(args):
    """Lengths 1..4097 mixed (seeded), 16k tokens in all."""
    import random
    rng = random.Random(args.seed)
    lens = [1, 4097, 2, 17, 1000, 129]
    while sum(lens) < 16384:
        lens.append(rng.randint(1, 4097))
    rows = []
    for dt in args.dtypes:
        for dim in (64, 128):
            for causal in (False, True):
                rows.append(dict(mode="varlen", dtype=dt, dim=dim, heads=2048 // dim, heads_kv=2048 // dim,
                                 causal=causal, lens=lens))
    return rows


def row_id(r):
    if r["mode"] == "varlen":
        return "varlen-%s-d%d-h%d-%s-n%d" % (r["dtype"], r["dim"], r["heads"], "causal" if r["causal"] else "full",
                                             len(r["lens"]))
    if r["mode"] == "gqa":
        return "gqa-%s-d%d-h%d-kv%d-%s-s%d" % (r["dtype"], r["dim"], r["heads"], r["heads_kv"],
                                               "causal" if r["causal"] else "full", r["seq"])
    return "dec-%s-d%d-h%d-kv%d-b%d-q%d-kv%d" % (r["dtype"], r["dim"], r["heads"], r["heads_kv"],
                                                 r["batch"], r["seq_q"], r["seq_kv"])


def num_split_for(r, sms, splits="auto", kern=None, block_N=64, block_M=64):
    """--splits N, or auto: tilec.splitk.choose_kv_splits for the kernel's
    blocks per SM (one K/V stream per SM, or every slot when a GQA group's
    blocks share their K/V; at least 2 key blocks a split)."""
    if splits != "auto":
        return int(splits)
    import tilec
    base = r["batch"] * r["heads"] * math.ceil(r["seq_q"] / block_M)
    n_blocks = math.ceil(r["seq_kv"] / block_N)
    per_sm = tilec.splitk.blocks_per_sm_of(kern.info) if kern is not None else 1
    return tilec.splitk.choose_kv_splits(base, n_blocks, sms, per_sm, kv_share=r["heads"] // r["heads_kv"])


def varlen_offsets(torch, r):
    cu = [0]
    for n in r["lens"]:
        cu.append(cu[-1] + n)
    return torch.tensor(cu, dtype=torch.int32, device="cuda")


def make_inputs(torch, r, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[r["dtype"]]
    if r["mode"] == "varlen":   # THD: [total, heads, dim] (batch 1 of BSHD for the reference)
        t, h, hkv, d = sum(r["lens"]), r["heads"], r["heads_kv"], r["dim"]
        q = torch.randn((t, h, d), generator=g, device="cuda", dtype=dt)
        k = torch.randn((t, hkv, d), generator=g, device="cuda", dtype=dt)
        v = torch.randn((t, hkv, d), generator=g, device="cuda", dtype=dt)
        return q, k, v
    if r["mode"] == "gqa":
        sq = skv = r["seq"]
    else:
        sq, skv = r["seq_q"], r["seq_kv"]
    b, h, hkv, d = r["batch"], r["heads"], r["heads_kv"], r["dim"]
    q = torch.randn((b, sq, h, d), generator=g, device="cuda", dtype=dt)
    k = torch.randn((b, skv, hkv, d), generator=g, device="cuda", dtype=dt)
    v = torch.randn((b, skv, hkv, d), generator=g, device="cuda", dtype=dt)
    return q, k, v


def reference_varlen(torch, q, k, v, r):
    out = torch.empty(q.shape, device=q.device, dtype=torch.float32)
    o = 0
    for n in r["lens"]:
        out[o:o + n] = reference(torch, q[None, o:o + n], k[None, o:o + n], v[None, o:o + n], r["causal"])[0]
        o += n
    return out


def reference(torch, q, k, v, causal):
    """float32 attention, BSHD, GQA by expansion; a few heads at a time;
    causal aligned to the bottom right (only used with seq_q == seq_kv)."""
    b, sq, h, d = q.shape
    skv, hkv = k.shape[1], k.shape[2]
    g = h // hkv
    out = torch.empty((b, h, sq, d), device=q.device, dtype=torch.float32)
    # Sliced before conversion: a 128k-token cache in float32 for every head
    # would not fit.
    chunk = max(1, min(h, (1 << 30) // (sq * skv * 4), (1 << 30) // (skv * d * 4 * 2)))
    mask = None
    if causal:
        mask = torch.ones((sq, skv), device=q.device, dtype=torch.bool).triu(skv - sq + 1)
    for bi in range(b):
        for h0 in range(0, h, chunk):
            h1 = min(h, h0 + chunk)
            idx = torch.arange(h0, h1, device=q.device) // g
            qf = q[bi, :, h0:h1].float().transpose(0, 1)                 # [hc, sq, d]
            kf = k[bi].index_select(1, idx).float().transpose(0, 1)      # [hc, skv, d]
            vf = v[bi].index_select(1, idx).float().transpose(0, 1)
            s = torch.matmul(qf, kf.transpose(-1, -2)) / math.sqrt(d)
            if mask is not None:
                s.masked_fill_(mask, float("-inf"))
            out[bi, h0:h1] = torch.matmul(torch.softmax(s, dim=-1), vf)
            del s, kf, vf
    return out.transpose(1, 2)


def measure(torch, timer, fn, got, ref, dt, impl):
    return check_then_time(torch, timer, fn, got, ref, BOUND[dt], impl)


# ----------------------------------------------------------------- tilec ---

def part_tilec(rows, args, torch, timer, emit):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import tilec
    ctx = tilec.Context(device="cuda", cache_dir=tempfile.mkdtemp(prefix="bench-variants-cache-"))
    torch.cuda.set_stream(torch.cuda.Stream())
    stream = torch.cuda.current_stream().cuda_stream
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    mods = {}

    def kernel(file, name, defines):
        key = (file, name, tuple(sorted(defines.items())))
        if key not in mods:
            d = dict(defines)
            for kv in args.tilec_define:
                n, v = kv.split("=", 1)
                if file != "flash_attention.tile":   # the flagship keeps its defaults
                    d[n] = v
            mods[key] = ctx.load(os.path.join(ROOT, "examples", file), defines=d).kernel(name)
        return mods[key]

    for r in rows:
        rid = row_id(r)
        try:
            q, k, v = make_inputs(torch, r, args.seed)
            ref = reference_varlen(torch, q, k, v, r) if r["mode"] == "varlen" else reference(torch, q, k, v, r["causal"])
            defs = {"dim": str(r["dim"]), "dtype": r["dtype"], "is_causal": "true" if r["causal"] else "false"}
            scale = 1.0 / math.sqrt(r["dim"]) * LOG2E
            if r["mode"] == "varlen":
                kv_ = kernel("varlen_attention.tile", "varlen_attention", defs)
                cu = varlen_offsets(torch, r)
                out = torch.full_like(q, float("nan"))
                run = kv_.bind(q, k, v, out, cu, cu, max(r["lens"]), scale, stream=stream)
                emit(rid, measure(torch, timer, run, lambda: (run(), out)[1], ref, r["dtype"], "tilec-varlen"))
            elif r["mode"] == "gqa":
                kg = kernel("gqa_attention.tile", "gqa_attention", defs)
                out = torch.full_like(q, float("nan"))
                run = kg.bind(q, k, v, out, scale, stream=stream)
                emit(rid, measure(torch, timer, run, lambda: (run(), out)[1], ref, r["dtype"], "tilec-gqa"))
                # The flagship on K/V expanded to every head (the MHA cost).
                g = r["heads"] // r["heads_kv"]
                ke, ve = k.repeat_interleave(g, dim=2).contiguous(), v.repeat_interleave(g, dim=2).contiguous()
                kf = kernel("flash_attention.tile", "flash_attention", defs)
                out2 = torch.full_like(q, float("nan"))
                run2 = kf.bind(q, ke, ve, out2, scale, stream=stream)
                emit(rid, measure(torch, timer, run2, lambda: (run2(), out2)[1], ref, r["dtype"], "tilec-mha-expanded"))
            else:
                ks = kernel("flash_decoding.tile", "flash_decoding_split", defs)
                kc = kernel("flash_decoding.tile", "flash_decoding_combine", defs)
                b, h, sq, d = r["batch"], r["heads"], r["seq_q"], r["dim"]
                for impl, ns in (("tilec-split", num_split_for(r, sms, args.splits, ks)), ("tilec-nosplit", 1)):
                    op = torch.full((b, h, ns, sq, d), float("nan"), device="cuda")
                    lp = torch.full((b, h, ns, sq), float("nan"), device="cuda")
                    out = torch.full_like(q, float("nan"))
                    r1 = ks.bind(q, k, v, op, lp, out, scale, stream=stream)
                    r2 = kc.bind(op, lp, out, stream=stream)

                    def run(r1=r1, r2=r2, ns=ns):
                        r1()
                        if ns > 1:   # one split writes out itself
                            r2()
                    res = measure(torch, timer, run, lambda: (run(), out)[1], ref, r["dtype"], impl)
                    res["num_split"] = ns
                    emit(rid, res)
                # One token, GQA: the group's heads packed into one block's rows
                # (flash_decoding_gqa_split), K/V read once per group.
                if sq == 1 and r["heads_kv"] < h:
                    kgq = kernel("flash_decoding.tile", "flash_decoding_gqa_split", defs)
                    base = dict(r, heads=r["heads_kv"])   # blocks per split: one per KV head
                    ns = num_split_for(base, sms, args.splits, kgq)
                    op = torch.full((b, h, ns, 1, d), float("nan"), device="cuda")
                    lp = torch.full((b, h, ns, 1), float("nan"), device="cuda")
                    out = torch.full_like(q, float("nan"))
                    r1 = kgq.bind(q, k, v, op, lp, scale, stream=stream)
                    r2 = kc.bind(op, lp, out, stream=stream)

                    def rung(r1=r1, r2=r2):
                        r1()
                        r2()
                    res = measure(torch, timer, rung, lambda: (rung(), out)[1], ref, r["dtype"], "tilec-gqa-packed")
                    res["num_split"] = ns
                    emit(rid, res)
                # The same split count on a paged cache (pages of block_N
                # tokens, shuffled), through the block table.
                kp = kernel("flash_decoding.tile", "flash_decoding_paged_split", defs)
                P = int(dict(kv.split("=", 1) for kv in args.tilec_define).get("block_N", 64))
                skv, hkv = r["seq_kv"], r["heads_kv"]
                mp = -(-skv // P)
                perm = torch.randperm(b * mp, device="cuda").to(torch.int32)
                table = perm.view(b, mp).contiguous()
                kcache = torch.empty((b * mp, P, hkv, d), device="cuda", dtype=k.dtype)
                vcache = torch.empty_like(kcache)
                if skv % P == 0:   # no padding copy (a 128k cache is GBs)
                    kcache[perm.long()] = k.view(b * mp, P, hkv, d)
                    vcache[perm.long()] = v.view(b * mp, P, hkv, d)
                else:
                    kpad = torch.zeros((b, mp * P, hkv, d), device="cuda", dtype=k.dtype)
                    vpad = torch.zeros_like(kpad)
                    kpad[:, :skv] = k
                    vpad[:, :skv] = v
                    kcache[perm.long()] = kpad.view(b * mp, P, hkv, d)
                    vcache[perm.long()] = vpad.view(b * mp, P, hkv, d)
                    del kpad, vpad
                lens = torch.full((b,), skv, device="cuda", dtype=torch.int32)
                ns = num_split_for(r, sms, args.splits, ks)   # the contiguous rows' count
                op = torch.full((b, h, ns, sq, d), float("nan"), device="cuda")
                lp = torch.full((b, h, ns, sq), float("nan"), device="cuda")
                out = torch.full_like(q, float("nan"))
                r1 = kp.bind(q, kcache, vcache, table, lens, op, lp, scale, stream=stream)
                r2 = kc.bind(op, lp, out, stream=stream)

                def runp(r1=r1, r2=r2):
                    r1()
                    r2()
                res = measure(torch, timer, runp, lambda: (runp(), out)[1], ref, r["dtype"], "tilec-paged")
                res["num_split"] = ns
                emit(rid, res)
                del kcache, vcache
        except Exception as e:  # noqa: BLE001 - reported in the table
            emit(rid, error_result("tilec", e, 300))
            traceback.print_exc()


# ----------------------------------------------------------------- peers ---

def part_peers(rows, args, torch, timer, emit):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for r in rows:
        rid = row_id(r)
        q, k, v = make_inputs(torch, r, args.seed)
        if r["mode"] == "varlen":
            peers_varlen(torch, timer, emit, rid, r, q, k, v, reference_varlen(torch, q, k, v, r))
            continue
        ref = reference(torch, q, k, v, r["causal"])
        g = r["heads"] // r["heads_kv"]
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
        if r["mode"] == "gqa":
            ke, ve = (t.repeat_interleave(g, dim=1) for t in (kt, vt))
            peers = [("sdpa-flash-gqa", "FLASH_ATTENTION", kt, vt, True),
                     ("sdpa-cudnn-gqa", "CUDNN_ATTENTION", kt, vt, True),
                     ("sdpa-cudnn-mha-expanded", "CUDNN_ATTENTION", ke, ve, False)]
        else:
            ke, ve = (t.repeat_interleave(g, dim=1) for t in (kt, vt)) if g > 1 else (kt, vt)
            peers = [("sdpa-flash", "FLASH_ATTENTION", kt, vt, g > 1),
                     ("sdpa-efficient", "EFFICIENT_ATTENTION", ke, ve, False)]
        for impl, backend, kk, vv, gqa in peers:
            try:
                be = getattr(SDPBackend, backend)

                def fn(kk=kk, vv=vv, be=be, gqa=gqa):
                    with sdpa_kernel([be]):
                        if gqa:
                            return F.scaled_dot_product_attention(qt, kk, vv, is_causal=r["causal"], enable_gqa=True)
                        return F.scaled_dot_product_attention(qt, kk, vv, is_causal=r["causal"])
                res = measure(torch, timer, fn, lambda: fn().transpose(1, 2), ref, r["dtype"], impl)
                if r["mode"] == "decoding" and g > 1 and not gqa:
                    res["note"] = "K/V expanded to all heads outside the timing"
                emit(rid, res)
            except Exception as e:  # noqa: BLE001
                emit(rid, error_result(impl, e, 200))


def peers_varlen(torch, timer, emit, rid, r, q, k, v, ref):
    """SDPA on the sequences padded to the longest (the work on padding
    included; the padding and unpadding copies are not timed), and SDPA FLASH
    on torch.nested jagged tensors (FA2's varlen path)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    lens, L, n = r["lens"], max(r["lens"]), len(r["lens"])
    pad = [torch.zeros((n, L) + t.shape[1:], device="cuda", dtype=t.dtype) for t in (q, k, v)]
    o = 0
    for i, m in enumerate(lens):
        for p, t in zip(pad, (q, k, v)):
            p[i, :m] = t[o:o + m]
        o += m
    qt, kt, vt = (p.transpose(1, 2) for p in pad)

    def unpad(out_bhsd):
        return torch.cat([out_bhsd[i, :, :m].transpose(0, 1) for i, m in enumerate(lens)])
    # Causal: each real row sees only keys before it, all real, so FLASH and
    # CUDNN on the padded batch are exact. Not causal: the padding keys need
    # a mask, which FLASH and CUDNN do not take: EFFICIENT with a boolean
    # key mask.
    mask = None
    if not r["causal"]:
        mask = torch.zeros((n, 1, 1, L), device="cuda", dtype=torch.bool)
        for i, m in enumerate(lens):
            mask[i, ..., :m] = True
    peers = ((("sdpa-flash-padded", "FLASH_ATTENTION"), ("sdpa-cudnn-padded", "CUDNN_ATTENTION")) if r["causal"]
             else (("sdpa-efficient-padded", "EFFICIENT_ATTENTION"),))
    for impl, be in peers:
        try:
            bk = getattr(SDPBackend, be)

            def fn(bk=bk):
                with sdpa_kernel([bk]):
                    if mask is None:
                        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
                    return F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask)
            emit(rid, measure(torch, timer, fn, lambda: unpad(fn()), ref, r["dtype"], impl))
        except Exception as e:  # noqa: BLE001
            emit(rid, error_result(impl, e, 200))
    try:
        offs = varlen_offsets(torch, r).long()
        nq, nk, nv = (torch.nested.nested_tensor_from_jagged(t, offs).transpose(1, 2) for t in (q, k, v))

        def fnn():
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                return F.scaled_dot_product_attention(nq, nk, nv, is_causal=r["causal"])
        emit(rid, measure(torch, timer, fnn, lambda: fnn().transpose(1, 2).values(), ref, r["dtype"], "sdpa-flash-nested"))
    except Exception as e:  # noqa: BLE001
        emit(rid, error_result("sdpa-flash-nested", e, 200))


def copy_bandwidth(torch, timer):
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    ms, _ = timer(lambda: b.copy_(a))
    return 2 * n / (ms * 1e-3) / 1e9


def child_main(args):
    torch, timer = child_setup(args.min_runs)
    rows = []
    if "gqa" in args.modes:
        rows += gqa_rows(args)
    if "decoding" in args.modes:
        rows += decoding_rows(args)
    if "varlen" in args.modes:
        rows += varlen_rows(args)
    with open(args.json_out, "a") as f:
        emit = json_emitter(f, args.part)
        if args.part == "both":
            emit("copy", {"impl": "copy", "ms": 0, "gbs": copy_bandwidth(torch, timer)})
            collect, flush = rounds_collector(emit)
            for _ in range(args.rounds):
                part_tilec(rows, args, torch, timer, collect)
                part_peers(rows, args, torch, timer, collect)
            flush()
        elif args.part == "peers":
            emit("copy", {"impl": "copy", "ms": 0, "gbs": copy_bandwidth(torch, timer)})
            part_peers(rows, args, torch, timer, emit)
        else:
            part_tilec(rows, args, torch, timer, emit)


# ---------------------------------------------------------------- report ---

def bytes_moved(r, elem=2):
    b, h, hkv, d, sq, skv = r["batch"], r["heads"], r["heads_kv"], r["dim"], r["seq_q"], r["seq_kv"]
    return elem * (2 * b * sq * h * d + 2 * b * skv * hkv * d)


def report(args, rows, results, gpu):
    lines = ["# tilec attention variants on %s (%s)" % (gpu, datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")), ""]
    if args.side_by_side:
        lines.append("Timing: tilec and the peers side by side in one process, %d round(s) in turn, medians." % args.rounds)
        lines.append("")
    copy = results.get("copy", [{}])[0].get("gbs")
    if copy:
        lines.append("Measured device copy: %.0f GB/s (read + write); datasheet peak used: %.0f GB/s." % (copy, args.peak_gbs))
        lines.append("")

    def cell(rr, impl, fmt):
        x = next((e for e in rr if e.get("impl") == impl), None)
        if x is None:
            return "-"
        if "error" in x:
            return "FAIL(%s)" % x["error"][:60]
        return fmt(x)

    if "gqa" in args.modes:
        impls = ["tilec-gqa", "tilec-mha-expanded", "sdpa-flash-gqa", "sdpa-cudnn-gqa", "sdpa-cudnn-mha-expanded"]
        lines += ["## GQA forward, TFLOP/s", "",
                  "| dtype | dim | H/Hkv | causal | B x S | " + " | ".join(impls) + " | gqa/cudnn-gqa | flagship/cudnn-mha |",
                  "|" + "---|" * (7 + len(impls))]
        for r in (x for x in rows if x["mode"] == "gqa"):
            rr = results.get(row_id(r), [])
            fl = 4.0 * r["batch"] * r["heads"] * r["seq"] ** 2 * r["dim"] / (2 if r["causal"] else 1)
            tf = lambda x: "%.0f" % (fl / (x["ms"] * 1e-3) / 1e12)
            ms = {e["impl"]: e["ms"] for e in rr if "ms" in e}
            ratio = lambda a, b: "%.2f" % (ms[b] / ms[a]) if a in ms and b in ms else "-"
            lines.append("| %s | %d | %d/%d | %s | %dx%d | %s | %s | %s |" % (
                r["dtype"], r["dim"], r["heads"], r["heads_kv"], "yes" if r["causal"] else "no",
                r["batch"], r["seq"], " | ".join(cell(rr, i, tf) for i in impls),
                ratio("tilec-gqa", "sdpa-cudnn-gqa"), ratio("tilec-mha-expanded", "sdpa-cudnn-mha-expanded")))
        lines.append("")
    if "decoding" in args.modes:
        impls = ["tilec-split", "tilec-gqa-packed", "tilec-paged", "tilec-nosplit", "sdpa-flash", "sdpa-efficient"]
        lines += ["## Decoding (split-KV), time in us and bandwidth as %% of %.0f GB/s (%% of measured copy)" % args.peak_gbs, "",
                  "| dtype | B | H/Hkv | seq_q | seq_kv | splits | " + " | ".join(impls) + " | best tilec/best sdpa |",
                  "|" + "---|" * (7 + len(impls))]
        for r in (x for x in rows if x["mode"] == "decoding"):
            rr = results.get(row_id(r), [])
            nbytes = bytes_moved(r)

            def bw(x):
                gbs = nbytes / (x["ms"] * 1e-3) / 1e9
                return "%.1f us, %.0f%% (%.0f%%)" % (x["ms"] * 1e3, 100 * gbs / args.peak_gbs,
                                                     100 * gbs / copy if copy else float("nan"))
            ms = {e["impl"]: e["ms"] for e in rr if "ms" in e}
            best = min([ms[i] for i in ("sdpa-flash", "sdpa-efficient") if i in ms], default=None)
            ns = next((e.get("num_split") for e in rr if e.get("impl") == "tilec-split"), "-")
            mine = min([ms[i] for i in ("tilec-split", "tilec-gqa-packed") if i in ms], default=None)
            lines.append("| %s | %d | %d/%d | %d | %d | %s | %s | %s |" % (
                r["dtype"], r["batch"], r["heads"], r["heads_kv"], r["seq_q"], r["seq_kv"], ns,
                " | ".join(cell(rr, i, bw) for i in impls),
                "%.2fx" % (best / mine) if best and mine else "-"))
        lines.append("")
    if "varlen" in args.modes:
        impls = ["tilec-varlen", "sdpa-flash-nested", "sdpa-flash-padded", "sdpa-cudnn-padded", "sdpa-efficient-padded"]
        lines += ["## Varlen (packed sequences, lengths 1..4097 mixed), useful TFLOP/s (padding not counted)", "",
                  "| dtype | dim | heads | causal | sequences / tokens | " + " | ".join(impls) + " | tilec/best sdpa |",
                  "|" + "---|" * (6 + len(impls))]
        for r in (x for x in rows if x["mode"] == "varlen"):
            rr = results.get(row_id(r), [])
            fl = sum(4.0 * r["heads"] * n * n * r["dim"] for n in r["lens"]) / (2 if r["causal"] else 1)
            tf = lambda x: "%.0f" % (fl / (x["ms"] * 1e-3) / 1e12)
            ms = {e["impl"]: e["ms"] for e in rr if "ms" in e}
            best = min([ms[i] for i in impls[1:] if i in ms], default=None)
            lines.append("| %s | %d | %d | %s | %d / %d | %s | %s |" % (
                r["dtype"], r["dim"], r["heads"], "yes" if r["causal"] else "no", len(r["lens"]), sum(r["lens"]),
                " | ".join(cell(rr, i, tf) for i in impls),
                "%.2fx" % (best / ms["tilec-varlen"]) if best and "tilec-varlen" in ms else "-"))
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default="gqa,decoding,varlen")
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--gqa-seqs", default="1024,4096,16384")
    ap.add_argument("--kv-lens", default="1024,8192,32768,131072")
    ap.add_argument("--splits", default="auto", help="num_split of the decoding rows (auto: tilec.splitk.choose_kv_splits)")
    ap.add_argument("--peak-gbs", type=float, default=3350.0)
    ap.add_argument("--min-runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--tilec-define", action="append", default=[],
                    help="NAME=VALUE for the tilec kernels (block sizes)")
    ap.add_argument("--out-dir", default=".")
    ap.add_argument("--quick", action="store_true", help="two sizes per mode")
    ap.add_argument("--side-by-side", action="store_true",
                    help="tilec and the peers in one process, taking turns --rounds times (medians)")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of --side-by-side")
    ap.add_argument("--part", choices=("tilec", "peers", "both"), help=argparse.SUPPRESS)
    ap.add_argument("--json-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.modes = args.modes.split(",")
    args.dtypes = args.dtypes.split(",")
    args.gqa_seqs = [int(x) for x in args.gqa_seqs.split(",")]
    args.kv_lens = [int(x) for x in args.kv_lens.split(",")]
    if args.quick:
        args.gqa_seqs, args.kv_lens = args.gqa_seqs[:1], [8192]
    if args.rounds < 1 or (args.rounds > 1 and not args.side_by_side):
        ap.error("--rounds N (N >= 1) goes with --side-by-side")
    if args.part:
        return child_main(args)

    os.makedirs(args.out_dir, exist_ok=True)
    results = run_parts(__file__, os.path.join(args.out_dir, "variants-raw.jsonl"), "bench_attention_variants",
                        ("both",) if args.side_by_side else ("peers", "tilec"))
    rows = ((gqa_rows(args) if "gqa" in args.modes else []) + (decoding_rows(args) if "decoding" in args.modes else [])
            + (varlen_rows(args) if "varlen" in args.modes else []))
    gpu = gpu_name()
    write_report(args.out_dir, result_stem(gpu, "variants"), report(args, rows, results, gpu), args, rows, results)


if __name__ == "__main__":
    sys.exit(main())
