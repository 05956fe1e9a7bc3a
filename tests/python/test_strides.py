"""test_strides.py - NumPy views passed to kernels whose parameters declare
strides (...), without a copy: the flagship on a BHSD tensor's
transpose(0, 2, 1, 3) view and on the Q/K/V slices of one packed
[B, S, 3, H, D] array writing into a row-padded output; the strided gemm
(tests/numerics/gemm_strided.tile) on sliced and padded matrices. The output
storage outside the view must stay NaN. Views a kernel cannot take (a
non-contiguous last dim, a negative stride) are refused by name.
"""
import math
import os

import harness
from harness import np, rng



def attention_ref(q, k, v, causal):
    """float64 attention of BSHD q, k, v (any strides)."""
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    n, d = q.shape[1], q.shape[3]
    s = np.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(d)
    if causal:
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("bhij,bjhd->bihd", p, v)

GEMM_STRIDED = os.path.join(os.environ["TILEC_SOURCE_DIR"], "tests", "numerics", "gemm_strided.tile")


def flagship(ctx, dim, causal=False):
    return ctx.load(harness.example("flash_attention.tile"),
                    defines={"dtype": "f16", "dim": dim, "is_causal": causal}).kernel("flash_attention")


def test_info_reports_strides():
    with harness.cpu_context() as ctx:
        k = flagship(ctx, 64)
        assert k.info.params[0].strides == ("q_sb", "q_ss", "q_sh", 1), k.info.params[0].strides
        assert k.info.params[4].strides is None


def test_flash_attention_bhsd_views():
    dim, heads, batch, n = 64, 3, 2, 77
    with harness.cpu_context() as ctx:
        k = flagship(ctx, dim, causal=True)
        q, kk, v = (rng.standard_normal((batch, heads, n, dim)).astype(np.float16) for _ in range(3))
        o = harness.poisoned((batch, heads, n, dim), np.float16)
        views = [t.transpose(0, 2, 1, 3) for t in (q, kk, v, o)]  # BHSD -> BSHD, no copy
        assert not views[0].flags["C_CONTIGUOUS"]
        k(*views, math.log2(math.e) / math.sqrt(dim))
        ref = attention_ref(*views[:3], True)
        harness.check_close("bhsd views", views[3], ref, 5e-3)


def test_flash_attention_packed_qkv():
    dim, heads, batch, n = 64, 2, 1, 100
    with harness.cpu_context() as ctx:
        k = flagship(ctx, dim)
        qkv = rng.standard_normal((batch, n, 3, heads, dim)).astype(np.float16)
        out = harness.poisoned((batch, n, heads, dim + 8), np.float16)
        q, kk, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        k(q, kk, v, out[..., :dim], math.log2(math.e) / math.sqrt(dim))
        harness.check_close("packed qkv", out[..., :dim], attention_ref(q, kk, v, False), 5e-3)
        assert np.isnan(out[..., dim:]).all(), "the output's padding was written"


def test_gemm_views():
    with harness.cpu_context() as ctx:
        g = ctx.load(GEMM_STRIDED, defines={"dtype": "f16", "block_M": 32, "block_N": 32,
                                             "block_K": 16}).kernel("gemm")
        m, n, kd = 70, 45, 37
        a_big = rng.standard_normal((m, kd + 5)).astype(np.float16)
        b_big = rng.standard_normal((kd, n + 20)).astype(np.float16)
        c_big = harness.poisoned((m + 3, n + 4), np.float16)
        a, b, c = a_big[:, 2:2 + kd], b_big[:, 7:7 + n], c_big[1:1 + m, :n]
        g(a, b, c)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        harness.check_close("gemm views", c, ref, 4 * 2.0 ** -11)
        mask = np.ones(c_big.shape, bool)
        mask[1:1 + m, :n] = False
        assert np.isnan(c_big[mask]).all(), "C's storage outside the view was written"


def test_refused_views():
    with harness.cpu_context() as ctx:
        g = ctx.load(GEMM_STRIDED, defines={"dtype": "f16", "block_M": 32, "block_N": 32,
                                             "block_K": 16}).kernel("gemm")
        a = np.ones((10, 5), np.float16)
        b = np.ones((5, 7), np.float16)
        c = harness.poisoned((10, 7), np.float16)
        harness.expect_error("LAUNCH_MISMATCH", lambda: g(np.ones((5, 10), np.float16).T, b, c),
                             "argument 1 'A'", "innermost dim 1 has stride 10")
        harness.expect_error("LAUNCH_MISMATCH", lambda: g(a[::-1], b, c),
                             "argument 1 'A'", "strides must be positive")
        assert np.isnan(c).all(), "a refused launch wrote its output"


harness.main(globals())
