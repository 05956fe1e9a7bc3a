#!/bin/bash
# The backward stream-K walk (branch sk-backward): its gpu tests, then the
# thin-last-wave bf16 rows in alternation (the default runs the stream-K
# build there), whole tiles (sk0), and the split forced with the tests'
# small-split rule (sks: -DTC_SK_MIN_SAVED=4 -DTC_SK_SLOW_DIV=0), which
# splits 4096^3 too. Forward-walk reference: this session's H200 rows
# (2304 x 2048 x 8192 0.842-0.845, 4352 x 4096 x 4096 0.968-0.971).
set -u
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 200 ctest --test-dir build -L gpu -R "stream_k|gemm.bf16.defaults" -j6 --timeout 190 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Failed" $OUT/ctest.log | tail -10
timeout 200 python3 bench/bench_alternating.py --gemm \
  --shapes 2304x2048x8192,4352x4096x4096,2176x4096x4096,4352x8192x8192,3000x5000x2000,4096x4096x4096 \
  --rep-ms 1200 --min-steps 20 --gemm-variant sk0=env.TILEC_STREAM_K:0 \
  --gemm-variant "sks=env.TILEC_STREAM_K:1,env.TILEC_NVRTC_FLAGS:-DTC_SK_MIN_SAVED=4 -DTC_SK_SLOW_DIV=0" \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A12 "^## "; grep -v "edited CUDA" $OUT/ab.err | tail -3
