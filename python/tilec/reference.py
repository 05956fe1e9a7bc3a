"""reference.py - float64 NumPy references of the attention examples, for
tests, benches and users checking their own kernels.

    tilec.reference.attention(q, k, v, causal=False)

q [Sq, H, D], k and v [Skv, Hkv, D] (grouped-query: head h reads KV head
h // (H / Hkv)); causal masks aligned to the bottom right (query i sees the
keys up to Skv - Sq + i), as FlashAttention and the tilec examples do.
Returns [Sq, H, D] float64. NumPy only, imported on first use."""
import math

__all__ = ["attention"]


def attention(q, k, v, causal=False):
    """Softmax attention of one sequence in float64 (see the module text)."""
    import numpy as np
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    sq, h, d = q.shape
    skv, hkv = k.shape[0], k.shape[1]
    if hkv < 1 or h % hkv:
        raise ValueError("tilec.reference.attention: %d query heads are not a multiple of %d KV heads" % (h, hkv))
    g = h // hkv
    out = np.zeros_like(q)
    for hh in range(h):
        s = q[:, hh] @ k[:, hh // g].T / math.sqrt(d)
        if causal:
            s = np.where(np.arange(skv)[None, :] <= (skv - sq + np.arange(sq))[:, None], s, -np.inf)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        out[:, hh] = (p / p.sum(axis=1, keepdims=True)) @ v[:, hh // g]
    return out
