"""test_atomic_add.py - atomic_add (tests/python/kernels/atomic_add.tile):
every block adds its tile into the same rows of Y, from a fragment and from a
shared tile, at sizes that are not multiples of the tile (rows of X past M,
rows of Y past P and columns past N on the edges).

CPU (C backend) by default; with TILEC_TEST_DEVICE=cuda the same checks run
on the GPU through PyTorch tensors (atomicAdd; the device machine:
`ctest --test-dir build -R python.atomic_add.gpu`)."""

import os

import harness
import numpy as np

if os.environ.get("TILEC_TEST_DEVICE") == "cuda":
    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if not gpu:
        print("SKIP: TILEC_TEST_DEVICE=cuda needs PyTorch with a CUDA GPU")
        raise SystemExit(harness.SKIP)

KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "atomic_add.tile")
BM = 64


def run(name, M, N, P):
    device = os.environ.get("TILEC_TEST_DEVICE", "cpu")
    rng = harness.rng
    x = rng.uniform(-1, 1, (M, N)).astype(np.float16)
    y0 = rng.uniform(-1, 1, (P, N)).astype(np.float32)
    want = y0.astype(np.float64)
    xd = x.astype(np.float64)
    for b in range(0, M, BM):
        rows = min(BM, M - b, P)
        want[:rows] += xd[b:b + rows]
    if device == "cuda":
        import torch
        ctx = harness.tilec.Context(device="cuda", cache_dir=harness.CACHE_DIR)
        k = ctx.load_file(KERNEL).kernel(name)
        tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y0.copy()).cuda()
        k(tx, ty)
        torch.cuda.synchronize()
        got = ty.cpu().numpy()
    else:
        ctx = harness.cpu_context()
        k = ctx.load_file(KERNEL).kernel(name)
        got = y0.copy()
        k(x, got)
    # Sums of up to ceil(M / 64) f16 values in f32, in any order.
    harness.check_close("%s M=%d N=%d P=%d" % (name, M, N, P), got, want, 1e-5)


def test_fragment_edges():
    run("fold_fragment", 1000, 100, 37)


def test_fragment_full_rows():
    run("fold_fragment", 640, 64, 64)


def test_shared_edges():
    run("fold_shared", 1000, 100, 37)


def test_shared_more_rows_than_blocks():
    run("fold_shared", 77, 45, 100)


harness.main(globals())
