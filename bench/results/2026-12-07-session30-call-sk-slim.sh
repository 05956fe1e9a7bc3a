#!/bin/bash
# The backward stream-K walk, slim (little device time left): the stream-K
# gpu tests (numerics and compute-sanitizer) and the two thin-wave rows.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 110 ctest --test-dir build -L gpu -R "stream_k" -j8 --timeout 105 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Failed" $OUT/ctest.log | tail -8
timeout 50 python3 bench/bench_alternating.py --gemm --shapes 2304x2048x8192,4352x4096x4096 \
  --rep-ms 800 --min-steps 15 --gemm-variant sk0=env.TILEC_STREAM_K:0 \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A6 "^## "; grep -v "edited CUDA" $OUT/ab.err | tail -2
