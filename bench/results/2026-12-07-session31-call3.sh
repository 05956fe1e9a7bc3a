#!/bin/bash
# Ran on an H100 at commit 3b29d54. The experiment defines it passes (TC_SK_PRELOAD,
# TC_SK_L2_KEEP, TC_SK_ALWAYS_EXTRA_WAVE / _PCT) were removed afterwards; at
# HEAD they do nothing. Results: 2026-12-07-nvidia-h100-session31-notes.md.
# Session 31, call 3 (build/ carried; about 250 s). Call 2's timelines put
# stream-K's loss in its fix-ups: a finisher's read of an earlier part
# (128 KB) took 5-7 us, the part's store 3-4 us (H100). Hypothesis: the
# parts, written early in the split phase, are evicted from L2 by the
# operand streams before their finishers read them at its end. Test:
# TC_SK_L2_KEEP=1 (parts stored with an L2 evict_last policy, discarded
# after the read), alone (k) and with TC_SK_PRELOAD=1 (kp); numerics
# first, then timelines (logs in one tar), then alternation.
set -u
for fl in "-DTC_SK_L2_KEEP=1" "-DTC_SK_L2_KEEP=1 -DTC_SK_PRELOAD=1"; do
  TILEC_CACHE_DIR=$(mktemp -d) TILEC_STREAM_K=1 TILEC_PERSISTENT_BLOCKS=13 TILEC_NVRTC_FLAGS="-DTC_SK_MIN_SAVED=4 -DTC_SK_SLOW_DIV=0 $fl" \
    timeout 60 build/tests/numerics/test_numerics_gemm --device cuda --dtype bf16 --shapes 1000x1000x1000,777x1300x1999,1000x1100x70,3000x5000x2000 > $OUT/check13.log 2>&1
  echo "numerics 13 blocks ($fl): rc $?"; tail -1 $OUT/check13.log
  TILEC_CACHE_DIR=$(mktemp -d) TILEC_STREAM_K=1 TILEC_NVRTC_FLAGS="$fl" \
    timeout 60 build/tests/numerics/test_numerics_gemm --device cuda --dtype bf16 --shapes 2304x2048x8192,4352x4096x4096,2176x4096x1000 > $OUT/check.log 2>&1
  echo "numerics all blocks ($fl): rc $?"; tail -1 $OUT/check.log
done
G=$PWD/examples/gemm.tile T=$OUT/tl; mkdir -p $T
build/bin/tilec $G --target=sm_90a --emit=cuda -D dtype=bf16 --stream-k -o $T/sk.cu
python3 bench/timeline/instrument.py $T/sk.cu $T/sk_i.cu
F="-DTC_SK_MIN_SAVED=0 -DTC_SK_SLOW_DIV=0 -DTC_SK_ALWAYS_EXTRA_WAVE=1"
run() {  # shape name nvrtc-flags
  local n=$(( ${1##*x} / 64 ))
  TILEC_CUDA_OVERRIDE=$T/sk.cu:$T/sk_i.cu TILEC_CACHE_DIR=$(mktemp -d) TILEC_STREAM_K=1 TILEC_NVRTC_FLAGS="$2" \
    timeout 60 python3 bench/timeline/run_gemm.py --shape $1 > $T/$1-$3.log 2> $T/$1-$3.err
  echo "=== $1 $3 (rc $?)"; grep "^L" $T/$1-$3.log | tail -1
  python3 bench/timeline/timeline.py $T/$1-$3.log $n > $T/$1-$3.txt; tail -4 $T/$1-$3.txt | cut -c1-330
}
run 2304x2048x8192 "" sk
run 2304x2048x8192 "-DTC_SK_L2_KEEP=1" k
run 2304x2048x8192 "-DTC_SK_L2_KEEP=1 -DTC_SK_PRELOAD=1" kp
run 4096x4096x4096 "$F" skw
run 4096x4096x4096 "$F -DTC_SK_L2_KEEP=1" skwk
(cd $OUT && tar czf tl.tgz tl && rm -rf tl)
echo "=== alternation"
timeout 200 python3 bench/bench_alternating.py --gemm --shapes 2304x2048x8192,4352x4096x4096,2176x4096x4096,4096x4096x4096 \
  --rep-ms 1000 --min-steps 20 \
  --gemm-variant "k=env.TILEC_NVRTC_FLAGS:-DTC_SK_L2_KEEP=1" \
  --gemm-variant "kp=env.TILEC_NVRTC_FLAGS:-DTC_SK_L2_KEEP=1 -DTC_SK_PRELOAD=1" \
  --gemm-variant "skwk=env.TILEC_STREAM_K:1,env.TILEC_NVRTC_FLAGS:$F -DTC_SK_L2_KEEP=1" \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A10 "^## "; grep -v "edited CUDA" $OUT/ab.err | tail -3
