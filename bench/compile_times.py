#!/usr/bin/env python3
"""compile_times.py - cold and warm load times of the examples on the GPU.

For each kernel: `repeats` cold loads, each into a fresh empty cache (front
end + NVRTC + cuModuleLoad), then warm loads (disk-cache hit, new context).
Prints one table row per kernel: min / median cold seconds, median warm ms,
and the cubin size. Needs TILEC_LIBRARY or TILEC_BUILD_DIR as python/tilec
documents; run from the repository root:
    python3 bench/compile_times.py [--repeats 3]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
import tilec  # noqa: E402

KERNELS = [
    ("flash_attention d128 f16", "flash_attention.tile", {"dtype": "f16", "dim": 128, "is_causal": False}),
    ("flash_attention d64 bf16 causal", "flash_attention.tile", {"dtype": "bf16", "dim": 64, "is_causal": True}),
    ("gemm f16", "gemm.tile", {"dtype": "f16"}),
]


def cubin_bytes(cache):
    return sum(os.path.getsize(os.path.join(cache, f)) for f in os.listdir(cache) if f.endswith(".cubin"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print("| kernel | cold min s | cold median s | warm median ms | cubin KB |")
    print("|---|---|---|---|---|")
    for label, file, defines in KERNELS:
        path = os.path.join(ROOT, "examples", file)
        cold, warm, size = [], [], 0
        for _ in range(args.repeats):
            cache = tempfile.mkdtemp(prefix="tilec-cold-")
            try:
                ctx = tilec.Context(device="cuda", cache_dir=cache)
                t0 = time.perf_counter()
                m = ctx.load(path, defines=defines)
                cold.append(time.perf_counter() - t0)
                assert not m.from_cache, "a cold load came from the cache"
                ctx.close()
                size = cubin_bytes(cache)
                for _ in range(3):
                    ctx = tilec.Context(device="cuda", cache_dir=cache)
                    t0 = time.perf_counter()
                    m = ctx.load(path, defines=defines)
                    warm.append(time.perf_counter() - t0)
                    assert m.from_cache, "a warm load missed the cache"
                    ctx.close()
            finally:
                shutil.rmtree(cache, ignore_errors=True)
        print("| %s | %.2f | %.2f | %.1f | %.0f |" % (label, min(cold), statistics.median(cold),
                                                      1e3 * statistics.median(warm), size / 1024))


main()
