"""test_atomic_add.py - atomic_add (tests/python/kernels/atomic_add.tile):
every block adds its tile into the same rows of Y, from a fragment and from a
shared tile, at sizes that are not multiples of the tile (rows of X past M,
rows of Y past P and columns past N on the edges); from 1-D fragments (row
sums after reduce_sum, a column vector), whose elements are replicated over
threads on the GPU and must be added once each. The element form,
atomic_add(G[i, j], v) (tests/python/kernels/atomic_add_element.tile): a
histogram with bins read from an i32 tensor (some outside the bins:
skipped), column and row sums of a gemm accumulator and of a row-group
fragment (2-D fragments, row and column vectors, each replicated over
threads differently on the GPU), and a count outside any parallel loop;
integer-valued inputs, so the expected sums are exact in any order.

CPU (C backend) by default; with TILEC_TEST_DEVICE=cuda the same checks run
on the GPU through PyTorch tensors (atomicAdd; the device machine:
`ctest --test-dir build -R python.atomic_add.gpu`)."""

import os

import harness
import numpy as np

harness.test_device()  # SKIP for a cuda run without PyTorch's GPU

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


def run_vectors(name, M, N):
    """fold_vectors(_mma): row sums and a column vector, from 1-D fragments."""
    device = os.environ.get("TILEC_TEST_DEVICE", "cpu")
    rng = harness.rng
    bm = 32 if name == "fold_vectors" else 64
    w = rng.integers(-3, 4, N).astype(np.float32)
    s_row, s_w = rng.integers(-9, 9, M).astype(np.float32), rng.integers(-9, 9, N).astype(np.float32)
    if name == "fold_vectors":
        x = rng.integers(-3, 4, (M, N)).astype(np.float32)
        prod = x.astype(np.float64)
        ins = [x]
    else:
        a = rng.integers(-2, 3, (M, 32)).astype(np.float16)
        b = rng.integers(-2, 3, (32, N)).astype(np.float16)
        prod = a.astype(np.float64) @ b.astype(np.float64)
        ins = [a, b]
    want_row = s_row + (prod * w).sum(axis=1)
    want_w = s_w + w.astype(np.float64) * -(-M // bm)      # once per row block
    arrays = ins + [w, s_row, s_w]
    if device == "cuda":
        import torch
        ctx = harness.tilec.Context(device="cuda", cache_dir=harness.CACHE_DIR)
        ts = [torch.from_numpy(t).cuda() for t in arrays]
        ctx.load_file(KERNEL).kernel(name)(*ts)
        torch.cuda.synchronize()
        s_row, s_w = ts[-2].cpu().numpy(), ts[-1].cpu().numpy()
    else:
        harness.cpu_context().load_file(KERNEL).kernel(name)(*arrays)
    check_exact("%s row sums (row vector) M=%d N=%d" % (name, M, N), s_row, want_row.astype(np.float32))
    check_exact("%s column vector" % name, s_w, want_w.astype(np.float32))


def test_row_and_column_vectors():
    run_vectors("fold_vectors", 77, 45)


def test_row_and_column_vectors_mma():
    run_vectors("fold_vectors_mma", 200, 100)


ELEMENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "atomic_add_element.tile")


def launch(name, *arrays):
    harness.run_in_place(ELEMENT, name, *arrays)


def check_exact(what, got, want):
    bad = np.flatnonzero(got != want)
    print("  %s: %d values, %d differ" % (what, got.size, bad.size))
    assert bad.size == 0, "%s: first difference at %d: got %r, want %r" % (
        what, bad[0], got.flat[bad[0]], want.flat[bad[0]])


def ints(lo, hi, shape, dtype):
    return harness.rng.integers(lo, hi, shape).astype(dtype)


def test_element_histogram():
    for N, B in ((1000, 37), (97, 5), (1, 3)):
        x = ints(-3, B + 3, N, np.int32)          # some bins outside [0, B): skipped
        w = ints(-4, 5, N, np.float32)
        h = ints(-10, 10, B, np.float32)
        want = h.astype(np.float64)
        inside = (x >= 0) & (x < B)
        np.add.at(want, x[inside], w[inside])
        launch("histogram", x, w, h)
        check_exact("histogram N=%d B=%d" % (N, B), h, want.astype(np.float32))


def test_element_gemm_sums():
    M, N, K = 200, 100, 32
    a = ints(-2, 3, (M, K), np.float16)
    b = ints(-2, 3, (K, N), np.float16)
    w = ints(-5, 6, N, np.float32)
    c = a.astype(np.float64) @ b.astype(np.float64)
    s_col, s_row, s_w = ints(-9, 9, N, np.float32), ints(-9, 9, M, np.float32), ints(-9, 9, N, np.float32)
    want_col = s_col + c.sum(axis=0)
    want_row = s_row + c.sum(axis=1)
    want_w = s_w + w.astype(np.float64) * -(-M // 64)       # once per row block
    launch("sums", a, b, w, s_col, s_row, s_w)
    check_exact("column sums (2-D mma_c fragment)", s_col, want_col.astype(np.float32))
    check_exact("row sums (row vector of mma_c)", s_row, want_row.astype(np.float32))
    check_exact("column vector of mma_c", s_w, want_w.astype(np.float32))


def test_element_rowgroup_sums():
    M, N = 77, 45
    x = ints(-3, 4, (M, N), np.float32)
    w = ints(-3, 4, N, np.float32)
    s_row, s_w = ints(-9, 9, M, np.float32), ints(-9, 9, N, np.float32)
    want_row = s_row + (x.astype(np.float64) * w).sum(axis=1)
    want_w = s_w + w.astype(np.float64) * -(-M // 32)
    launch("rowgroup", x, w, s_row, s_w)
    check_exact("row sums (row vector of a row group)", s_row, want_row.astype(np.float32))
    check_exact("column vector of a row group", s_w, want_w.astype(np.float32))


def test_element_outside_parallel_loops():
    x = np.zeros(1001, np.float32)                  # 11 blocks of 100
    count = np.array([5, 1, 2, 3], np.float32)
    launch("count", x, count)
    check_exact("count", count, np.array([5 + 11, 1, 2 + 11, 3 + 22], np.float32))


harness.main(globals())
