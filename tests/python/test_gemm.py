"""test_gemm.py - examples/gemm.tile (dtype f16) through the binding on NumPy
float16 arrays, against a float64 product of the same (f16-rounded) inputs.

Bound 4 * eps(f16) = 3.9e-3 of max|ref|: the kernel accumulates in f32
(error ~K * 6e-8, negligible here) and rounds C once to f16 (half an ulp,
2^-11 relative). Sizes are odd (100x70x45) so every tile edge is partial,
with 32x32x16 tiles; M, N, K stay dynamic, and one case binds them with -D.
"""
import harness
from harness import np, rng

BLOCKS = {"dtype": "f16", "block_M": 32, "block_N": 32, "block_K": 16}
BOUND = 4 * 2.0 ** -10


def check(k, m, n, kk):
    a = rng.standard_normal((m, kk)).astype(np.float16)
    b = rng.standard_normal((kk, n)).astype(np.float16)
    c = harness.poisoned((m, n), np.float16)
    k(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    harness.check_close("%dx%dx%d" % (m, n, kk), c, ref, BOUND)


def test_gemm_f16_dynamic():
    with harness.cpu_context() as ctx:
        k = ctx.load(harness.example("gemm.tile"), defines=BLOCKS).kernel("gemm")
        assert k.info.dynamic_symbols == ("M", "K", "N"), k.info.dynamic_symbols
        assert [p.dtype for p in k.info.params] == ["f16"] * 3
        for m, n, kk in ((100, 70, 45), (64, 64, 32), (1, 1, 1), (33, 17, 100)):
            check(k, m, n, kk)


def test_gemm_f16_bound():
    with harness.cpu_context() as ctx:
        defs = dict(BLOCKS, M=100, N=70, K=45)
        k = ctx.load(harness.example("gemm.tile"), defines=defs).kernel("gemm")
        assert k.info.dynamic_symbols == ()
        assert k.info.params[2].dims == (100, 70)
        check(k, 100, 70, 45)
        # A kernel bound to M = 100 refuses another M instead of reading past A.
        a = np.zeros((99, 45), np.float16)
        b = np.zeros((45, 70), np.float16)
        c = harness.poisoned((99, 70), np.float16)
        harness.expect_error("LAUNCH_MISMATCH", lambda: k(a, b, c), "'A'", "expected 100")
        assert np.isnan(c).all(), "a refused launch wrote to C"


harness.main(globals())
