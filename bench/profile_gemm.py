"""profile_gemm.py - launch tilec's gemm a few times for a profiler (no
reference check), e.g. on the device machine:

  TILEC_BUILD_DIR=$PWD/build ncu --kernel-name regex:tilec_ --launch-skip 2 \\
      --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \\
      python3 bench/profile_gemm.py --n 8192 -D block_N=256 -D num_stages=4
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import tilec  # noqa: E402
import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--dtype", default="f16")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("-D", action="append", default=[], help="NAME=VALUE define")
    a = ap.parse_args()
    defines = {"dtype": a.dtype}
    for d in a.D:
        k, v = d.split("=", 1)
        defines[k] = v
    here = os.path.dirname(os.path.abspath(__file__))
    ctx = tilec.Context(device="cuda")
    kern = ctx.load(os.path.join(here, "..", "examples", "gemm.tile"), defines=defines).kernel("gemm")
    tdt = torch.float16 if a.dtype == "f16" else torch.bfloat16
    x, y = (torch.randn(a.n, a.n, device="cuda", dtype=tdt) for _ in range(2))
    out = torch.empty_like(x)
    for _ in range(a.iters):
        kern(x, y, out)
    torch.cuda.synchronize()
    print("gemm %d^3 %s %s: ran %d times" % (a.n, a.dtype, defines, a.iters))


main()
