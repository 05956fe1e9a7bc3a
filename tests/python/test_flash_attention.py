"""test_flash_attention.py - examples/flash_attention.tile (f16, BSHD)
through the binding on NumPy float16 arrays, against float64 attention of
the same inputs: O = softmax(Q K^T / sqrt(dim)) V per (batch, head), keys
j <= i only when causal. The kernel's `scale` is log2(e)/sqrt(dim) (it uses
exp2).

Bound 5e-3 of max|ref| (about 10 f16 ulps): the kernel rounds P to f16
before P V and rounds O to f16 at the end; the rest is f32. seq_len stays
dynamic, so one module serves 100, 63 and 1 (partial key and query blocks);
batch 1, heads 2, dim 64 (bound, as the kernel needs).
"""
import math

import harness
from harness import np, rng

BOUND = 5e-3


def attention_ref(q, k, v, causal):
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    b, n, h, d = q.shape
    s = np.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(d)
    if causal:
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("bhij,bjhd->bihd", p, v)


def run(causal):
    dim, heads, batch = 64, 2, 1
    with harness.cpu_context() as ctx:
        mod = ctx.load(harness.example("flash_attention.tile"),
                       defines={"dtype": "f16", "dim": dim, "is_causal": causal})
        k = mod.kernel("flash_attention")
        info = k.info
        assert info.param_names == ("Q", "K", "V", "Output", "scale")
        assert info.params[0].dims == ("batch", "seq_len", "heads", dim), info.params[0].dims
        assert info.params[4].dtype == "f32" and not info.params[4].is_tensor
        scale = math.log2(math.e) / math.sqrt(dim)
        for n in (100, 63, 1):
            shape = (batch, n, heads, dim)
            q, kk, v = (rng.standard_normal(shape).astype(np.float16) for _ in range(3))
            o = harness.poisoned(shape, np.float16)
            k(q, kk, v, o, scale)
            harness.check_close("seq_len %d %s" % (n, "causal" if causal else "non-causal"),
                                o, attention_ref(q, kk, v, causal), BOUND)


def test_flash_attention_f16_d64():
    run(False)


def test_flash_attention_f16_d64_causal():
    run(True)


harness.main(globals())
