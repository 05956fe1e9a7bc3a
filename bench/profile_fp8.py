"""profile_fp8.py - launch examples/gemm_fp8_nt.tile (FP8 tiles) and
torch._scaled_mm on the same inputs a few times each, for a profiler (no
timing; the result is checked once against a float32 product). On the
device machine, e.g.:

  TILEC_BUILD_DIR=$PWD/build ncu --clock-control none --launch-skip 4 \\
      --launch-count 4 --metrics gpu__time_duration.sum,lts__t_bytes.sum,\\
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \\
      python3 bench/profile_fp8.py --shape 4096x4096x4096
  (TILEC_CLUSTER_MULTICAST=1: the module's 2-CTA cluster build)

What session 4 of 2026-11-24 read this way on an H100 (bench/results/
2026-11-24-nvidia-h100-session4-notes.md): both kernels stream L2 at about
6.7 TB/s, cuBLAS moving 689 MB where tilec moves 870 MB.

Written from the session's one-off drivers, which ran on the H100; this
file's result check is new and has not run on a GPU yet.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import tilec  # noqa: E402
import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="4096x4096x4096", help="MxNxK")
    ap.add_argument("--iters", type=int, default=4)
    ap.add_argument("-D", action="append", default=[], help="NAME=VALUE define over the FP8-tile defaults")
    a = ap.parse_args()
    defines = {"a_tile": "f8e4m3", "b_tile": "f8e4m3", "block_K": "128", "out_dtype": "f16"}
    for d in a.D:
        k, v = d.split("=", 1)
        defines[k] = v
    m, n, k = (int(v) for v in a.shape.split("x"))
    ctx = tilec.Context(device="cuda")
    kern = ctx.load(os.path.join(HERE, "..", "examples", "gemm_fp8_nt.tile"), defines=defines).kernel("gemm_fp8_nt")
    fp8 = torch.float8_e4m3fn
    x = (torch.randn((m, k), device="cuda") * 2).to(fp8)
    w = (torch.randn((k, n), device="cuda") * 2).to(fp8)
    wt = w.t().contiguous()  # Bt [N, K]: torch._scaled_mm's column-major B
    one = torch.tensor(1.0, device="cuda")
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    kern(x.view(torch.uint8), wt.view(torch.uint8), out, 1.0, 1.0)
    ref = x.float() @ w.float()
    err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
    if not err < 1e-2:
        sys.exit("gemm_fp8_nt %s: wrong result, error %.3g of max|ref|" % (a.shape, err))
    for _ in range(a.iters):
        kern(x.view(torch.uint8), wt.view(torch.uint8), out, 1.0, 1.0)
        torch._scaled_mm(x, wt.t(), scale_a=one, scale_b=one, out_dtype=torch.float16)
    torch.cuda.synchronize()
    print("gemm_fp8_nt %s %s: error %.2g, ran %d times each (tilec, torch._scaled_mm)" % (a.shape, defines, err, a.iters))


main()
