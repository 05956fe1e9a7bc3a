"""test_reduce_across_warps.py - row reductions of a gemm accumulator whose
rows are split across warps (policy = square): on the GPU each warp column
leaves a partial in shared memory (infer-layout's across_warps scratch).

CPU (C backend) by default; with TILEC_TEST_DEVICE=cuda the same checks run
on the GPU through PyTorch tensors (the device machine:
`TILEC_TEST_DEVICE=cuda ctest --test-dir build -R reduce_across`)."""

import os

import harness
import numpy as np

harness.test_device()  # SKIP for a cuda run without PyTorch's GPU

KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "rowstats.tile")


def run(M):
    device = os.environ.get("TILEC_TEST_DEVICE", "cpu")
    rng = harness.rng
    a = rng.standard_normal((M, 64)).astype(np.float16)
    b = rng.standard_normal((64, 128)).astype(np.float16)
    c = a.astype(np.float64) @ b.astype(np.float64)
    want_max, want_sum = c.max(axis=1), c.sum(axis=1)
    if device == "cuda":
        import torch
        ctx = harness.tilec.Context(device="cuda", cache_dir=harness.CACHE_DIR)
        k = ctx.load_file(KERNEL).kernel("rowstats")
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        mx = torch.full((M,), float("nan"), device="cuda")
        sm = torch.full((M,), float("nan"), device="cuda")
        k(ta, tb, mx, sm)
        torch.cuda.synchronize()
        got_max, got_sum = mx.cpu().numpy(), sm.cpu().numpy()
    else:
        ctx = harness.cpu_context()
        k = ctx.load_file(KERNEL).kernel("rowstats")
        mx, sm = harness.poisoned((M,), np.float32), harness.poisoned((M,), np.float32)
        k(a, b, mx, sm)
        got_max, got_sum = mx, sm
    # f16 inputs, f32 accumulation over K = 64: a few f32 roundings.
    harness.check_close("row max (M=%d)" % M, got_max, want_max, 1e-4)
    harness.check_close("row sum (M=%d)" % M, got_sum, want_sum, 1e-4)


def test_full_blocks():
    run(128)


def test_partial_block():
    run(100)


harness.main(globals())
