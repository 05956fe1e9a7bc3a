"""test_intbits.py - narrow integer tensors through the binding on NumPy
arrays: tests/numerics/intbits.tile's unpack_int4 (u8 packed int4 pairs,
f16 row scales) against a NumPy dequantize, the kernel's reported dtypes,
and a tensor of the wrong integer dtype refused before the launch.
"""
import os

import harness
from harness import np, rng

INTBITS = os.path.join(os.environ.get("TILEC_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                       "tests", "numerics", "intbits.tile")


def dequantize(w, s, k):
    lo = (w & 15).astype(np.int64)
    hi = (w >> 4).astype(np.int64)
    q = np.empty((w.shape[0], 2 * w.shape[1]), np.int64)
    q[:, 0::2] = np.where(lo >= 8, lo - 16, lo)
    q[:, 1::2] = np.where(hi >= 8, hi - 16, hi)
    q = q[:, :k]
    return (q.astype(np.float32) * s.astype(np.float32)[:, None]).astype(np.float16)


def test_unpack_int4():
    with harness.cpu_context() as ctx:
        k = ctx.load(INTBITS).kernel("unpack_int4")
        assert [p.dtype for p in k.info.params] == ["u8", "f16", "f16"], k.info.params
        for n, kk in ((7, 33), (37, 128)):
            w = rng.integers(0, 256, (n, (kk + 1) // 2), dtype=np.uint8)
            s = (rng.standard_normal(n) * 0.05).astype(np.float16)
            o = harness.poisoned((n, kk), np.float16)
            k(w, s, o)
            ref = dequantize(w, s, kk)
            assert np.array_equal(o.view(np.uint16), ref.view(np.uint16)) or np.array_equal(o, ref), \
                "unpack %dx%d differs" % (n, kk)
            print("  unpack_int4 %d x %d: exact" % (n, kk))


def test_wrong_integer_dtype():
    with harness.cpu_context() as ctx:
        k = ctx.load(INTBITS).kernel("unpack_int4")
        w = np.zeros((4, 8), np.int8)  # the kernel takes u8
        s = np.ones(4, np.float16)
        o = np.zeros((4, 16), np.float16)
        harness.expect_error("LAUNCH_MISMATCH", lambda: k(w, s, o), "u8")


harness.main(globals())
