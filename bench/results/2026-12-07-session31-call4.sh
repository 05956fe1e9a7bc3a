#!/bin/bash
# Ran on an H100 at commit 5f0bd03. The experiment defines it passes (TC_SK_PRELOAD,
# TC_SK_L2_KEEP, TC_SK_ALWAYS_EXTRA_WAVE / _PCT) were removed afterwards; at
# HEAD they do nothing. Results: 2026-12-07-nvidia-h100-session31-notes.md.
# Session 31, call 4 (build/ carried; about 160 s). Call 3: keeping the
# parts in L2 did not shorten the finishers' fix-ups (5-7 us at 2304 x
# 2048 x 8192, 5-15 us at 4096^3 with one wave more), and no finisher
# waited for its part. What scales with the phase order's cycle L (12
# there, 62 here) is tc_sk_position_of_tile's search, run by every
# consumer thread, twice per finisher. Now a modular inverse, once per
# finisher. The stream-K gpu tests, timelines, then alternation.
set -u
timeout 150 ctest --test-dir build -L gpu -R stream_k -j8 --timeout 120 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Failed" $OUT/ctest.log | tail -5
G=$PWD/examples/gemm.tile T=$OUT/tl; mkdir -p $T
build/bin/tilec $G --target=sm_90a --emit=cuda -D dtype=bf16 --stream-k -o $T/sk.cu
python3 bench/timeline/instrument.py $T/sk.cu $T/sk_i.cu
F="-DTC_SK_MIN_SAVED=0 -DTC_SK_SLOW_DIV=0 -DTC_SK_ALWAYS_EXTRA_WAVE=1"
run() {  # shape nvrtc-flags name
  TILEC_CUDA_OVERRIDE=$T/sk.cu:$T/sk_i.cu TILEC_CACHE_DIR=$(mktemp -d) TILEC_STREAM_K=1 TILEC_NVRTC_FLAGS="$2" \
    timeout 60 python3 bench/timeline/run_gemm.py --shape $1 > $T/$1-$3.log 2> $T/$1-$3.err
  echo "=== $1 $3 (rc $?)"; grep "^L" $T/$1-$3.log | tail -1
  python3 bench/timeline/timeline.py $T/$1-$3.log $(( ${1##*x} / 64 )) > $T/$1-$3.txt; tail -3 $T/$1-$3.txt | cut -c1-330
}
run 2304x2048x8192 "" sk
run 4096x4096x4096 "$F" skw
(cd $OUT && tar czf tl.tgz tl && rm -rf tl)
echo "=== alternation"
timeout 150 python3 bench/bench_alternating.py --gemm --shapes 2304x2048x8192,4352x4096x4096,2176x4096x4096,4096x4096x4096 \
  --rep-ms 1000 --min-steps 20 --gemm-variant sk0=env.TILEC_STREAM_K:0 \
  --gemm-variant "skw=env.TILEC_STREAM_K:1,env.TILEC_NVRTC_FLAGS:$F" \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A10 "^## "; grep -v "edited CUDA" $OUT/ab.err | tail -3
