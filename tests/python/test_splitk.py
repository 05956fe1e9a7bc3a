"""test_splitk.py - tilec.gemm / tilec.splitk (python/tilec/splitk.py) on the
CPU with NumPy float16 arrays: the split-count heuristic, the plan, and
C = A @ B through gemm.tile and through examples/gemm_splitk.tile's split-K
(the two-kernel path, the default; and fused=True, one launch),
against a float64 product of the same inputs; the fused path's int32
counters (one per C tile, zero between launches, replaced after a failed
launch).

Bound 4 * eps(f16) of max|ref| as test_gemm.py (f32 accumulation in any split
order, one rounding to f16). Sizes are ragged (M = 1, 16, 100; N, K not
multiples of any block), with small tiles so the C backend stays quick, and
split counts past K's tile count (empty splits must write zeros). Each
split-K result is computed twice and must be the same bits, and the fused
and two-kernel paths must give the same bits (the same additions in the
same order).

With TILEC_TEST_DEVICE=cuda (ctest python.splitk.gpu, label gpu) it also
runs test_gpu: tilec.gemm on CUDA torch tensors (bf16, f16) at decode-like
ragged shapes, its own plan and forced split counts, against float64.
"""
import os

import harness
from harness import np, rng

GPU = os.environ.get("TILEC_TEST_DEVICE") == "cuda"
if GPU:
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("no CUDA GPU")
    except ImportError as e:
        print("SKIP: TILEC_TEST_DEVICE=cuda needs PyTorch with a CUDA GPU (%s)" % e)
        raise SystemExit(harness.SKIP)

import tilec
from tilec import splitk

BOUND = 4 * 2.0 ** -10
SMALL = {"block_M": 32, "block_N": 32, "block_K": 16}


def product(m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def test_choose_splits():
    # 64 x 8192 x 8192 on 132 SMs: bound by reading A and B (intensity ~63
    # FLOP/B), so one block per SM: 64 tiles, 2 splits give 128 blocks.
    assert splitk.choose_splits(64, 8192, 8192, 132, blocks_per_sm=2) == 2
    assert splitk.choose_splits(17, 8192, 8192, 132, blocks_per_sm=2) == 2
    # Thin (M <= 16): every block slot, for more of B in flight: 4 splits
    # give 256 blocks of the 264 slots.
    for m in (1, 16):
        assert splitk.choose_splits(m, 8192, 8192, 132, blocks_per_sm=2) == 4, m
    assert splitk.choose_splits(1, 8192, 8192, 132, blocks_per_sm=1) == 2
    # 128 x 8192 with 64-row tiles: 128 tiles already fill the SMs once.
    assert splitk.choose_splits(128, 8192, 8192, 132, blocks_per_sm=2) == 1
    # Enough tiles already: no split.
    assert splitk.choose_splits(4096, 4096, 4096, 132, blocks_per_sm=2) == 1
    # K too short to give each split >= 4 K tiles of 64.
    assert splitk.choose_splits(16, 8192, 256, 132) == 1
    # Large K, small M x N (intensity 256 FLOP/B: the tensor cores bound it):
    # 32 tiles, 1024 K tiles; 8 splits fill the 264 slots of 2 blocks per SM.
    assert splitk.choose_splits(512, 512, 65536, 132, blocks_per_sm=2) == 8
    # The 128 x 128 tile, one block per SM: 16 tiles, 8 splits.
    assert splitk.choose_splits(512, 512, 65536, 132, block_M=128, block_N=128) == 8
    try:
        splitk.choose_splits(0, 1, 1, 132)
    except ValueError:
        pass
    else:
        raise AssertionError("choose_splits accepted M = 0")


def test_choose_kv_splits():
    # batch 1 x 32 heads, one token, 64-key blocks, 2 blocks per SM of 132:
    # 4 splits put one K/V stream on 128 of the 132 SMs (>= 90 %), at 8192
    # and at 128k keys alike (measured best on an H100: 4 splits 714 us,
    # the old waves model's 41 743 us at 128k).
    assert splitk.choose_kv_splits(32, 128, 132, 2) == 4
    assert splitk.choose_kv_splits(32, 2048, 132, 2) == 4
    # GQA packed, 8 KV heads: 15 x 8 = 120 streams >= 90 % of 132.
    assert splitk.choose_kv_splits(8, 2048, 132, 2) == 15
    # ... but a 1024-key cache (16 blocks) keeps >= 2 key blocks a split.
    assert splitk.choose_kv_splits(8, 16, 132, 2) == 8
    # The per-head kernel with GQA 32/8: 4 query heads read each K/V, so 8
    # distinct streams a split; the 264 slots fill first, at 8 splits.
    assert splitk.choose_kv_splits(32, 2048, 132, 2, kv_share=4) == 8
    # batch 8 x 32 heads: 256 blocks already fill the GPU once.
    assert splitk.choose_kv_splits(256, 128, 132, 2) == 1
    assert splitk.choose_kv_splits(256, 2048, 132, 2) == 1
    assert splitk.choose_kv_splits(237, 2048, 132, 2) > 1   # under 90 % of 264 slots: split
    # batch 8 x 8 KV heads, packed: 2 splits give 128 streams.
    assert splitk.choose_kv_splits(64, 2048, 132, 2) == 2
    # A short cache keeps >= 2 key blocks per split.
    assert splitk.choose_kv_splits(1, 5, 132, 2) == 2
    assert splitk.choose_kv_splits(1, 1, 132, 2) == 1
    assert splitk.choose_kv_splits(1, 3, 132, 2) == 1
    # The rule on a grid of shapes: the smallest count that fills, or the
    # largest allowed when none does; never one splitting past 2 key blocks.
    fills = lambda blocks, slots: blocks * 10 >= slots * 9
    for base in (1, 3, 8, 32, 100, 264, 1000):
        for share in (1, 4):
            for kv in (1, 2, 7, 64, 128, 2048):
                s = splitk.choose_kv_splits(base, kv, 132, 2, kv_share=share)
                if fills(base, 264):
                    assert s == 1, (base, kv, s)
                    continue
                ok = [x for x in range(2, 257) if kv // x >= 2]
                good = lambda x: fills(-(-base // share) * x, 132) or fills(base * x, 264)
                assert s == 1 and not ok or s in ok, (base, share, kv, s)
                if s > 1:
                    assert good(s) or s == ok[-1], (base, share, kv, s)
                    assert not any(good(x) for x in ok if x < s), (base, share, kv, s)
    for bad in ((0, 1, 1, 1), (1, 0, 1, 1), (1, 1, 0, 1), (1, 1, 1, 0), (1, 1, 1, 1, 256, 2, 0)):
        try:
            splitk.choose_kv_splits(*bad)
        except ValueError:
            continue
        raise AssertionError("choose_kv_splits accepted %r" % (bad,))


def test_blocks_per_sm_of():
    class Info:
        def __init__(self, smem, threads):
            self.shared_bytes, self.threads = smem, threads
    assert splitk.blocks_per_sm_of(Info(80 * 1024, 128)) == 2
    assert splitk.blocks_per_sm_of(Info(227 * 1024, 384)) == 1
    assert splitk.blocks_per_sm_of(Info(0, 1024)) == 2
    assert splitk.blocks_per_sm_of(Info(8 * 1024, 128)) == 16


def test_plan():
    with harness.cpu_context() as ctx:
        g = splitk.Gemm(ctx, "f16")
        assert g.plan(4096, 4096, 4096) == ("gemm", 1)
        assert g.plan(8192, 1024, 8192) == ("gemm", 1)    # 64 x 4 = 256 tiles of 128 x 256
        # sm_90: gemm.tile's own small tiles fill the SMs at M <= 128 and N <= 64.
        assert g.plan(64, 8192, 8192) == ("gemm", 1)      # 128 tiles of 64 x 64
        assert g.plan(128, 8192, 8192) == ("gemm", 1)     # 128 tiles of 64 x 128
        assert g.plan(8192, 64, 8192) == ("gemm", 1)      # 128 tiles of 64 x 64
        assert splitk.gemm_tile_for(1, 8192) == (64, 64) and splitk.gemm_tile_for(100, 4096) == (64, 128)
        assert splitk.gemm_tile_for(129, 4096) == (128, 256) and splitk.gemm_tile_for(16, 8192, False) == (128, 128)
        # 192 x 192 where they fill whole waves (132 tiles) and 128 x 256 do not (144)
        assert splitk.gemm_tile_for(2304, 2048) == (192, 192) and splitk.gemm_tile_for(2304, 2048, True, 114) == (128, 256)
        assert splitk.gemm_tile_for(4096, 4096) == (128, 256)
        # Thin products (M <= 16) on sm_90a run gemm_thin.tile: one launch
        # while its 64-column tiles cover a third of the SMs (44 of 132),
        # split below that, each split keeping >= 8 K tiles.
        for m in (1, 16):
            assert g.plan(m, 8192, 8192) == ("thin", 1), m
        assert g.plan(16, 4096, 8192) == ("thin", 1)      # 64 blocks
        assert g.plan(16, 2048, 8192) == ("thin", 2)      # 32 blocks -> 64
        assert g.plan(1, 512, 65536) == ("thin", 6)       # 8 blocks -> 48
        assert g.plan(1, 512, 1024) == ("thin", 2)        # 16 K tiles: 2 splits of 8
        assert g.plan(1, 512, 256) == ("thin", 1)         # 4 K tiles: nothing to split
        assert splitk.choose_thin_splits(100, 64, 132) == 1 and splitk.choose_thin_splits(64, 64 * 8 * 40, 132) == 32
        assert g.plan(17, 8192, 8192) == ("gemm", 1)      # not thin: 128 tiles of 64 x 64
        # Too few small tiles still split, one block per SM when reading A and
        # B bounds the product: 32 x 4096 is 32 tiles of 64 x 128.
        assert g.plan(32, 4096, 8192) == ("splitk", 4)
        # sm_80's 163 KB: no gemm_thin (16 stages); split-K's thin rule: one
        # 96 KB block per SM, 132 slots: 2 splits.
        assert g.plan(1, 8192, 8192, smem_per_sm=163 * 1024) == ("splitk", 2)
        assert g.plan(16, 4096, 8192, smem_per_sm=163 * 1024)[0] == "splitk"
        assert g.plan(512, 512, 65536)[0] == "splitk-m128"   # M >= 128: the 128-row tile
        assert g.plan(64, 4096, 8192)[0] == "splitk"          # M < 128: 64 x 128
        assert g.plan(4096, 64, 8192)[0] == "splitk-n64"      # N <= 64: 128 x 64
        assert g.tile("splitk-m128")["block_M"] == 128 and g.tile("splitk-n64")["block_N"] == 64
        fixed = splitk.Gemm(ctx, "f16", splitk_defines={"block_M": 32})
        assert fixed.plan(512, 512, 65536)[0] == "splitk"     # splitk_defines fix the tile
        assert g.plan(16, 8192, 128) == ("thin", 1)       # 2 K tiles: nothing to split
        assert g.plan(16, 8192, 128, smem_per_sm=163 * 1024) == ("gemm", 1)
        # gemm.tile's tile as defined: 32 x 32 tiles fill 132 SMs at 128 x 1056.
        small = splitk.Gemm(ctx, "f16", defines={"block_M": 32, "block_N": 32})
        assert small.plan(128, 1056, 8192) == ("gemm", 1)
        assert g.plan(128, 1056, 8192)[0] == "splitk-m128"


def test_splitk_numerics():
    with harness.cpu_context() as ctx:
        g = splitk.Gemm(ctx, "f16", defines=SMALL, splitk_defines=SMALL, fused=True)
        for m, n, k in ((1, 70, 300), (16, 100, 300), (100, 70, 45)):
            a, b, ref = product(m, n, k)
            for s in (1, 3, 8, 40):
                c = harness.poisoned((m, n), np.float16)
                ran = g(a, b, c, splits=s)
                assert ran == (("gemm", 1) if s == 1 else ("splitk", s)), ran
                harness.check_close("%dx%dx%d, splits %d" % (m, n, k, s), c, ref, BOUND)
                if s > 1:
                    again = harness.poisoned((m, n), np.float16)
                    g(a, b, again, splits=s)
                    assert np.array_equal(c.view(np.uint16), again.view(np.uint16)), \
                        "splits %d: a second run gave other bits" % s
                    two = harness.poisoned((m, n), np.float16)
                    g(a, b, two, splits=s, fused=False)
                    assert np.array_equal(c.view(np.uint16), two.view(np.uint16)), \
                        "splits %d: the two-kernel path gave other bits" % s
                    assert not g._counters.any(), "splits %d: counters left non-zero" % s
        # A workspace of the caller's (larger than needed) is used as given.
        a, b, ref = product(16, 100, 300)
        ws = np.full(5 * 16 * 100 + 7, np.nan, np.float32)
        c = harness.poisoned((16, 100), np.float16)
        g(a, b, c, splits=5, workspace=ws)
        harness.check_close("16x100x300, splits 5, given workspace", c, ref, BOUND)
        assert np.isfinite(ws[:5 * 16 * 100]).all() and np.isnan(ws[5 * 16 * 100:]).all()


def test_thin_variant():
    # variant="thin": examples/gemm_thin.tile (C^T = B^T A^T), one launch
    # with one split, its partials and splitk_reduce past that: against the
    # reference, and reruns bit-equal (no atomics).
    with harness.cpu_context() as ctx:
        g = splitk.Gemm(ctx, "f16")
        for label in splitk.THIN_TILES:
            for m, n, k in ((1, 70, 300), (16, 200, 300), (17, 33, 64)):
                a, b, ref = product(m, n, k)
                for s in (1, 3):
                    c = harness.poisoned((m, n), np.float16)
                    assert g(a, b, c, splits=s, variant=label) == (label, s)
                    harness.check_close("%s %dx%dx%d, splits %d" % (label, m, n, k, s), c, ref, BOUND)
                    again = harness.poisoned((m, n), np.float16)
                    g(a, b, again, splits=s, variant=label)
                    assert np.array_equal(c.view(np.uint16), again.view(np.uint16)), \
                        "%s: a rerun gave other bits" % label


def test_counters():
    with harness.cpu_context() as ctx:
        g = splitk.Gemm(ctx, "f16", splitk_defines=SMALL, fused=True)
        assert g.counter_tiles(100, 70) == 4 * 3            # 32 x 32 tiles
        assert splitk.Gemm(ctx, "f16").counter_tiles(16, 8192) == 64               # 64 x 128
        assert splitk.Gemm(ctx, "f16").counter_tiles(512, 512, "splitk-m128") == 16  # 128 x 128
        assert splitk.Gemm(ctx, "f16").counter_tiles(8192, 64, "splitk-n64") == 64   # 128 x 64
        c1 = g.counter_buffer(np.zeros(1, np.float16), 12)
        assert c1.dtype == np.int32 and c1.shape == (12,) and not c1.any()
        keep = g._counters
        assert g.counter_buffer(np.zeros(1, np.float16), 5).base is keep     # smaller: the same buffer
        assert g.counter_buffer(np.zeros(1, np.float16), 40).shape == (40,)  # larger: grown
        assert g._counters is not keep and not g._counters.any()
        # A launch over the kept counters leaves them zero; the caller's view
        # of the buffer sees every launch.
        a, b, ref = product(100, 70, 300)
        for s in (2, 5):
            c = harness.poisoned((100, 70), np.float16)
            assert g(a, b, c, splits=s) == ("splitk", s)
            harness.check_close("counters, splits %d" % s, c, ref, BOUND)
            assert not g._counters.any()
        # A launch that raises drops the counters (a fault may leave some
        # non-zero); the next launch gets fresh zeros.
        real = g.fused_kernel

        def broken(label="splitk"):
            def launch(*args, **kw):
                raise RuntimeError("injected launch failure")
            return launch
        g.fused_kernel = broken
        try:
            g(a, b, harness.poisoned((100, 70), np.float16), splits=3)
        except RuntimeError as e:
            assert "injected" in str(e)
        else:
            raise AssertionError("the injected failure did not propagate")
        assert g._counters is None
        g.fused_kernel = real
        c = harness.poisoned((100, 70), np.float16)
        g(a, b, c, splits=3)
        harness.check_close("after a failed launch", c, ref, BOUND)
        assert g._counters is not None and not g._counters.any()
        # fused=False leaves the counters alone.
        two = splitk.Gemm(ctx, "f16", splitk_defines=SMALL, fused=False)
        c = harness.poisoned((100, 70), np.float16)
        two(a, b, c, splits=3)
        harness.check_close("fused=False", c, ref, BOUND)
        assert two._counters is None


def test_gemm_helper_plan():
    # tilec.gemm with the default tiles: the plan picks split-K for 32 rows
    # against 1000 columns (8 tiles of 64 x 128 on 132 SMs), and
    # gemm_thin.tile over 2 K ranges for 16 rows (16 blocks of 64 columns,
    # 18 K tiles).
    with harness.cpu_context() as ctx:
        for m, plan in ((32, ("splitk", 4)), (16, ("thin", 2))):
            a, b, ref = product(m, 1000, 1100)
            c = harness.poisoned((m, 1000), np.float16)
            ran = tilec.gemm(ctx, a, b, c)
            assert ran == plan, (m, ran)
            harness.check_close("tilec.gemm %dx1000x1100 %s" % (m, ran), c, ref, BOUND)
        a, b, ref = product(100, 70, 45)
        c = harness.poisoned((100, 70), np.float16)
        assert tilec.gemm(ctx, a, b, c) == ("gemm", 1)   # 45: one K tile
        harness.check_close("tilec.gemm 100x70x45", c, ref, BOUND)


def test_errors():
    with harness.cpu_context() as ctx:
        a, b, _ = product(16, 40, 30)
        for bad, text in (
                (lambda: tilec.gemm(ctx, a, b, np.zeros((16, 41), np.float16)), "do not match"),
                (lambda: tilec.gemm(ctx, a, b, np.asfortranarray(np.zeros((16, 40), np.float16)),
                                    splits=2), "C-contiguous"),
                (lambda: tilec.gemm(ctx, a, b, np.zeros((16, 40), np.float16), splits=0), "splits"),
                (lambda: tilec.gemm(ctx, a.astype(np.float32), b, np.zeros((16, 40), np.float16)),
                 "float16 or bfloat16")):
            try:
                bad()
            except (ValueError, TypeError) as e:
                assert text in str(e), "%r lacks %r" % (str(e), text)
            else:
                raise AssertionError("accepted: %s" % text)


def test_gpu():
    """CUDA torch tensors: the plan (gemm_thin.tile on sm_90a, else split-K,
    at M = 1 and 16 against 3001+ columns, also where gemm.tile's 64 x 64
    tiles would fill the SMs: 16 x 8200) and forced counts; 4 ulps of the dtype of
    max|ref|; bit-equal reruns."""
    if not GPU:
        print("  (CPU run: set TILEC_TEST_DEVICE=cuda for the GPU checks)")
        return
    bounds = {torch.float16: 4 * 2.0 ** -10, torch.bfloat16: 4 * 2.0 ** -7}
    with tilec.Context(device="cuda") as ctx:
        for tdt in (torch.bfloat16, torch.float16):
            for m, n, k, splits in ((1, 4100, 4999, None), (16, 3001, 8191, None), (16, 8200, 1000, None),
                                    (100, 1000, 2000, 3),
                                    (128, 520, 65, 1), (16, 3001, 8191, 7)):
                a = torch.randn((m, k), device="cuda", dtype=tdt)
                b = torch.randn((k, n), device="cuda", dtype=tdt)
                ref = a.double() @ b.double()
                c = torch.full((m, n), float("nan"), device="cuda", dtype=tdt)
                ran = tilec.gemm(ctx, a, b, c, splits=splits)
                torch.cuda.synchronize()
                if splits is None:   # sm_90a: gemm_thin.tile for thin products
                    want = "thin" if m <= splitk.THIN_ROWS and torch.cuda.get_device_capability()[0] >= 9 else "splitk"
                    assert ran[0] == want, "%dx%dx%d: plan %s" % (m, n, k, ran)
                harness.check_close("%s %dx%dx%d %s" % (tdt, m, n, k, ran), c.double().cpu().numpy(),
                                    ref.cpu().numpy(), bounds[tdt])
                again = torch.full_like(c, float("nan"))
                tilec.gemm(ctx, a, b, again, splits=splits)
                torch.cuda.synchronize()
                assert torch.equal(c.view(torch.int16), again.view(torch.int16)), "rerun differs"
                if m <= splitk.THIN_ROWS:  # gemm_thin.tile: one launch (1 split), partials + reduce (3)
                    g = splitk.Gemm(ctx, "bf16" if tdt == torch.bfloat16 else "f16")
                    for label in splitk.THIN_TILES:
                        for s in (1, 3):
                            thin = torch.full_like(c, float("nan"))
                            assert g(a, b, thin, splits=s, variant=label) == (label, s)
                            torch.cuda.synchronize()
                            harness.check_close("%s %dx%dx%d %s/%d" % (tdt, m, n, k, label, s),
                                                thin.double().cpu().numpy(), ref.cpu().numpy(), bounds[tdt])
                if ran[1] > 1 and ran[0] in splitk.SPLITK_TILES:  # fused split-K: the two-kernel path, the same bits
                    two = torch.full_like(c, float("nan"))
                    tilec.gemm(ctx, a, b, two, splits=ran[1], fused=False)
                    torch.cuda.synchronize()
                    assert torch.equal(c.view(torch.int16), two.view(torch.int16)), "two-kernel path differs"


harness.main(globals())
