"""tilec.splitk - C = A @ B that picks between examples/gemm.tile and the
split-K kernels of examples/gemm_splitk.tile from the shape.

    import tilec
    ctx = tilec.Context()
    tilec.gemm(ctx, a, b, c)              # C = A @ B (NumPy arrays, torch tensors...)
    tilec.gemm(ctx, a, b, c, splits=4)    # force 4 K ranges (1: the plain gemm)
    g = tilec.splitk.Gemm(ctx, "bf16")    # keep the loaded kernels and the workspace
    g.plan(512, 512, 65536)               # -> ("splitk-m128", 8): what g(a, b, c) would run
    g(a, b, c, splits=4, fused=True)      # one launch: the last block of a tile reduces
    tilec.splitk.choose_splits(16, 8192, 8192, num_sms=132)

Why: gemm.tile runs one block per block_M x block_N tile of C. Its sm_90a
defaults shrink the tile for M <= 128 or N <= 64 (gemm_tile_for), but a
small M and N together (512 x 512) is still a few dozen blocks, and an H100
has 132 SMs: most would sit idle while each block walks all of K. Split-K
gives each of `splits` blocks per tile a range of K (gemm_splitk writes f32
partial sums P[splits, M, N]) and splitk_reduce adds them in split order
(deterministic: no atomics; the same bits on every run).

fused=True (Gemm(..., fused=True) or per call) runs split-K as one launch,
gemm_splitk_fused, in which the last block to finish each C tile (counted
in an int32 counter per tile) adds the partials, in split order, and
writes C -- the same additions in the same order as splitk_reduce, so the
same bits, without the second launch. It is not the default: on an H100
it measured slower than the two kernels at every split shape (128 x 8192 x
8192 0.75x against 0.84x torch, 512 x 512 x 65536 0.68x against 0.87x;
bench/results/2026-11-24-nvidia-h100-session3-notes.md, call 16): the
last block of a tile sums all the splits alone while the others have
finished, where splitk_reduce spreads that over every SM. The counters
start at zero and every launch leaves them at zero; Gemm keeps them
(counter_buffer: one zeroed int32 buffer, grown as needed, on A's device)
and replaces them after a launch that raised, since a launch stopped
half-way leaves some non-zero.

The plan (Gemm.plan): the plain gemm when its tiles fill the SMs (tiles >=
0.9 num_sms; on sm_90 gemm.tile itself takes 64 x 64 or 64 x 128 tiles in
a deep pipeline when M <= 128 or N <= 64, so the shapes M = 64..128
against N, K in the thousands and N = 64 run there, at 0.96-0.99x cuBLAS:
gemm_tile_for()) and the product is not thin; a thin product (M <=
THIN_ROWS, decoding's M = 1..16) runs examples/gemm_thin.tile (C^T = B^T
A^T: 16-row tiles of A, 16 stages of B in flight; choose_thin_splits(),
one launch unless too few 64-column tiles stream B), on sm_90a only (its
16 stages need Hopper's shared memory); otherwise split-K with
choose_splits() (enough splits to fill the GPU once), on one of three
split-K tiles
(SPLITK_TILES; unless splitk_defines fixes it): 128 x 64 over two
warpgroups ("splitk-n64") when N <= 64, 128 x 128 over two warpgroups
("splitk-m128") when M >= 128, else gemm_splitk.tile's 64 x 128 over one
("splitk"). The rule is what bench/bench_gemm.py measured on an H100
(2026-11-23): at M = 128 the 128-row tile ran 235-242 TFLOP/s against
220-221 for two 64-row blocks per SM; at N = 64 the 64-column tile was the
best; at M <= 64 the 64-row tile. choose_splits() takes the
smallest split count whose blocks fill the GPU once (one block per SM where
reading A and B bounds the product, every block slot where the tensor cores
do), keeping >= min_k_tiles K tiles per split so the software pipeline
fills: each split costs an f32 write and read of M x N. bench/bench_gemm.py
measures the plan against the alternatives on every shape of its grid.

A, B and C must be compact row-major (C is written through a flat view of
itself: the reduce kernel sees C as [M * N]). The f32 workspace P is
allocated with the inputs' array library (NumPy or torch, on A's device) and
kept for the next call of the same or a smaller size; pass workspace= to
provide one (at least splits * M * N float32 elements, compact).
"""

import os

from . import _ffi

__all__ = ["Gemm", "gemm", "choose_splits", "gemm_tile_for", "example_source", "SPLITK_DEFAULTS", "SPLITK_TILES",
           "THIN_TILES", "THIN_ROWS", "choose_thin_splits"]

# gemm_splitk.tile's default tile (block_M, block_N, block_K, num_stages,
# threads); keep in step with the file.
SPLITK_DEFAULTS = {"block_M": 64, "block_N": 128, "block_K": 64, "num_stages": 4, "threads": 128}

# The split-K tiles the plan picks from (defines over SPLITK_DEFAULTS).
# 6 stages (128 x 128) and 128-deep K tiles (128 x 64) measured best on an
# H100 (bench/results/2026-11-24-nvidia-h100-session3-notes.md, call 10):
# 512 x 512 x 65536 0.80 -> 0.87x torch, 8192 x 64 x 8192 0.87 -> 0.91x,
# 128 x 8192 x 8192 unchanged.
SPLITK_TILES = {"splitk": {}, "splitk-m128": {"block_M": 128, "threads": 256, "num_stages": 6},
                "splitk-n64": {"block_M": 128, "block_N": 64, "block_K": 128, "threads": 256}}


# examples/gemm_thin.tile's builds (defines over its defaults: 16 x 64
# tiles, 16 stages, one warpgroup), the variants "thin" and "thin-n128"
# (128 columns: 256-byte rows of B per TMA box row, two consumer
# warpgroups and a producer, 12 stages on sm_90a). Neither is in the plan yet:
# bench/bench_gemm.py times both beside it.
THIN_TILES = {"thin": {}, "thin-n128": {"block_N": 128, "threads": 256}}


def gemm_tile_for(m, n, sm90=True, num_sms=132):
    """gemm.tile's default (block_M, block_N) for an m x n output on a GPU
    of num_sms SMs: its const defaults' shape choices, in step with the file
    (192 x 192 where those tiles fill whole waves and 128 x 256 ones do
    not)."""
    if not sm90:
        return 128, 128
    if m <= 64 or n <= 64:
        return 64, 64
    if m <= 128:
        return 64, 128
    if _cdiv(m, 192) * _cdiv(n, 192) % num_sms == 0 and _cdiv(m, 128) * _cdiv(n, 256) % num_sms != 0:
        return 192, 192
    return 128, 256


def splitk_tile_for(m, n):
    """The SPLITK_TILES label the plan uses for an m x n output."""
    if n <= 64:
        return "splitk-n64"
    return "splitk-m128" if m >= 128 else "splitk"


def example_source(name):
    """examples/<name>: the copy an installed package carries (tilec/kernels/),
    else $TILEC_SOURCE_DIR/examples, else the repository's."""
    found = _ffi.bundled_path("kernels", name)
    if found:
        return found
    if os.environ.get("TILEC_SOURCE_DIR"):
        path = os.path.join(os.environ["TILEC_SOURCE_DIR"], "examples", name)
    else:
        path = os.path.normpath(os.path.join(_ffi._HERE, "..", "..", "examples", name))
    if not os.path.exists(path):
        raise FileNotFoundError("tilec: %s is neither in the package (tilec/kernels) nor at %s" % (name, path))
    return path


def _cdiv(a, b):
    return -(-a // b)


def _fills(blocks, slots):
    """Whether `blocks` blocks fill at least 90 % of `slots` block slots: the
    point from which splitting more only adds partial results to combine."""
    return blocks * 10 >= slots * 9


# Arithmetic intensity (FLOP per byte of A and B) below which a product is
# bound by reading its operands: an H100 runs ~750 TFLOP/s of bf16 against
# ~3.35 TB/s, about 220 FLOP/B; 200 leaves a margin.
MEMORY_BOUND_INTENSITY = 200

# Rows of C up to which a product is "thin" (decoding: M = 1 .. 16 tokens).
# Such a product streams B, and a 64-row tile of A is mostly padding:
# gemm_thin.tile's 16-row tiles of A leave room for 16 stages of B, and one
# launch of it beat every split-K and gemm.tile build on an H100
# (bench/results/2026-12-06-nvidia-h100-session19-notes.md, bf16/f16, M = 1
# and 16 against 4096^2 and 8192^2: 0.97-1.11x torch, against 0.89-0.95x
# for session 18's rule of split-K on every block slot, and 0.97-1.00x
# where gemm.tile's 64 x 64 tiles ran). Splitting it (2 or 4 ways) was
# slower in each of those rows, even at 64 blocks on 132 SMs.
THIN_ROWS = 16


def choose_splits(m, n, k, num_sms, block_M=64, block_N=128, block_K=64, blocks_per_sm=1,
                  max_splits=32, min_k_tiles=4):
    """The split count for an m x n x k split-K gemm with the given tile on a
    GPU of num_sms SMs running blocks_per_sm blocks each; 1 means: do not
    split. The smallest split count whose blocks fill the GPU once: one
    block per SM when the product is bound by reading A and B (intensity
    m n / (m + n) < MEMORY_BOUND_INTENSITY: more blocks only add f32
    partials to write and read) unless it is thin (m <= THIN_ROWS: the
    partials are a few % of B, and more blocks keep more of B in flight),
    else every block slot (num_sms * blocks_per_sm); each split keeps >=
    min_k_tiles K tiles. What
    bench/bench_gemm.py measured on an H100 (2026-11-23, session 3): 2
    splits best at M = 1, 16, 64 and N = 64 against 8192 x 8192 (4 gave
    0.85x where 2 gave 0.91x at M = 64), 8 at 512 x 512 x 65536; the thin
    rule came later, from the H200 (THIN_ROWS: 4 splits at M = 1 and 16,
    where the H100 now reads 1-2 % below 2 splits)."""
    if min(m, n, k, num_sms, blocks_per_sm) < 1:
        raise ValueError("choose_splits: sizes, num_sms and blocks_per_sm must be positive")
    tiles = _cdiv(m, block_M) * _cdiv(n, block_N)
    k_tiles = _cdiv(k, block_K)
    memory_bound = m * n / (m + n) < MEMORY_BOUND_INTENSITY and m > THIN_ROWS
    target = num_sms if memory_bound else num_sms * blocks_per_sm
    if _fills(tiles, target):
        return 1
    cands = [s for s in range(2, max_splits + 1) if k_tiles // s >= min_k_tiles]
    if not cands:
        return 1
    for s in cands:
        if _fills(tiles * s, target):
            return s
    return cands[-1]


# The share of the SMs a thin product's unsplit grid must stream B from
# before gemm_thin's plan splits K: 64 blocks (N = 4096) on 132 SMs ran
# fastest unsplit (H100), each holding 14 K tiles of B in flight; below a
# third of the SMs, splitting is a guess that the memory system wants more
# streams (not measured).
THIN_MIN_SM_SHARE = 3


def choose_thin_splits(n, k, num_sms, block_N=64, block_K=64, max_splits=32, min_k_tiles=8):
    """The split count of examples/gemm_thin.tile for a thin product (M <=
    THIN_ROWS) of n columns and depth k: 1 (one launch, C written directly)
    while its ceil(n / block_N) blocks cover a THIN_MIN_SM_SHARE-th of the
    SMs, else the fewest splits that do, each keeping >= min_k_tiles K
    tiles (1 if none can)."""
    if min(n, k, num_sms) < 1:
        raise ValueError("choose_thin_splits: sizes and num_sms must be positive")
    blocks, target = _cdiv(n, block_N), _cdiv(num_sms, THIN_MIN_SM_SHARE)
    if blocks >= target:
        return 1
    want = min(_cdiv(target, blocks), max_splits, _cdiv(k, block_K) // min_k_tiles)
    return max(1, want)


def choose_kv_splits(base_blocks, kv_blocks, num_sms, blocks_per_sm=1, max_splits=256, min_kv_blocks=2,
                     kv_share=1):
    """The number of splits of the key axis for a split-KV decoding kernel
    (examples/flash_decoding.tile) whose grid without splitting has
    base_blocks blocks (batch x heads x query blocks) walking kv_blocks key
    blocks each, on num_sms SMs holding blocks_per_sm of its blocks at once
    (shared memory and threads decide: blocks_per_sm_of); kv_share of those
    blocks read the same K/V (the query heads of a GQA group in the per-head
    split kernel; 1 when each block streams its own K/V, as in the MHA and
    the group-packed kernels).

    Decoding is bound by reading K and V, so, as choose_splits does for
    memory-bound products, the answer is the smallest split count that
    keeps the memory system busy: one stream of distinct K/V per SM
    (ceil(base_blocks / kv_share) x s fills 90 % of num_sms), or, when the
    blocks share their K/V, every block slot filled once (base_blocks x s
    fills 90 % of num_sms x blocks_per_sm), whichever comes first; each
    split keeps >= min_kv_blocks key blocks (the largest such count when
    none fills). More splits only add fixed costs: each split's Q load and
    pipeline fill, its partial output and log-sum-exp, the combine's work,
    and more concurrent streams for DRAM to interleave. Measured on an H100
    (bench/results/2026-11-24-nvidia-h100-session11-notes.md, bf16, dim 128,
    split + combine): batch 1 x 32 heads at 128k keys 4 splits 714 us
    against 743 with the 41 of the earlier waves model; GQA packed (8 KV
    heads) 15-16 splits 195 us against 231 at 41; the per-head split kernel
    with GQA 32/8 and 16 tokens 8 splits (slots filled) 339 us against 484
    at 4. A grid that fills 90 % of the slots unsplit is not split."""
    if min(base_blocks, kv_blocks, num_sms, blocks_per_sm, kv_share) < 1:
        raise ValueError("choose_kv_splits: sizes, num_sms, blocks_per_sm and kv_share must be positive")
    slots = num_sms * blocks_per_sm
    if _fills(base_blocks, slots):
        return 1
    streams = _cdiv(base_blocks, kv_share)
    cands = [s for s in range(2, max_splits + 1) if kv_blocks // s >= min_kv_blocks]
    for s in cands:
        if _fills(streams * s, num_sms) or _fills(base_blocks * s, slots):
            return s
    return cands[-1] if cands else 1


def blocks_per_sm_of(info, smem_per_sm=228 * 1024, max_threads=2048):
    """How many blocks of a CUDA kernel (its KernelInfo) one SM holds at
    once by shared memory (each block also takes 1 KB of the SM's) and
    threads; registers are not counted."""
    by_smem = smem_per_sm // (info.shared_bytes + 1024) if info.shared_bytes else 32
    return max(1, min(by_smem, max_threads // max(1, info.threads), 32))


def _dtype_name(x):
    t = str(getattr(x, "dtype", ""))
    if "bfloat16" in t:
        return "bf16"
    if "float16" in t:
        return "f16"
    raise TypeError("tilec.gemm: A must be float16 or bfloat16 (got %s)" % (t or type(x).__name__))


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


def _flat_view(x, shape, what):
    """A view of compact x with another shape (never a copy: the kernel
    writes through it)."""
    if _is_torch(x):
        if not x.is_contiguous():
            raise ValueError("tilec.gemm: %s must be contiguous" % what)
        return x.view(shape)
    flags = getattr(x, "flags", None)
    if flags is None or not flags["C_CONTIGUOUS"]:
        raise ValueError("tilec.gemm: %s must be a C-contiguous array" % what)
    v = x.reshape(shape)
    if v.base is not x and v.base is not getattr(x, "base", None):
        raise ValueError("tilec.gemm: %s could not be viewed flat" % what)
    return v


def _alloc_f32(like, numel):
    if _is_torch(like):
        import torch
        return torch.empty(numel, dtype=torch.float32, device=like.device)
    import numpy as np
    return np.empty(numel, np.float32)


def _alloc_i32_zeros(like, numel):
    if _is_torch(like):
        import torch
        return torch.zeros(numel, dtype=torch.int32, device=like.device)
    import numpy as np
    return np.zeros(numel, np.int32)


def _device_sms(ctx, like):
    """(num_sms, shared memory per SM in bytes) of the device the call runs
    on; torch tells when A is a CUDA tensor, else an H100-like guess (the
    CPU's answer does not matter: the plan is only about filling SMs)."""
    if _is_torch(like) and like.is_cuda:
        import torch
        p = torch.cuda.get_device_properties(like.device)
        smem = 227 * 1024 if p.major >= 9 else 163 * 1024 if (p.major, p.minor) == (8, 0) else 99 * 1024
        return p.multi_processor_count, smem
    return 132, 227 * 1024


class Gemm:
    """The gemm and split-K kernels of one dtype, loaded once.

    defines: extra -D for gemm.tile (e.g. {"block_N": 128}); splitk_defines:
    for gemm_splitk.tile (block_M, block_N, block_K, num_stages, threads):
    given, they fix the split-K tile (the plan's variant is then "splitk");
    else the plan picks one of SPLITK_TILES by the shape.
    """

    def __init__(self, ctx, dtype="f16", defines=None, splitk_defines=None, fused=False):
        self.ctx = ctx
        self.dtype = dtype
        self.defines = dict(defines or {})
        self.splitk_defines = dict(splitk_defines or {})
        self.fused = bool(fused)
        self._gemm = None
        self._thin = {}  # THIN_TILES label -> gemm_thin kernel
        self._splitk = {}  # label -> (partial kernel, reduce kernel, fused kernel)
        self._workspace = None
        self._counters = None  # int32, zero between launches (gemm_splitk_fused)

    def _tile_defines(self, label):
        if self.splitk_defines or label == "splitk":
            return dict(self.splitk_defines)
        return dict(SPLITK_TILES[label])

    def tile(self, label="splitk"):
        """The split-K tile (SPLITK_DEFAULTS keys) of a variant label."""
        t = dict(SPLITK_DEFAULTS)
        t.update({k: int(v) for k, v in self._tile_defines(label).items() if k in SPLITK_DEFAULTS})
        return t

    # -- kernels, loaded on first use --
    def gemm_kernel(self):
        if self._gemm is None:
            d = {"dtype": self.dtype}
            d.update(self.defines)
            self._gemm = self.ctx.load(example_source("gemm.tile"), defines=d).kernel("gemm")
        return self._gemm

    def thin_kernel(self, label="thin"):
        """examples/gemm_thin.tile's gemm_thin (C^T = B^T A^T, for M <=
        THIN_ROWS) built with THIN_TILES[label] ("thin" is the plan's for thin
        products on sm_90a; bench/bench_gemm.py times both)."""
        if label not in self._thin:
            d = {"dtype": self.dtype}
            d.update(THIN_TILES[label])
            self._thin[label] = self.ctx.load(example_source("gemm_thin.tile"), defines=d).kernel("gemm_thin")
        return self._thin[label]

    def _splitk_module(self, label):
        if label not in self._splitk:
            d = {"dtype": self.dtype}
            d.update(self._tile_defines(label))
            mod = self.ctx.load(example_source("gemm_splitk.tile"), defines=d)
            self._splitk[label] = (mod.kernel("gemm_splitk"), mod.kernel("splitk_reduce"),
                                   mod.kernel("gemm_splitk_fused"))
        return self._splitk[label]

    def splitk_kernels(self, label="splitk"):
        """(gemm_splitk, splitk_reduce): the two-kernel path of a tile label."""
        return self._splitk_module(label)[:2]

    def fused_kernel(self, label="splitk"):
        """gemm_splitk_fused of a tile label."""
        return self._splitk_module(label)[2]

    def counter_tiles(self, m, n, label="splitk"):
        """How many counters gemm_splitk_fused needs for an m x n output
        with the tile of `label`: one per C tile."""
        t = self.tile(label)
        return _cdiv(m, t["block_M"]) * _cdiv(n, t["block_N"])

    def counter_buffer(self, like, tiles):
        """The first `tiles` elements of the kept int32 counters (all zero
        between launches), allocated with like's array library on its
        device; grown (a fresh zeroed buffer) when too small."""
        c = self._counters
        if c is None or c.shape[0] < tiles or _is_torch(like) != _is_torch(c) or \
                (_is_torch(like) and c.device != like.device):
            self._counters = c = _alloc_i32_zeros(like, max(tiles, 1))
        return c[:tiles]

    def reset_counters(self):
        """Drops the counters: the next fused launch starts from a fresh
        zeroed buffer (after a launch that failed part-way)."""
        self._counters = None

    def plan(self, m, n, k, num_sms=132, smem_per_sm=227 * 1024, plain_tile=None):
        """("gemm", 1), ("thin", splits) or (split-K label, splits) for an m
        x n x k product (the label "splitk", "splitk-m128" or "splitk-n64":
        its tile).
        plain_tile: gemm.tile's (block_M, block_N) for this shape (default:
        the defines' block_M / block_N, else gemm_tile_for() on sm_90's tile
        when smem_per_sm allows it, else 128 x 128: gemm.tile's defaults)."""
        if plain_tile is None:
            plain_tile = gemm_tile_for(m, n, smem_per_sm >= 200 * 1024, num_sms)
            plain_tile = (int(self.defines.get("block_M", plain_tile[0])),
                          int(self.defines.get("block_N", plain_tile[1])))
        if m <= THIN_ROWS and smem_per_sm >= 200 * 1024:
            return "thin", choose_thin_splits(n, k, num_sms)
        if _fills(_cdiv(m, plain_tile[0]) * _cdiv(n, plain_tile[1]), num_sms):
            return "gemm", 1
        label = "splitk" if self.splitk_defines else splitk_tile_for(m, n)
        t = self.tile(label)
        smem = (t["block_M"] + t["block_N"]) * t["block_K"] * 2 * t["num_stages"]
        per_sm = max(1, min(smem_per_sm // smem, 2048 // t["threads"]))
        s = choose_splits(m, n, k, num_sms, t["block_M"], t["block_N"], t["block_K"], per_sm)
        return (label, s) if s > 1 else ("gemm", 1)

    def __call__(self, a, b, c, splits=None, stream=None, workspace=None, num_sms=None, variant=None,
                 fused=None):
        """C = A @ B. splits: None (plan from the shape), 1 (gemm.tile) or
        the number of K ranges; variant: the split-K tile's label (default:
        the plan's, "splitk" when splits are given), or a THIN_TILES label
        for gemm_thin.tile over `splits` K ranges (1: one launch); fused: split-K in one
        launch (gemm_splitk_fused) or two (gemm_splitk, splitk_reduce);
        default: the constructor's (True). Returns (variant, splits) as
        run."""
        if len(getattr(a, "shape", ())) != 2 or len(getattr(b, "shape", ())) != 2:
            raise ValueError("tilec.gemm: A and B must be 2-D")
        m, k = a.shape
        k2, n = b.shape
        if k2 != k or tuple(c.shape) != (m, n):
            raise ValueError("tilec.gemm: shapes %s @ %s -> %s do not match" %
                             (tuple(a.shape), tuple(b.shape), tuple(c.shape)))
        if splits is None:
            sms, smem = _device_sms(self.ctx, a)
            planned, splits = self.plan(m, n, k, num_sms or sms, smem)
            variant = variant or planned
        elif int(splits) < 1:
            raise ValueError("tilec.gemm: splits must be >= 1, not %r" % (splits,))
        splits = int(splits)
        if variant in THIN_TILES:
            return self._call_thin(variant, a, b, c, m, n, splits, stream, workspace)
        if splits == 1:
            self.gemm_kernel()(a, b, c, stream=stream)
            return "gemm", 1
        cflat = _flat_view(c, (m * n,), "C")
        variant = variant if variant and variant != "gemm" else "splitk"
        if variant not in SPLITK_TILES:
            raise ValueError("tilec.gemm: variant must be one of %s, not %r" %
                             (sorted(SPLITK_TILES) + sorted(THIN_TILES), variant))
        fused = self.fused if fused is None else bool(fused)
        part, reduce = self.splitk_kernels(variant)
        p3 = self.workspace_for(a, splits, m, n, workspace)
        if fused:
            counters = self.counter_buffer(a, self.counter_tiles(m, n, variant))
            try:
                self.fused_kernel(variant)(a, b, p3, c, counters, stream=stream)
            except Exception:
                # A launch refused before it ran leaves the counters as they
                # were; one that faulted may leave some non-zero: start over.
                self.reset_counters()
                raise
            return variant, splits
        p2 = _flat_view(p3, (splits, m * n), "workspace")
        part(a, b, p3, stream=stream)
        reduce(p2, cflat, stream=stream)
        return variant, splits

    def workspace_for(self, like, splits, m, n, workspace=None):
        """The f32 partials P [splits, m, n]: a view of `workspace` if given,
        else of the kept buffer (grown, or allocated on like's device)."""
        need = splits * m * n
        if workspace is None:
            w = self._workspace
            if w is None or w.shape[0] < need or _is_torch(like) != _is_torch(w) or \
                    (_is_torch(like) and w.device != like.device):
                self._workspace = _alloc_f32(like, need)
            workspace = self._workspace
        return _flat_view(_flat_view(workspace, (-1,), "workspace")[:need], (splits, m, n), "workspace")

    def _call_thin(self, label, a, b, c, m, n, splits, stream, workspace):
        """gemm_thin over `splits` K ranges: it writes C itself with one
        split, else partials that splitk_reduce adds (the "splitk" module's)."""
        p3 = self.workspace_for(a, splits, m, n, workspace)
        self.thin_kernel(label)(a, b, p3, c, stream=stream)
        if splits > 1:
            reduce = self.splitk_kernels("splitk")[1]
            reduce(_flat_view(p3, (splits, m * n), "workspace"), _flat_view(c, (m * n,), "C"), stream=stream)
        return label, splits


_cache = {}


def gemm(ctx, a, b, c, splits=None, stream=None, workspace=None, fused=None):
    """C = A @ B with the plan of Gemm (one Gemm per context and dtype, kept).
    fused=False: split-K as two kernels. Returns (variant, splits) as run."""
    key = (id(ctx), _dtype_name(a))
    g = _cache.get(key)
    if g is None or g.ctx is not ctx:
        g = _cache[key] = Gemm(ctx, key[1])
    return g(a, b, c, splits=splits, stream=stream, workspace=workspace, fused=fused)
