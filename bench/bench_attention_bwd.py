#!/usr/bin/env python3
"""bench_attention_bwd.py - the FlashAttention backward pass of
examples/flash_attention_bwd.tile on the GPU against torch SDPA's backward
with the FLASH_ATTENTION (FA2) and CUDNN_ATTENTION backends, on the same
shapes, in one run (issue 13). See bench/README.md for the command.

Rows: dtype (--dtypes, default bf16) x dim 64 and 128 x seq_len (--seqs,
default 2048,4096,8192) x causal and not; batch * seq_len = 16384, heads =
2048 / dim (BSHD layout, as the kernels take it).

tilec's backward is its three kernels, timed together as one run:
flash_attention_bwd_preprocess (Delta = rowsum(dO * O), zeroes the f32 dQ
accumulator), flash_attention_bwd (dK, dV per key block, dQ by atomic_add)
and flash_attention_bwd_dq_convert (dQ f32 -> dtype). O and LSE come from
flash_attention_fwd, run once before (not timed); the forward is timed on
its own as well (tilec-fwd-lse), beside the flagship forward without LSE
(tilec-fwd, examples/flash_attention.tile) to show what the LSE output
costs. --bwd-config NAME:D=V,D=V (repeatable) sets the tilec columns: -D
settings of the backward kernels (block sizes); NAME@FILE:D=V runs the
backward kernels of another .tile file (a variant of the example, e.g. an
older version of it) under the same defines. The default set: the
example's defaults (on sm_90a 128 keys over 8 warps by 96 queries at dim 64
non-causal, 64 otherwise), 3 pipeline stages, and 64 queries per block (the
defaults again except at dim 64 non-causal). The ratio columns use the best
tilec column of the row.

The peers: out = SDPA(q, k, v) under the backend, then the timed
torch.autograd.grad(out, (q, k, v), dO, retain_graph=True) (the backward
only; the forward and its saved tensors stay outside the timing).

Every implementation is checked before it is timed: dQ, dK, dV against a
float32 reference (SDPA's EFFICIENT backend on float32 copies, autograd),
max|x - ref| / max|ref| with bounds 1e-2 (f16) and 4e-2 (bf16); a wrong
result is reported, not timed. TFLOP/s = 2.5 x the forward's
4 B H S^2 D (half when causal) / time. Timing: bench_attention.Timer (CUDA
events, L2 flushed before each run, median of >= 20 runs).

tilec and the peers run in two child processes (--part tilec / --part
peers): a fault in a tilec kernel cannot take the peers' numbers with it.
--side-by-side runs both in one child instead, tilec's rows then the
peers' in each of --rounds N rounds, and reports each implementation's
median round (for rows whose run-to-run spread is as large as the gap).
The "default / flash" column is the example's defaults against FA2.
Results: <out-dir>/<date>-<gpu>-bwd.{md,json}; the table is printed last.
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
from _common import (child_setup, error_result, gpu_name, json_emitter, rel_error, result_stem,  # noqa: E402
                     rounds_collector, run_parts, write_report)
BOUND = {"f16": 1e-2, "bf16": 4e-2}
LOG2E = math.log2(math.e)
DEFAULT_CONFIGS = ["default:", "stages3:bwd_stages=3", "bn64:bwd_block_N=64"]


def rows_for(args):
    rows = []
    for dt in args.dtypes:
        for dim in (64, 128):
            for causal in (False, True):
                for seq in args.seqs:
                    rows.append(dict(dtype=dt, dim=dim, heads=2048 // dim, causal=causal,
                                     batch=max(1, 16384 // seq), seq=seq))
    return rows


def row_id(r):
    return "bwd-%s-d%d-h%d-%s-b%d-s%d" % (r["dtype"], r["dim"], r["heads"], "causal" if r["causal"] else "full",
                                          r["batch"], r["seq"])


def parse_configs(args):
    out = []
    for c in args.bwd_config or DEFAULT_CONFIGS:
        name, _, defs = c.partition(":")
        name, _, file = name.partition("@")
        d = {}
        for kv in filter(None, defs.split(",")):
            n, v = kv.split("=", 1)
            d[n] = v
        out.append((name, d, os.path.abspath(file) if file else "flash_attention_bwd.tile"))
    return out


def make_inputs(torch, r, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dt = torch.float16 if r["dtype"] == "f16" else torch.bfloat16
    shape = (r["batch"], r["seq"], r["heads"], r["dim"])
    q, k, v, do = (torch.randn(shape, generator=g, device="cuda", dtype=torch.float32).to(dt) for _ in range(4))
    return q, k, v, do


def reference(torch, q, k, v, do, causal):
    """dQ, dK, dV in float32 (BSHD), through SDPA's memory-efficient kernel."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    qf, kf, vf = (t.float().transpose(1, 2).detach().requires_grad_() for t in (q, k, v))
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        out = F.scaled_dot_product_attention(qf, kf, vf, is_causal=causal)
    grads = torch.autograd.grad(out, (qf, kf, vf), do.float().transpose(1, 2))
    return [g.transpose(1, 2).contiguous() for g in grads]


def measure(torch, timer, fn, got, refs, dt, impl):
    """got() returns (dQ, dK, dV) after one run; checked against refs."""
    outs = got()
    torch.cuda.synchronize()
    errs = [rel_error(torch, o, r) for o, r in zip(outs, refs)]
    if not max(errs) <= BOUND[dt]:
        return {"impl": impl, "error": "wrong result: rel error dQ %.2e dK %.2e dV %.2e > %.0e" % (
            errs[0], errs[1], errs[2], BOUND[dt])}
    ms, runs = timer(fn)
    return {"impl": impl, "ms": ms, "runs": runs, "err": max(errs)}


# ----------------------------------------------------------------- tilec ---

_TILEC_STATE = None


def part_tilec(rows, args, torch, timer, emit, turn=0):
    """tilec's rows; the configurations run in a rotated order in each
    --side-by-side round (turn = round index): the same code timed in
    another place of the sequence (its buffers at other addresses) read up
    to 2 % apart on an H100, so each configuration takes every place once."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import tilec
    global _TILEC_STATE
    if _TILEC_STATE is None:   # one context, stream and module set for every round
        torch.cuda.set_stream(torch.cuda.Stream())
        _TILEC_STATE = (tilec.Context(device="cuda", cache_dir=tempfile.mkdtemp(prefix="bench-bwd-cache-")),
                        torch.cuda.current_stream().cuda_stream, {})
    ctx, stream, mods = _TILEC_STATE

    def kernel(file, name, defines):
        key = (file, tuple(sorted(defines.items())))   # one load per module and -D set
        if key not in mods:
            mods[key] = ctx.load(os.path.join(ROOT, "examples", file), defines=dict(defines))
        return mods[key].kernel(name)

    configs = parse_configs(args)
    turn %= len(configs)
    configs = configs[turn:] + configs[:turn]
    for r in rows:
        rid = row_id(r)
        try:
            q, k, v, do = make_inputs(torch, r, args.seed)
            refs = reference(torch, q, k, v, do, r["causal"])
            base = {"dim": str(r["dim"]), "dtype": r["dtype"], "is_causal": "true" if r["causal"] else "false"}
            scale = 1.0 / math.sqrt(r["dim"]) * LOG2E
            B, S, H, D = q.shape
            o = torch.full_like(q, float("nan"))
            lse = torch.full((B, H, S), float("nan"), device="cuda")
            kf = kernel("flash_attention_bwd.tile", "flash_attention_fwd", base)
            fwd = kf.bind(q, k, v, o, lse, scale, stream=stream)
            fwd()
            torch.cuda.synchronize()
            ms, runs = timer(fwd)
            emit(rid, {"impl": "tilec-fwd-lse", "ms": ms, "runs": runs})
            kflag = kernel("flash_attention.tile", "flash_attention", base)
            o2 = torch.empty_like(q)
            ms, runs = timer(kflag.bind(q, k, v, o2, scale, stream=stream))
            emit(rid, {"impl": "tilec-fwd", "ms": ms, "runs": runs})
            fwd()   # O and LSE for the backward
            for name, extra, file in configs:
                impl = "tilec-%s" % name
                try:
                    defs = dict(base, **extra)
                    kp = kernel(file, "flash_attention_bwd_preprocess", defs)
                    kb = kernel(file, "flash_attention_bwd", defs)
                    kc = kernel(file, "flash_attention_bwd_dq_convert", defs)
                    delta = torch.full((B, H, S), float("nan"), device="cuda")
                    dqa = torch.full((B, H, D, S), float("nan"), device="cuda")   # dQ^T accumulator
                    dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(3))
                    r1 = kp.bind(o, do, delta, dqa, stream=stream)
                    r2 = kb.bind(q, k, v, do, lse, delta, dqa, dk, dv, scale, stream=stream)
                    r3 = kc.bind(dqa, dq, stream=stream)

                    def run(r1=r1, r2=r2, r3=r3):
                        r1()
                        r2()
                        r3()
                    res = measure(torch, timer, run, lambda run=run, dq=dq, dk=dk, dv=dv: (run(), (dq, dk, dv))[1],
                                  refs, r["dtype"], impl)
                    res["defines"] = extra
                    emit(rid, res)
                except Exception as e:  # noqa: BLE001 - reported in the table
                    emit(rid, error_result(impl, e, 300))
                    traceback.print_exc()
        except Exception as e:  # noqa: BLE001 - reported in the table
            emit(rid, error_result("tilec", e, 300))
            traceback.print_exc()


# ----------------------------------------------------------------- peers ---

def part_peers(rows, args, torch, timer, emit):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for r in rows:
        rid = row_id(r)
        q, k, v, do = make_inputs(torch, r, args.seed)
        refs = reference(torch, q, k, v, do, r["causal"])
        dot = do.transpose(1, 2)
        for impl, backend in (("sdpa-flash", "FLASH_ATTENTION"), ("sdpa-cudnn", "CUDNN_ATTENTION")):
            try:
                be = getattr(SDPBackend, backend)
                qt, kt, vt = (t.transpose(1, 2).detach().requires_grad_() for t in (q, k, v))
                with sdpa_kernel([be]):
                    out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=r["causal"])

                def fn(out=out, qt=qt, kt=kt, vt=vt):
                    return torch.autograd.grad(out, (qt, kt, vt), dot, retain_graph=True)

                def got(fn=fn):
                    return [g.transpose(1, 2) for g in fn()]
                emit(rid, measure(torch, timer, fn, got, refs, r["dtype"], impl))
                del out
            except Exception as e:  # noqa: BLE001
                emit(rid, error_result(impl, e, 200))


def child_main(args):
    torch, timer = child_setup(args.min_runs)
    rows = rows_for(args)
    with open(args.json_out, "a") as f:
        emit = json_emitter(f, args.part)
        if args.part == "both":
            collect, flush = rounds_collector(emit)
            for turn in range(args.rounds):
                part_tilec(rows, args, torch, timer, collect, turn)
                part_peers(rows, args, torch, timer, collect)
            flush()
        elif args.part == "peers":
            part_peers(rows, args, torch, timer, emit)
        else:
            part_tilec(rows, args, torch, timer, emit)


# ---------------------------------------------------------------- report ---

def report(args, rows, results, gpu):
    lines = ["# tilec FlashAttention backward on %s (%s)" % (gpu, datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")),
             "",
             "TFLOP/s of the backward (2.5 x the forward's 4 B H S^2 D, half when causal); tilec = its three kernels "
             "(preprocess + backward + dQ convert). Forward columns: tilec's forward with the LSE output and the "
             "flagship without it, TFLOP/s of the forward's FLOPs.",
             ("Timing: tilec and the peers side by side in one process, %d round(s) in turn, medians." % args.rounds
              if args.side_by_side else "Timing: tilec and the peers in two processes, one after the other."), ""]
    configs = ["tilec-%s" % n for n, _, _ in parse_configs(args)]
    impls = configs + ["sdpa-flash", "sdpa-cudnn"]

    def cell(rr, impl, fmt):
        x = next((e for e in rr if e.get("impl") == impl), None)
        if x is None:
            return "-"
        if "error" in x:
            return "FAIL(%s)" % x["error"][:70]
        return fmt(x)

    lines += ["| dtype | dim | causal | B x S x H | " + " | ".join(impls) +
              " | default / flash | best tilec / flash | best tilec / cudnn | fwd-lse | fwd |",
              "|" + "---|" * (9 + len(impls))]
    for r in rows:
        rr = results.get(row_id(r), [])
        fwd_fl = 4.0 * r["batch"] * r["heads"] * r["seq"] ** 2 * r["dim"] / (2 if r["causal"] else 1)
        bwd_fl = 2.5 * fwd_fl
        tf = lambda x: "%.0f" % (bwd_fl / (x["ms"] * 1e-3) / 1e12)
        tf_fwd = lambda x: "%.0f" % (fwd_fl / (x["ms"] * 1e-3) / 1e12)
        ms = {e["impl"]: e["ms"] for e in rr if "ms" in e}
        best = min([ms[c] for c in configs if c in ms], default=None)
        ratio = lambda peer, t=best: "%.2fx" % (ms[peer] / t) if t and peer in ms else "-"
        lines.append("| %s | %d | %s | %dx%dx%d | %s | %s | %s | %s | %s | %s |" % (
            r["dtype"], r["dim"], "yes" if r["causal"] else "no", r["batch"], r["seq"], r["heads"],
            " | ".join(cell(rr, i, tf) for i in impls), ratio("sdpa-flash", ms.get("tilec-default")),
            ratio("sdpa-flash"), ratio("sdpa-cudnn"),
            cell(rr, "tilec-fwd-lse", tf_fwd), cell(rr, "tilec-fwd", tf_fwd)))
    lines.append("")
    lines.append("tilec configurations (-D of the backward kernels): " + "; ".join(
        "%s = %s%s" % (n, ",".join("%s=%s" % kv for kv in d.items()) or "the defaults",
                       "" if f == "flash_attention_bwd.tile" else " of " + os.path.relpath(f, ROOT))
        for n, d, f in parse_configs(args)))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--seqs", default="2048,4096,8192")
    ap.add_argument("--bwd-config", action="append",
                    help="NAME:D=V,D=V -D settings of the backward kernels (repeatable; default: %s)"
                    % " ".join(DEFAULT_CONFIGS))
    ap.add_argument("--min-runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out-dir", default=".")
    ap.add_argument("--quick", action="store_true", help="seq_len 4096 only")
    ap.add_argument("--side-by-side", action="store_true",
                    help="tilec and the peers in one process, taking turns --rounds times (medians)")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of --side-by-side")
    ap.add_argument("--part", choices=("tilec", "peers", "both"), help=argparse.SUPPRESS)
    ap.add_argument("--json-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.dtypes = args.dtypes.split(",")
    args.seqs = [int(x) for x in args.seqs.split(",")]
    if args.quick:
        args.seqs = [4096]
    if args.rounds < 1 or (args.rounds > 1 and not args.side_by_side):
        ap.error("--rounds N (N >= 1) goes with --side-by-side")
    if args.part:
        return child_main(args)

    os.makedirs(args.out_dir, exist_ok=True)
    results = run_parts(__file__, os.path.join(args.out_dir, "bwd-raw.jsonl"), "bench_attention_bwd",
                        ("both",) if args.side_by_side else ("peers", "tilec"))
    rows = rows_for(args)
    gpu = gpu_name()
    write_report(args.out_dir, result_stem(gpu, "bwd"), report(args, rows, results, gpu), args, rows, results)


if __name__ == "__main__":
    sys.exit(main())
