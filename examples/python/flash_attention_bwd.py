#!/usr/bin/env python3
"""flash_attention_bwd.py - the FlashAttention backward of
examples/flash_attention_bwd.tile driven from Python (the tilec package).

Four kernels of one module, run in order on BSHD tensors:

    flash_attention_fwd              O and LSE (log-sum-exp, base 2, of the
                                     scaled scores) from Q, K, V
    flash_attention_bwd_preprocess   Delta = rowsum(dO * O); zeroes the f32
                                     dQ accumulator [B, H, D, S]
    flash_attention_bwd              dK, dV per key block; dQ^T added into
                                     the accumulator by atomic_add
    flash_attention_bwd_dq_convert   the accumulator -> dQ (BSHD, dtype)

and checks O, LSE, dQ, dK and dV against a float64 NumPy reference.

    python3 examples/python/flash_attention_bwd.py [--device cpu|cuda]
        [--dim 64] [--dtype f16|bf16] [--causal] [--batch 2] [--heads 3]
        [--lengths 1,17,100] [--define NAME=VALUE]...

CPU: NumPy arrays (f16 only: NumPy has no bfloat16), the C back end. CUDA:
PyTorch tensors on the GPU (NVRTC). Every output is NaN-poisoned before the
kernels run, so an element no kernel writes shows up. Exit status 0 when
every check passes, 1 otherwise (2: bad arguments).

As a module: FlashAttentionBackward(ctx, dim, dtype, causal, defines)
.forward(q, k, v) -> (o, lse) and .backward(q, k, v, o, lse, do) ->
(dq, dk, dv), for NumPy arrays (CPU context) or torch CUDA tensors (CUDA
context); reference(q, k, v, do, causal) the float64 answers.
"""

import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TILE = os.path.join(ROOT, "examples", "flash_attention_bwd.tile")
LOG2E = math.log2(math.e)
# The bounds of tests/numerics/test_attention_bwd.c: relative to max|ref|
# (the kernels round P and dS to dtype for their gemms); LSE absolute.
BOUND = {"f16": 5e-3, "bf16": 2e-2}
LSE_BOUND = 1e-3

try:
    import tilec
except ImportError:  # run from a checkout: the package lives in python/
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import tilec


class FlashAttentionBackward:
    """The four kernels of flash_attention_bwd.tile for one head dim, dtype
    and causality (batch, heads and seq_len stay dynamic: one compile serves
    every shape). defines: more -D bindings (bwd_block_M, bwd_block_N, ...)."""

    def __init__(self, ctx, dim=64, dtype="f16", causal=False, defines=None):
        d = {"dim": dim, "dtype": dtype, "is_causal": bool(causal)}
        d.update(defines or {})
        mod = ctx.load_file(TILE, defines=d)
        self.ctx, self.dim, self.dtype, self.causal = ctx, dim, dtype, causal
        self.fwd = mod.kernel("flash_attention_fwd")
        self.pre = mod.kernel("flash_attention_bwd_preprocess")
        self.bwd = mod.kernel("flash_attention_bwd")
        self.convert = mod.kernel("flash_attention_bwd_dq_convert")
        # The kernels' `scale`: softmax scale 1/sqrt(D) times log2(e).
        self.scale = 1.0 / math.sqrt(dim) * LOG2E

    def _empty(self, like, shape, f32):
        """A NaN-filled array of `shape`, on like's device: f32, or like's dtype."""
        if self.ctx.device == "cuda":
            import torch
            return torch.full(shape, float("nan"), device=like.device,
                              dtype=torch.float32 if f32 else like.dtype)
        import numpy as np
        return np.full(shape, np.nan, dtype=np.float32 if f32 else like.dtype)

    def forward(self, q, k, v):
        B, S, H, _ = q.shape
        o = self._empty(q, tuple(q.shape), False)
        lse = self._empty(q, (B, H, S), True)
        self.fwd(q, k, v, o, lse, self.scale)
        return o, lse

    def backward(self, q, k, v, o, lse, do):
        B, S, H, D = q.shape
        delta = self._empty(q, (B, H, S), True)
        dq_accum = self._empty(q, (B, H, D, S), True)   # dQ^T, f32; preprocess zeroes it
        dq, dk, dv = (self._empty(q, tuple(q.shape), False) for _ in range(3))
        self.pre(o, do, delta, dq_accum)
        self.bwd(q, k, v, do, lse, delta, dq_accum, dk, dv, self.scale)
        self.convert(dq_accum, dq)
        return dq, dk, dv


def reference(q, k, v, do, causal):
    """float64 O, LSE (natural log, [B, H, S]), dQ, dK, dV of softmax attention
    (scale 1/sqrt(D), causal aligned to the top left) for BSHD arrays."""
    import numpy as np
    q, k, v, do = (np.asarray(t, dtype=np.float64).transpose(0, 2, 1, 3) for t in (q, k, v, do))  # BHSD
    S, D = q.shape[2], q.shape[3]
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(D)
    if causal:
        s = np.where(np.tril(np.ones((S, S), dtype=bool)), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    l = e.sum(axis=-1, keepdims=True)
    p = e / l
    o = p @ v
    lse = (m + np.log(l))[..., 0]
    dv = p.transpose(0, 1, 3, 2) @ do
    dp = do @ v.transpose(0, 1, 3, 2)
    delta = (do * o).sum(axis=-1, keepdims=True)
    ds = p * (dp - delta) / math.sqrt(D)
    dq = ds @ k
    dk = ds.transpose(0, 1, 3, 2) @ q
    bshd = lambda t: t.transpose(0, 2, 1, 3)
    return bshd(o), lse, bshd(dq), bshd(dk), bshd(dv)


def rel_error(out, ref):
    """(max|out - ref| / max|ref|, count of non-finite outputs), in float64."""
    import numpy as np
    out = np.asarray(out, dtype=np.float64)
    bad = int(np.count_nonzero(~np.isfinite(out)))
    scale = float(np.abs(ref).max()) or 1.0
    return float(np.abs(out - ref).max()) / scale if out.size else 0.0, bad


def _host(t):
    """A float64 NumPy copy of a NumPy array or a torch tensor."""
    import numpy as np
    if hasattr(t, "detach"):
        return t.detach().float().cpu().numpy().astype(np.float64)
    return np.asarray(t, dtype=np.float64)


def run_case(fab, B, S, H, rng, log=print):
    """Random inputs in [-1, 1] for one shape; forward, backward, checks.
    Returns the list of failed checks (empty: all passed)."""
    import numpy as np
    D, dtype = fab.dim, fab.dtype
    host = [rng.uniform(-1, 1, (B, S, H, D)) for _ in range(4)]
    if fab.ctx.device == "cuda":
        import torch
        tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]
        q, k, v, do = (torch.from_numpy(t).to("cuda", tdt) for t in host)
    else:
        if dtype != "f16":
            raise ValueError("the CPU path takes f16 (NumPy has no %s)" % dtype)
        q, k, v, do = (t.astype(np.float16) for t in host)
    # The reference sees the rounded inputs the kernels see.
    ref = reference(*(_host(t) for t in (q, k, v, do)), fab.causal)
    o, lse = fab.forward(q, k, v)
    dq, dk, dv = fab.backward(q, k, v, o, lse, do)
    if fab.ctx.device == "cuda":
        import torch
        torch.cuda.synchronize()
    failed = []
    log("  B=%d S=%d H=%d D=%d %s%s:" % (B, S, H, D, dtype, " causal" if fab.causal else ""))
    for name, got, want in (("O", o, ref[0]), ("dQ", dq, ref[2]), ("dK", dk, ref[3]), ("dV", dv, ref[4])):
        err, bad = rel_error(_host(got), want)
        ok = bad == 0 and err <= BOUND[dtype]
        log("    %-3s error %.3e of max|ref| (bound %.0e), %d non-finite%s"
            % (name, err, BOUND[dtype], bad, "" if ok else "  FAILED"))
        if not ok:
            failed.append("%s at S=%d" % (name, S))
    lse_nat = _host(lse) / LOG2E   # base 2 -> natural log
    bad = int(np.count_nonzero(~np.isfinite(lse_nat)))
    err = float(np.abs(lse_nat - ref[1]).max())
    ok = bad == 0 and err <= LSE_BOUND
    log("    LSE max abs error %.3e (bound %.0e, natural log), %d non-finite%s"
        % (err, LSE_BOUND, bad, "" if ok else "  FAILED"))
    if not ok:
        failed.append("LSE at S=%d" % S)
    return failed


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--dim", type=int, default=64, choices=(64, 128))
    ap.add_argument("--dtype", choices=("f16", "bf16"), default="f16")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=3)
    ap.add_argument("--lengths", default="1,17,100",
                    help="comma-separated sequence lengths (one compile serves them all)")
    ap.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                    help="more -D bindings (bwd_block_M=32, ...)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    try:
        args.lengths = [int(x) for x in args.lengths.split(",")]
    except ValueError:
        ap.error("--lengths: comma-separated integers, not %r" % args.lengths)
    if any(n < 1 for n in args.lengths) or args.batch < 1 or args.heads < 1:
        ap.error("--lengths, --batch and --heads must be positive")
    defines = {}
    for kv in args.define:
        if "=" not in kv:
            ap.error("--define %r: expected NAME=VALUE" % kv)
        n, val = kv.split("=", 1)
        defines[n] = val
    args.define = defines
    if args.device == "cpu" and args.dtype != "f16":
        ap.error("--dtype %s needs --device cuda (NumPy has no %s)" % (args.dtype, args.dtype))
    return args


def main(argv=None):
    args = parse_args(argv)
    import numpy as np
    ctx = tilec.Context(device=args.device)
    fab = FlashAttentionBackward(ctx, args.dim, args.dtype, args.causal, args.define)
    rng = np.random.default_rng(args.seed)
    print("flash_attention_bwd.tile on %s, seed %d" % (ctx.device, args.seed))
    failed = []
    for S in args.lengths:
        failed += run_case(fab, args.batch, S, args.heads, rng)
    print("FAILED: " + ", ".join(failed) if failed else "all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
