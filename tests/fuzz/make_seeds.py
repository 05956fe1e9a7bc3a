#!/usr/bin/env python3
"""make_seeds.py - builds the fuzzer's seed inputs from the repository's .tile files.

    python3 tests/fuzz/make_seeds.py OUTDIR

Every examples/*.tile and tests/**/*.tile becomes several fuzz inputs: the
11-byte header that fuzz_tilec.c reads (mode, -D mask, value nibbles), then
the file's text. Each file gets all five modes with no -D, and the examples
also get a few -D variants (edge values of block sizes, dims, dtypes and
is_causal) so specialization starts from valid programs. The output is a
starting point for `tilec_fuzz -merge=1`, not the committed corpus.
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEADER = 11
# Order of fuzz_names[] in fuzz_tilec.c.
NAMES = ["dim", "seq_len", "block_M", "block_N", "is_causal", "dtype", "num_stages",
         "threads", "block_K", "M", "N", "K", "batch", "heads", "panel_size", "x"]


def header(mode, binds):
    """binds: {name: nibble}; returns the 11 header bytes."""
    mask = 0
    nibbles = [0] * 16
    for name, nib in binds.items():
        i = NAMES.index(name)
        mask |= 1 << i
        nibbles[i] = nib
    vals = bytes(nibbles[2 * k] | nibbles[2 * k + 1] << 4 for k in range(8))
    out = bytes([mode, mask & 0xFF, mask >> 8]) + vals
    assert len(out) == HEADER
    return out


# (mode, binds) variants for the examples; nibbles index the value tables of
# fuzz_tilec.c (int: 0 "0", 1 "1", 3 "7", 5 "16", 7 "64", 8 "128", 13 INT64_MAX;
# bool: 0 true, 1 false; dtype: 0 f16, 1 bf16, 2 f32, 3 f64, 4 i32).
VARIANTS = [
    (0, {"seq_len": 3, "is_causal": 0, "M": 3, "N": 5, "K": 3}),
    (1, {"dim": 5, "block_M": 5, "block_N": 5, "dtype": 1, "is_causal": 0}),
    (2, {"block_M": 7, "block_N": 7, "num_stages": 3, "threads": 8, "block_K": 5}),
    (0, {"dim": 0, "block_M": 1, "threads": 1, "dtype": 2}),
    (1, {"seq_len": 13, "M": 13, "batch": 2, "heads": 2, "dtype": 4}),
    (4, {"num_stages": 1, "panel_size": 0, "dtype": 3}),
    # 2 + 5, 4 + 5: sm_90a CUDA / IR with cluster_multicast (b / 5 odd).
    (7, {"dtype": 1}),
    # sm_90a CUDA / IR at dim 64 causal: the flagship's one-warpgroup kernel
    # (pass inline-producer).
    (2, {"dim": 7, "is_causal": 0, "dtype": 1}),
    (4, {"dim": 7, "is_causal": 0, "dtype": 1}),
    (9, {"M": 3, "N": 5, "K": 3}),
]


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    files = sorted(ROOT.glob("examples/*.tile")) + sorted(ROOT.glob("tests/**/*.tile"))
    count = 0
    for f in files:
        if "fuzz" in f.parts:
            continue
        text = f.read_bytes()
        stem = f.stem
        variants = [(m, {}) for m in range(5)]
        if f.parent.name == "examples":
            variants += VARIANTS
        for k, (mode, binds) in enumerate(variants):
            (out / f"{f.parent.name}-{stem}-{k}").write_bytes(header(mode, binds) + text)
            count += 1
    print(f"{count} seeds in {out}")


if __name__ == "__main__":
    main()
