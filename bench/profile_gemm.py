"""profile_gemm.py - launch tilec's gemm a few times for a profiler (no
reference check), e.g. on the device machine:

  TILEC_BUILD_DIR=$PWD/build ncu --kernel-name regex:tilec_ --launch-skip 2 \\
      --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \\
      python3 bench/profile_gemm.py --n 8192 -D block_N=256 -D num_stages=4
  (--shape 3000x5000x2000 for M x N x K other than n^3)
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
    ap.add_argument("--shape", default=None, help="MxNxK (default n x n x n)")
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
    m, n, k = (int(v) for v in a.shape.split("x")) if a.shape else (a.n, a.n, a.n)
    x = torch.randn(m, k, device="cuda", dtype=tdt)
    y = torch.randn(k, n, device="cuda", dtype=tdt)
    out = torch.empty(m, n, device="cuda", dtype=tdt)
    for _ in range(a.iters):
        kern(x, y, out)
    torch.cuda.synchronize()
    print("gemm %dx%dx%d %s %s: ran %d times" % (m, n, k, a.dtype, defines, a.iters))


main()
