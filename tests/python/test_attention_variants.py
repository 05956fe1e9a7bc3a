"""test_attention_variants.py - the issue-13 kernels through the binding on
NumPy f16 arrays (CPU back end), against float64 NumPy attention: the calls
bench/bench_attention_variants.py makes (positional tensors, an int for an
i32 scalar, a float for the scale, partial buffers sized by the caller).

  gqa_attention       heads 6 over heads_kv 2
  flash_decoding      split + combine, num_split 4 (one split empty), and
                      the paged split kernel through an i32 block table
  varlen_attention    three packed sequences, cu_seqlens i32, max_seqlen_q int

Bound 5e-3 of max|ref| (f16: the tests/numerics bound).
"""
import math

import harness
from harness import np, rng

LOG2E = math.log2(math.e)
BOUND = 5e-3


def attn_ref(q, k, v, causal=False):
    """q [Sq, H, D], k/v [Skv, Hkv, D] -> [Sq, H, D]; causal bottom-right."""
    return harness.tilec.reference.attention(q, k, v, causal)


def rand(shape):
    return rng.uniform(-1, 1, shape).astype(np.float16)


def test_gqa():
    with harness.cpu_context() as ctx:
        k_ = ctx.load(harness.example("gqa_attention.tile"), defines={"dim": 64, "is_causal": True}).kernel("gqa_attention")
        b, s, h, hkv, d = 2, 70, 6, 2, 64
        q, k, v = rand((b, s, h, d)), rand((b, s, hkv, d)), rand((b, s, hkv, d))
        o = harness.poisoned((b, s, h, d), np.float16)
        k_(q, k, v, o, 1 / math.sqrt(d) * LOG2E)
        ref = np.stack([attn_ref(q[i], k[i], v[i], causal=True) for i in range(b)])
        harness.check_close("gqa causal", o, ref, BOUND)


def test_decoding_and_paged():
    with harness.cpu_context() as ctx:
        mod = ctx.load(harness.example("flash_decoding.tile"), defines={"dim": 64})
        split, combine, paged = (mod.kernel(n) for n in ("flash_decoding_split", "flash_decoding_combine",
                                                         "flash_decoding_paged_split"))
        b, sq, skv, h, hkv, d, ns, page = 2, 3, 150, 4, 2, 64, 4, 64   # 3 key blocks, 4 splits: one empty
        q, k, v = rand((b, sq, h, d)), rand((b, skv, hkv, d)), rand((b, skv, hkv, d))
        ref = np.stack([attn_ref(q[i], k[i], v[i]) for i in range(b)])
        scale = 1 / math.sqrt(d) * LOG2E
        op = harness.poisoned((b, h, ns, sq, d), np.float32)
        lp = harness.poisoned((b, h, ns, sq), np.float32)
        o = harness.poisoned((b, sq, h, d), np.float16)
        split(q, k, v, op, lp, o, scale)
        combine(op, lp, o)
        harness.check_close("decoding, 4 splits", o, ref, BOUND)
        # One split: the split kernel writes o itself (no combine).
        op1, lp1 = harness.poisoned((b, h, 1, sq, d), np.float32), harness.poisoned((b, h, 1, sq), np.float32)
        o1 = harness.poisoned((b, sq, h, d), np.float16)
        split(q, k, v, op1, lp1, o1, scale)
        harness.check_close("decoding, 1 split, no combine", o1, ref, BOUND)
        # Paged: pages of `page` tokens in shuffled order.
        mp = -(-skv // page)
        perm = rng.permutation(b * mp).astype(np.int32)
        table = perm.reshape(b, mp).copy()
        kc = np.zeros((b * mp, page, hkv, d), np.float16)
        vc = np.zeros_like(kc)
        for i in range(b):
            for n in range(mp):
                m = min(page, skv - n * page)
                kc[table[i, n], :m] = k[i, n * page:n * page + m]
                vc[table[i, n], :m] = v[i, n * page:n * page + m]
        lens = np.full((b,), skv, np.int32)
        op[:] = np.nan
        lp[:] = np.nan
        o[:] = np.nan
        paged(q, kc, vc, table, lens, op, lp, scale)
        combine(op, lp, o)
        harness.check_close("paged decoding, 4 splits", o, ref, BOUND)


def test_varlen():
    with harness.cpu_context() as ctx:
        k_ = ctx.load(harness.example("varlen_attention.tile"), defines={"dim": 64}).kernel("varlen_attention")
        lens, h, d = [5, 130, 1], 2, 64
        cu = np.array([0] + list(np.cumsum(lens)), np.int32)
        t = int(cu[-1])
        q, k, v = rand((t, h, d)), rand((t, h, d)), rand((t, h, d))
        o = harness.poisoned((t, h, d), np.float16)
        k_(q, k, v, o, cu, cu, max(lens), 1 / math.sqrt(d) * LOG2E)
        ref = np.concatenate([attn_ref(q[a:b_], k[a:b_], v[a:b_]) for a, b_ in zip(cu[:-1], cu[1:])])
        harness.check_close("varlen", o, ref, BOUND)


harness.main(globals())
