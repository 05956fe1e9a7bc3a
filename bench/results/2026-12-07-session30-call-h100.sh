#!/bin/bash
# The FP8 default's 128 x 144 shape choice (M >= 2048, N >= 5120), measured
# on an H200 only: the same rows on an H100, default against 128 x 128.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 150 python3 bench/bench_alternating.py --fp8 --fp8-shapes 4096x4096x4096,8192x8192x8192,6144x6144x6144,2048x8192x8192,8192x16384x2048,4096x5120x4096 --rep-ms 1200 --min-steps 20 --fp8-variant n128=block_N:128 --out-dir $OUT/ab 2> $OUT/ab.err | grep -A10 "^## "; tail -2 $OUT/ab.err
timeout 100 ctest --test-dir build -L gpu -R "wide_default|fp8_tiles.n1|rounds16" -j6 --timeout 90 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Failed" $OUT/ctest.log | tail -6
