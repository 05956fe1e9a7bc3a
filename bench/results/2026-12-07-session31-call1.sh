#!/bin/bash
# Not run in session 31 (the device time went to calls 2-6): default builds
# are unchanged since, and the stream-K gpu tests ran in call 4.
# Prepared in session 30 for the next session's first device call (build/
# carried; about 450 s; either GPU, say which).
#  1. every gpu test except those session 30 ran after its last code
#     change (the stream-K ones ran on an H100 on 06a925f; the rest ran on
#     an H200 before the backward walk, which touches only stream-K builds);
#  2. the stream-K split rule after the backward walk: the thin-wave shapes
#     its rule was fitted on (forward walk, session 24), default against
#     whole tiles (sk0) and the split forced with the n / 2 term dropped
#     (sknd: -DTC_SK_SLOW_DIV=0, MIN_SAVED 12 kept) -- where sknd wins on
#     a shape the default does not split, the rule's n / 2 term is too
#     strict now.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 330 ctest --test-dir build -L gpu -E "stream_k" -j8 --timeout 200 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Failed|Not Run" $OUT/ctest.log | tail -10
timeout 100 python3 bench/bench_alternating.py --gemm \
  --shapes 2304x2048x8192,4352x4096x4096,2176x4096x4096,4608x4096x2048,4352x4096x1024,4352x8192x8192 \
  --rep-ms 1000 --min-steps 20 --gemm-variant sk0=env.TILEC_STREAM_K:0 \
  --gemm-variant "sknd=env.TILEC_STREAM_K:1,env.TILEC_NVRTC_FLAGS:-DTC_SK_SLOW_DIV=0" \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A10 "^## "; grep -v "edited CUDA" $OUT/ab.err | tail -3

# Call 2 (about 60 s, same machine while warm): the whole issue-14 grid
# with session 30's code (stream-K backward walk, FP8 128 x 144 for wide
# launches); the last full grid is session 20's (H100).
#   python3 bench/bench_gemm.py --dtypes bf16,f16 --fp8 --out-dir $OUT/g
