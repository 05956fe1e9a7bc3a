#!/usr/bin/env python3
"""sweep_kv_splits.py - examples/flash_decoding.tile (split + combine) at
chosen split counts against SDPA FLASH on the same tensors, to check or
retune tilec.splitk.choose_kv_splits on a GPU. For each row: every tilec
output is checked against SDPA's first; then SDPA and each split count
(split + combine, and the split and combine kernels alone) are timed with
bench_attention.Timer (L2 flushed before each run), three rounds in turn;
medians in us, and SDPA / tilec. One token per sequence with GQA runs the
group-packed kernel (flash_decoding_gqa_split), as bench_attention_variants
does. bf16, dim 128, BSHD.

  python3 bench/sweep_kv_splits.py --rows "1,32,32,1,131072:4,8,41" --rows "8,32,8,1,131072:1,2,4"

A row is batch,heads,heads_kv,seq_q,seq_kv:split counts ("auto" adds
choose_kv_splits' choice). --define D=V (repeatable) sets -D of the
decoding kernels. What session 11 of 2026-11-24 measured with it on an
H100: bench/results/2026-11-24-nvidia-h100-session11-notes.md, calls 1-3.
"""
import argparse
import math
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
LOG2E = 1.4426950408889634


def parse_row(text):
    shape, _, counts = text.partition(":")
    b, h, hkv, sq, skv = (int(x) for x in shape.split(","))
    return (b, h, hkv, sq, skv), [c.strip() for c in counts.split(",") if c.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", action="append", required=True, help="B,H,Hkv,seq_q,seq_kv:counts (repeatable)")
    ap.add_argument("--define", action="append", default=[], help="D=V for the decoding kernels")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import tilec
    import bench_attention as ba
    defines = {"dim": "128", "dtype": "bf16", "is_causal": "false"}
    defines.update(kv.split("=", 1) for kv in args.define)
    ctx = tilec.Context(device="cuda", cache_dir=tempfile.mkdtemp(prefix="sweep-kv-splits-"))
    torch.cuda.set_stream(torch.cuda.Stream())
    stream = torch.cuda.current_stream().cuda_stream
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    timer = ba.Timer(torch, min_runs=20)
    mod = ctx.load(os.path.join(ROOT, "examples", "flash_decoding.tile"), defines=defines)
    block_N = int(defines.get("block_N", 64))
    print("%s, SDPA FLASH / tilec in parentheses; us" % torch.cuda.get_device_name(0))
    for text in args.rows:
        (b, h, hkv, sq, skv), counts = parse_row(text)
        g = torch.Generator(device="cuda").manual_seed(1)
        q = torch.randn((b, sq, h, 128), generator=g, device="cuda", dtype=torch.bfloat16)
        k = torch.randn((b, skv, hkv, 128), generator=g, device="cuda", dtype=torch.bfloat16)
        v = torch.randn((b, skv, hkv, 128), generator=g, device="cuda", dtype=torch.bfloat16)
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
        gqa = hkv < h
        packed = gqa and sq == 1

        def flash():
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                if gqa:
                    return F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
                return F.scaled_dot_product_attention(qt, kt, vt)
        ref = flash().float().transpose(1, 2)
        split = mod.kernel("flash_decoding_gqa_split" if packed else "flash_decoding_split")
        combine = mod.kernel("flash_decoding_combine")
        base = b * (hkv if packed else h * math.ceil(sq / 64))
        auto = tilec.splitk.choose_kv_splits(base, math.ceil(skv / block_N), sms,
                                             tilec.splitk.blocks_per_sm_of(split.info),
                                             kv_share=1 if packed else h // hkv)
        runs = {"flash": flash}
        for c in counts:
            ns = auto if c == "auto" else int(c)
            op = torch.full((b, h, ns, sq, 128), float("nan"), device="cuda")
            lp = torch.full((b, h, ns, sq), float("nan"), device="cuda")
            out = torch.full_like(q, float("nan"))
            scale = 1.0 / math.sqrt(128) * LOG2E
            # The per-head kernel writes out itself when there is one split.
            r1 = (split.bind(q, k, v, op, lp, scale, stream=stream) if packed else
                  split.bind(q, k, v, op, lp, out, scale, stream=stream))
            r2 = combine.bind(op, lp, out, stream=stream)

            def both(r1=r1, r2=r2, alone=ns == 1 and not packed):
                r1()
                if not alone:
                    r2()
            both()
            torch.cuda.synchronize()
            err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
            if not err < 2e-2:
                raise SystemExit("row %s, %d splits: wrong result (rel error %.3e)" % (text, ns, err))
            runs["s%d" % ns] = both
            runs["s%d.split" % ns] = r1
            runs["s%d.combine" % ns] = r2
        times = {n: [] for n in runs}
        for _ in range(args.rounds):
            for n, fn in runs.items():
                times[n].append(timer(fn)[0] * 1e3)
        fl = statistics.median(times["flash"])
        line = "B %d, H %d/%d, %d tokens, KV %d (auto: %d): flash %.1f |" % (b, h, hkv, sq, skv, auto, fl)
        for n in runs:
            if n != "flash":
                t = statistics.median(times[n])
                line += " %s %.1f%s" % (n, t, "" if "." in n else " (%.3f)" % (fl / t))
        print(line, flush=True)
        del q, k, v, runs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
