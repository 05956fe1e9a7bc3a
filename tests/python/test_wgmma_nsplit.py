"""test_wgmma_nsplit.py - wgmma with the warpgroups splitting N
(tests/passes/wgmma_nsplit.tile): an accumulator of 64 rows over 8 warps,
on sm_90a two warpgroups each computing 48 of its 96 columns from B in
narrowed panels, then a column vector and a row vector beside it and the
atomics of all three (the fragment's column pairs, each 1-D element added
by its first holder only); and the same gemm fallen back to mma.sync in the
same warp order (nsplit_fallback: B shared with an mma.sync gemm).
Integer-valued inputs: every sum is exact, so results compare exactly.

CPU (C backend) by default; with TILEC_TEST_DEVICE=cuda the same checks run
on the GPU through PyTorch tensors (the device machine:
`ctest --test-dir build -R python.wgmma_nsplit.gpu`)."""

import os

import harness
import numpy as np

harness.test_device()  # SKIP for a cuda run without PyTorch's GPU

KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "passes", "wgmma_nsplit.tile")


def launch(name, *arrays):
    harness.run_in_place(KERNEL, name, *arrays)


def ints(lo, hi, shape, dtype):
    return harness.rng.integers(lo, hi, shape).astype(dtype)


def check_exact(what, got, want):
    bad = np.flatnonzero(got != want)
    print("  %s: %d values, %d differ" % (what, got.size, bad.size))
    assert bad.size == 0, "%s: first difference at %d: got %r, want %r" % (
        what, bad[0], got.flat[bad[0]], want.flat[bad[0]])


def test_nsplit():
    a = ints(-3, 4, (128, 64), np.float16)          # [K, M]: read transposed
    b = ints(-3, 4, (128, 96), np.float16)          # [K, N]
    g, r, v = ints(-9, 9, (64, 96), np.float32), ints(-9, 9, 64, np.float32), ints(-9, 9, 96, np.float32)
    prod = a.astype(np.float64).T @ b.astype(np.float64)
    want_g, want_r, want_v = g + prod * 2.0 + 1.0, r + 1.0, v + 2.0
    launch("nsplit", a, b, g, r, v)
    check_exact("acc * colv + rowv, column pairs", g, want_g.astype(np.float32))
    check_exact("row vector, added once per row", r, want_r.astype(np.float32))
    check_exact("column vector, added once per column", v, want_v.astype(np.float32))


def test_nsplit_fallback():
    a = ints(-3, 4, (128, 64), np.float16)
    b = ints(-3, 4, (128, 96), np.float16)
    c = ints(-3, 4, (32, 128), np.float16)          # [32, K]
    g, h = np.zeros((64, 96), np.float32), np.zeros((32, 96), np.float32)
    launch("nsplit_fallback", a, b, c, g, h)
    check_exact("mma.sync in warpgroup order", g, (a.astype(np.float64).T @ b.astype(np.float64)).astype(np.float32))
    check_exact("the mma.sync gemm beside it", h, (c.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))


harness.main(globals())
