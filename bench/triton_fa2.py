"""triton_fa2.py - a FlashAttention-2 forward kernel in Triton, the Triton peer
of bench_attention.py.

Written for this benchmark after the structure of the Triton tutorial's
fused-attention forward pass (not copied from it): one program computes
BLOCK_M query rows of one (batch, head); it streams the keys and values
BLOCK_N at a time with an online softmax (running row max m and row sum l,
exp2 with log2(e) folded into the scale) and rescales the f32 accumulator.
The key range is walked in two stages so that only the blocks that need a
mask pay for it:
  stage 1: key blocks every row of the query block sees in full (causal: the
           blocks left of the diagonal; non-causal: every whole block);
  stage 2: the diagonal block(s) (causal) or the partial tail (non-causal),
           with the causal / length mask applied.
Layout: BSHD (batch, seq, heads, dim), the layout tilec's kernel takes, any
strides with a unit last dim. BLOCK_M is a multiple of BLOCK_N so the
diagonal starts on a key-block boundary.

    from triton_fa2 import attention
    o = attention(q, k, v, causal=True)           # q, k, v: [B, S, H, D]
"""

import math

import torch
import triton
import triton.language as tl


def _configs():
    cfgs = []
    for bm, bn, warps, stages in ((128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2),
                                  (64, 64, 4, 3), (64, 32, 4, 4), (128, 32, 4, 4)):
        cfgs.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, num_stages=stages))
    return cfgs


CONFIGS = _configs()


@triton.jit
def _fa2_blocks(acc, l_i, m_i, q, k_base, v_base, stride_s, lo, hi, offs_m, offs_n, offs_d,
                n_ctx, qk_scale, BLOCK_N: tl.constexpr, MASKED: tl.constexpr,
                CAUSAL: tl.constexpr):
    """Key blocks [lo, hi): S = Q K^T, online softmax, acc += P V."""
    for start in range(lo, hi, BLOCK_N):
        start = tl.multiple_of(start, BLOCK_N)
        cols = start + offs_n
        kt_ptrs = k_base + cols[None, :] * stride_s + offs_d[:, None]   # K^T tile [D, BLOCK_N]
        v_ptrs = v_base + cols[:, None] * stride_s + offs_d[None, :]    # V tile [BLOCK_N, D]
        if MASKED:
            kt = tl.load(kt_ptrs, mask=cols[None, :] < n_ctx, other=0.0)
        else:
            kt = tl.load(kt_ptrs)
        s = tl.dot(q, kt) * qk_scale
        if MASKED:
            keep = cols[None, :] < n_ctx
            if CAUSAL:
                keep = keep & (offs_m[:, None] >= cols[None, :])
            s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if MASKED:
            v = tl.load(v_ptrs, mask=cols[:, None] < n_ctx, other=0.0)
        else:
            v = tl.load(v_ptrs)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _fa2_fwd(Q, K, V, O, qk_scale, stride_b, stride_s, stride_h, n_heads, n_ctx,
             HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // n_heads
    h = pid_bh % n_heads
    base = b.to(tl.int64) * stride_b + h.to(tl.int64) * stride_h
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)

    q = tl.load(Q + base + offs_m[:, None] * stride_s + offs_d[None, :],
                mask=offs_m[:, None] < n_ctx, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    if CAUSAL:
        full_hi = pid_m * BLOCK_M                      # keys left of the diagonal block
        tail_hi = tl.minimum((pid_m + 1) * BLOCK_M, n_ctx)
    else:
        full_hi = (n_ctx // BLOCK_N) * BLOCK_N         # whole key blocks
        tail_hi = n_ctx
    acc, l_i, m_i = _fa2_blocks(acc, l_i, m_i, q, K + base, V + base, stride_s, 0, full_hi,
                                offs_m, offs_n, offs_d, n_ctx, qk_scale, BLOCK_N, False, CAUSAL)
    acc, l_i, m_i = _fa2_blocks(acc, l_i, m_i, q, K + base, V + base, stride_s, full_hi, tail_hi,
                                offs_m, offs_n, offs_d, n_ctx, qk_scale, BLOCK_N, True, CAUSAL)

    acc = acc / l_i[:, None]
    tl.store(O + base + offs_m[:, None] * stride_s + offs_d[None, :], acc.to(O.dtype.element_ty),
             mask=offs_m[:, None] < n_ctx)


# The autotuned entry: the best of CONFIGS per (seq_len, dim, causal, dtypes).
_fa2_fwd_tuned = triton.autotune(configs=CONFIGS, key=["n_ctx", "HEAD_DIM", "CAUSAL"])(_fa2_fwd)


def _check(q, k, v, out):
    assert q.shape == k.shape == v.shape == out.shape and q.dim() == 4, "q, k, v, out: [B, S, H, D]"
    assert q.stride() == k.stride() == v.stride() == out.stride() and q.stride(3) == 1
    assert q.shape[3] in (16, 32, 64, 128, 256), "head dim must be a power of two in 16..256"


def attention(q, k, v, causal=False, sm_scale=None, out=None):
    """softmax(q k^T * sm_scale) v, BSHD, autotuned. `out` may be given
    (e.g. poisoned with NaN by a test) and is returned."""
    out = torch.empty_like(q) if out is None else out
    _check(q, k, v, out)
    bsz, n_ctx, heads, dim = q.shape
    sm_scale = 1.0 / math.sqrt(dim) if sm_scale is None else sm_scale
    grid = lambda meta: (triton.cdiv(n_ctx, meta["BLOCK_M"]), bsz * heads)
    _fa2_fwd_tuned[grid](q, k, v, out, sm_scale * 1.4426950408889634, q.stride(0), q.stride(1),
                         q.stride(2), heads, n_ctx, HEAD_DIM=dim, CAUSAL=causal)
    return out


def attention_fixed(q, k, v, causal=False, sm_scale=None, out=None, block_m=128, block_n=64,
                    num_warps=8, num_stages=3):
    """The same kernel with one fixed config (no autotuning): what the
    compile-time measurement calls."""
    out = torch.empty_like(q) if out is None else out
    _check(q, k, v, out)
    bsz, n_ctx, heads, dim = q.shape
    sm_scale = 1.0 / math.sqrt(dim) if sm_scale is None else sm_scale
    grid = (triton.cdiv(n_ctx, block_m), bsz * heads)
    _fa2_fwd[grid](q, k, v, out, sm_scale * 1.4426950408889634, q.stride(0), q.stride(1),
                   q.stride(2), heads, n_ctx, HEAD_DIM=dim, CAUSAL=causal, BLOCK_M=block_m,
                   BLOCK_N=block_n, num_warps=num_warps, num_stages=num_stages)
    return out
