"""profile_decoding.py - launch examples/flash_decoding.tile's split and
combine kernels and SDPA FLASH on one decoding shape a few times each, for a
profiler (no timing; tilec's output is checked once against SDPA's). On the
device machine, e.g.:

  TILEC_BUILD_DIR=$PWD/build ncu --clock-control none --launch-skip 4 \\
      --launch-count 8 --metrics gpu__time_duration.sum,dram__bytes_read.sum \\
      python3 bench/profile_decoding.py --kv 8192 --splits 8

What session 4 of 2026-11-24 read this way on an H100 (batch 1, 32 heads,
KV 8192, 8 splits): split kernel 52 us, combine 30 us before it folded four
splits per step, 5.5 us after; FlashAttention's 50 + 7.4 us.

Written from the session's one-off drivers, which ran on the H100; this
file's result check is new and has not run on a GPU yet.
"""
import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import tilec  # noqa: E402
import torch  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--seq-q", type=int, default=1)
    ap.add_argument("--kv", type=int, default=8192)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--splits", type=int, default=8)
    ap.add_argument("--iters", type=int, default=3)
    a = ap.parse_args()
    b, h, sq, d, ns = a.batch, a.heads, a.seq_q, a.dim, a.splits
    ctx = tilec.Context(device="cuda")
    mod = ctx.load(os.path.join(HERE, "..", "examples", "flash_decoding.tile"),
                   defines={"dtype": "bf16", "dim": str(d)})
    split, combine = mod.kernel("flash_decoding_split"), mod.kernel("flash_decoding_combine")
    q = torch.randn(b, sq, h, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, a.kv, h, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    o_part = torch.empty(b, h, ns, sq, d, device="cuda")
    lse_part = torch.empty(b, h, ns, sq, device="cuda")
    out = torch.full_like(q, float("nan"))
    scale = 1.4426950408889634 / math.sqrt(d)  # log2(e) / sqrt(d): the kernels use exp2

    def sdpa():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)

    split(q, k, v, o_part, lse_part, out, scale)
    if ns > 1:   # one split writes out itself
        combine(o_part, lse_part, out)
    ref = sdpa().float()
    err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
    if not err < 2e-2:
        sys.exit("flash_decoding: wrong result, error %.3g of max|ref|" % err)
    for _ in range(a.iters):
        split(q, k, v, o_part, lse_part, out, scale)
        if ns > 1:
            combine(o_part, lse_part, out)
        sdpa()
    torch.cuda.synchronize()
    print("decoding B %d H %d q %d kv %d d %d, %d splits: error %.2g, ran %d times each" % (b, h, sq, a.kv, d, ns, err,
                                                                                          a.iters))


main()
