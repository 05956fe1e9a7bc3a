#!/usr/bin/env python3
"""bench_power.py - flagship variants against cuDNN at one shape, with the
GPU's power draw and SM clock: work per clock, not only time.

    python3 bench/bench_power.py --dtype bf16 --dim 64 --seq 2048 --causal \\
        --rounds 2 base=examples/flash_attention.tile \\
        b128=examples/flash_attention.tile#block_M:128 \\
        edit=copy.tile@orig.cu:edited.cu

A variant is NAME=PATH[#K:V,...][@ORIG.cu:EDITED.cu]: the .tile at PATH
with the defines after '#' (dtype, dim and is_causal come from the
options), and with '@' a hand edit of its generated CUDA, loaded through
the runtime's TILEC_CUDA_OVERRIDE (ORIG must be what tilec generates for
that path, defines and shape class; give an edited variant its own copy of
the .tile, or the module cache may hand back the unedited build). Every
variant's output is checked against a float32 reference first (NaN
poisoned).

Each round times every variant and cuDNN (SDPA's CUDNN_ATTENTION) in turn,
twice: flush-timed (bench_attention.Timer: L2 flushed before each run,
median) and sustained (back-to-back runs for --sustained-s after a warm-up,
with nvidia-smi sampling power and SM clock every 50 ms; the samples of the
last two thirds are taken). An H100 at its 700 W limit settles each kernel
at its own clock, so a kernel that moves more data runs slower clocks for
the same schedule: "TFLOP/s per GHz" separates the schedule's work per
clock from the clock the power budget leaves it
(bench/results/2026-11-25-nvidia-h100-session16-notes.md used it).

Prints per variant and round `flush TFLOP/s | sustained TFLOP/s (W, MHz,
TFLOP/s per GHz)`, then the medians' ratios to cuDNN (flush, sustained).
"""

import argparse
import math
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def parse_variant(spec):
    name, _, rest = spec.partition("=")
    rest, _, override = rest.partition("@")
    path, _, extra = rest.partition("#")
    defines = dict(kv.split(":", 1) for kv in extra.split(",") if kv)
    return name, os.path.abspath(path), defines, override


def sustained(B, torch, fn, seconds):
    """Back-to-back runs with nvidia-smi sampling: (ms per run, median W, median MHz)."""
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=power.draw,clocks.sm", "--format=csv,noheader,nounits",
                            "-lms", "50"], stdout=subprocess.PIPE, text=True)
    ms, _ = B.SustainedTimer(torch, rep_ms=seconds * 1000, warmup_ms=700)(fn)
    smi.terminate()
    lines = smi.communicate()[0].strip().splitlines()
    samples = [[float(x) for x in line.split(",")] for line in lines if line.count(",") == 1]
    samples = samples[len(samples) // 3:] or samples
    return ms, statistics.median(p for p, _ in samples), statistics.median(c for _, c in samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variants", nargs="+", metavar="NAME=PATH[#K:V,...][@ORIG:EDITED]")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sustained-s", type=float, default=1.5)
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import bench_attention as B
    import tilec

    torch.cuda.set_stream(torch.cuda.Stream())
    stream = torch.cuda.current_stream()
    ctx = tilec.Context(device="cuda")
    batch, _, heads, _ = B.attn_shape(args.seq, args.dim)
    q, k, v, out = B.attn_inputs(torch, "compact", batch, args.seq, heads, args.dim, B.torch_dtype(torch, args.dtype))
    ref = B.attn_reference(torch, q, k, v, args.causal)
    scale = math.log2(math.e) / math.sqrt(args.dim)

    fns = []
    for spec in args.variants:
        name, path, extra, override = parse_variant(spec)
        if override:
            os.environ["TILEC_CUDA_OVERRIDE"] = override
        else:
            os.environ.pop("TILEC_CUDA_OVERRIDE", None)
        defines = {"dtype": args.dtype, "dim": args.dim, "is_causal": args.causal}
        defines.update(extra)
        kern = ctx.load(path, defines=defines).kernel("flash_attention")
        out.fill_(float("nan"))
        kern(q, k, v, out, scale, stream=stream)
        torch.cuda.synchronize()
        err = B.rel_error(torch, out, ref)
        print("%s: error %.2e of max|ref|" % (name, err), flush=True)
        if not err < 2e-2:
            sys.exit("%s: wrong result" % name)
        fns.append((name, kern.bind(q, k, v, out, scale, stream=stream)))
    os.environ.pop("TILEC_CUDA_OVERRIDE", None)

    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))

    def cudnn():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=args.causal)

    fns.append(("cudnn", cudnn))
    flops = B.attn_flops(batch, heads, args.seq, args.dim, args.causal)
    timer = B.Timer(torch)
    results = {name: [] for name, _ in fns}
    for _ in range(args.rounds):
        for name, fn in fns:
            flush_ms = timer(fn)[0]
            sus_ms, watts, mhz = sustained(B, torch, fn, args.sustained_s)
            results[name].append((flops / flush_ms * 1e-9, flops / sus_ms * 1e-9, watts, mhz))

    print("%s d%d seq %d %s, TFLOP/s: flush | sustained (W, MHz, TFLOP/s per GHz); ratios to cuDNN flush, sustained"
          % (args.dtype, args.dim, args.seq, "causal" if args.causal else "non-causal"))
    peer = results["cudnn"]
    for name, rows in results.items():
        cells = ["%.1f | %.1f (%.0f W, %.0f MHz, %.1f)" % (f, s, w, c, s / c * 1e3) for f, s, w, c in rows]
        flush_ratio = statistics.median(r[0] for r in rows) / statistics.median(r[0] for r in peer)
        sus_ratio = statistics.median(r[1] for r in rows) / statistics.median(r[1] for r in peer)
        print("| %s | %s | %.3f | %.3f |" % (name, " | ".join(cells), flush_ratio, sus_ratio))


if __name__ == "__main__":
    main()
