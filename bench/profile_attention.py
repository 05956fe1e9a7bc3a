"""profile_attention.py - launch tilec's flash attention a few times for a
profiler (no reference check, no CPU run), e.g. on the device machine:

  TILEC_BUILD_DIR=$PWD/build ncu --kernel-name regex:tilec_ --launch-skip 2 \\
      --launch-count 1 --section SpeedOfLight --section WarpStateStats \\
      python3 bench/profile_attention.py --dim 128 -D block_M=128 -D block_N=64
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import tilec  # noqa: E402
import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--dtype", default="f16")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("-D", action="append", default=[], help="NAME=VALUE define")
    a = ap.parse_args()
    defines = {"dim": a.dim, "is_causal": "true" if a.causal else "false", "dtype": a.dtype}
    for d in a.D:
        k, v = d.split("=", 1)
        defines[k] = v
    here = os.path.dirname(os.path.abspath(__file__))
    ctx = tilec.Context(device="cuda")
    kern = ctx.load(os.path.join(here, "..", "examples", "flash_attention.tile"), defines=defines).kernel(
        "flash_attention")
    batch, heads = 16384 // a.seq, 2048 // a.dim
    tdt = torch.float16 if a.dtype == "f16" else torch.bfloat16
    q, k, v = (torch.randn(batch, a.seq, heads, a.dim, device="cuda", dtype=tdt) for _ in range(3))
    out = torch.empty_like(q)
    scale = 1.4426950408889634 / math.sqrt(a.dim)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(a.iters):
        kern(q, k, v, out, scale)
    end.record()
    torch.cuda.synchronize()
    ms = start.elapsed_time(end) / a.iters
    flops = 4 * batch * heads * a.seq * a.seq * a.dim / (2 if a.causal else 1)
    print(f"{defines}: {ms:.3f} ms, {flops / ms / 1e9:.1f} TFLOP/s")


if __name__ == "__main__":
    main()
