"""test_bench_varlen.py - the CPU-side logic of bench/bench_varlen.py (the
lead runs it on the GPU): the mixed lengths and their offsets, the FLOP and
byte counts, the split heuristic, the paged cache and its block table, the
argument parsing, the report table, the NumPy reference; and the script's
--device cpu mode end to end (tilec's varlen kernel and the contiguous and
paged decoding kernels on the C back end, checked against float64)."""

import importlib.util
import os

import harness
import numpy as np

_spec = importlib.util.spec_from_file_location("bench_varlen",
                                               os.path.join(harness.SOURCE_DIR, "bench", "bench_varlen.py"))
bv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bv)


def test_mixed_lengths():
    lens = bv.mixed_lengths(1234, 16384)
    assert min(lens) == 1 and max(lens) == 4097, (min(lens), max(lens))
    assert all(1 <= n <= 4097 for n in lens) and sum(lens) >= 16384
    assert sum(lens[:-1]) < 16384 or len(lens) == len(bv.ANCHORS)   # stops as soon as it reaches the total
    for n in bv.ANCHORS:
        assert n in lens
    assert lens == bv.mixed_lengths(1234, 16384), "not deterministic for a seed"
    assert lens != bv.mixed_lengths(99, 16384)
    small = bv.mixed_lengths(5, 300, 1, 130)
    assert max(small) <= 130 and {1, 2, 17, 129} <= set(small)
    assert bv.mixed_lengths(5, 1, 7, 9) == [7]           # no anchor inside: lo
    assert bv.cu_seqlens([3, 1, 5]) == [0, 3, 4, 9]
    print("  %d lengths, %d tokens" % (len(lens), sum(lens)))


def test_counts():
    # useful FLOPs = 2 gemms x 2 flops x (visible pairs) x H x D, pairs counted
    # by brute force (full: L^2; causal: the FA convention, L^2 / 2).
    lens, h, d = [1, 5, 17], 3, 8
    pairs = sum(n * n for n in lens)
    assert bv.useful_flops(lens, h, d, False) == 4.0 * pairs * h * d
    assert bv.useful_flops(lens, h, d, True) == 2.0 * pairs * h * d
    assert bv.padded_flops(lens, h, d, False) == 4.0 * 3 * 17 * 17 * h * d
    r = dict(batch=2, seq_q=1, heads=8, heads_kv=2, dim=64, seq_kv=1000)
    assert bv.decode_bytes(r) == 2 * (2 * 2 * 1 * 8 * 64 + 2 * 2 * 1000 * 2 * 64)
    # Splits: ~4 blocks per SM, >= 2 key blocks per split, at most 256.
    assert bv.num_split_for(dict(r, batch=8, heads=32, seq_kv=8192), 132) == 3
    assert bv.num_split_for(dict(r, batch=1, heads=1, seq_kv=8192), 132) == 64
    assert bv.num_split_for(dict(r, batch=1, heads=1, seq_kv=64), 132) == 1
    assert bv.num_split_for(dict(r, batch=1, heads=1, seq_kv=1 << 20), 132) == 256


def test_paged_cache():
    rng = np.random.default_rng(3)
    b, s, hkv, d, page = 3, 150, 2, 4, 64
    k = rng.standard_normal((b, s, hkv, d)).astype(np.float32)
    mp = bv.page_count(s, page)
    assert mp == 3
    perm = rng.permutation(b * mp)
    cache = bv.paged_cache(lambda shape: np.zeros(shape, np.float32), perm, k, page)
    table = perm.reshape(b, mp)
    assert cache.shape == (b * mp, page, hkv, d)
    for i in range(b):   # token t of sequence i is row t % page of page table[i, t // page]
        back = np.concatenate([cache[table[i, n]] for n in range(mp)])[:s]
        assert np.array_equal(back, k[i])
        assert not np.any(cache[table[i, mp - 1]][s - (mp - 1) * page:])   # the tail is zero


def test_reference():
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((6, 2, 4)) for _ in range(3))
    # One key: the output is that value, causal or not.
    assert np.allclose(bv.np_attention(q[:1], k[:1], v[:1], True), v[:1])
    # Causal bottom-right with Sq == Skv: row 0 sees key 0 only.
    out = bv.np_attention(q, k, v, True)
    assert np.allclose(out[0], v[0])
    # Packed: each sequence on its own.
    lens = [2, 1, 3]
    got = bv.np_varlen_reference(q, k, v, lens, False)
    assert np.allclose(got[2], v[2]) and np.allclose(got[0:2], bv.np_attention(q[0:2], k[0:2], v[0:2], False))
    # GQA: heads 0, 1 read KV head 0.
    out = bv.np_attention(q, k[:, :1], v[:, :1], False)
    assert np.allclose(out[:, 1], bv.np_attention(q[:, 1:2], k[:, :1], v[:, :1], False)[:, 0])


def test_arguments():
    a = bv.parse_args(["--quick"])
    assert a.dims == [128] and a.tokens == 16384 and a.kv_lens == [8192] and a.min_runs == 10
    rows = bv.make_rows(a)
    assert [r["kind"] for r in rows] == ["varlen", "varlen", "paged"], rows
    assert rows[0]["heads"] == 16 and not rows[0]["causal"] and rows[1]["causal"]
    assert len({r["id"] for r in rows}) == len(rows)
    a = bv.parse_args([])
    assert a.dims == [64, 128] and a.tokens == 32768 and a.kv_lens == [8192, 32768, 131072] and a.min_runs == 20
    assert len(bv.make_rows(a)) == 2 * 2 + 3
    a = bv.parse_args(["--no-paged", "--causal", "yes", "--dtypes", "f16,bf16"])
    assert [r["kind"] for r in bv.make_rows(a)] == ["varlen"] * 4
    for bad in (["--dims", "96"], ["--dims", "x"], ["--dtypes", "f32"], ["--kv-lens", "0"], ["--tokens", "0"], ["--min-runs", "0"],
                ["--paged-heads", "30", "--paged-heads-kv", "8"], ["--causal", "maybe"]):
        try:
            bv.parse_args(bad)
        except SystemExit as e:
            assert e.code == 2, bad
        else:
            raise AssertionError("%s was accepted" % bad)


def test_report():
    a = bv.parse_args(["--quick"])
    rows = bv.make_rows(a)
    v, p = rows[0], rows[2]
    fl = bv.useful_flops(v["lens"], v["heads"], v["dim"], False)
    results = {v["id"]: [{"impl": "sdpa-flash-nested", "ms": 2.0}, {"impl": "tilec-varlen", "ms": 1.0},
                         {"impl": "sdpa-cudnn-padded", "error": "RuntimeError: no kernel"}],
               p["id"]: [{"impl": "tilec-paged", "ms": 0.0105, "num_split": 3},
                         {"impl": "tilec-contiguous", "ms": 0.01, "num_split": 3}]}
    text = bv.report(rows, results, "GPU X", when="now")
    print(text)
    lines = text.splitlines()
    tl = [l for l in lines if "| tilec-varlen |" in l][0]
    assert ("%s TFLOP/s" % bv.num(fl / 1e-3 / 1e12)) in tl and tl.startswith("| varlen bf16 d128 h16 full")
    assert "| sdpa-flash-nested | 2.000 ms" in text and "| 0.50x |" in text
    assert "FAIL: RuntimeError: no kernel" in text
    assert lines.index(tl) < lines.index([l for l in lines if "sdpa-flash-nested" in l][0])   # tilec first
    assert "paged/contiguous 1.05 (goal <= 1.10)" in text
    assert "10.0 us, %s GB/s" % bv.num(bv.decode_bytes(p) / 1e-5 / 1e9) in text
    assert bv.num(12345.6) == "12346" and bv.num(0.00123) == "0.00123" and bv.num(42.42) == "42.4"
    assert "(no result)" in text   # the causal row got nothing


def test_cpu_end_to_end():
    assert bv.main(["--device", "cpu"]) == 0


harness.main(globals())
