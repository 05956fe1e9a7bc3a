#!/bin/bash
# Ran on an H100 at commit f98de3e. The experiment defines it passes (TC_SK_PRELOAD,
# TC_SK_L2_KEEP, TC_SK_ALWAYS_EXTRA_WAVE / _PCT) were removed afterwards; at
# HEAD they do nothing. Results: 2026-12-07-nvidia-h100-session31-notes.md.
# Session 31, call 2 (build/ carried; about 200 s): where stream-K's split
# phase loses at 4096^3 (0.912 against 0.993 whole tiles, H100, session
# 30). globaltimer timelines (bench/timeline; instrument.py now also takes
# the stream-K build) of whole tiles (def), the split forced (sk: the
# last wave's 116 tiles over 132 blocks, some cut in three) and the split
# forced over one whole wave more (skw: TC_SK_ALWAYS_EXTRA_WAVE=1, 248
# tiles, each cut in at most two), at 4096^3 and 2304 x 2048 x 8192
# (default rule there); skwp: skw with each finisher starting from the
# earlier part (TC_SK_PRELOAD=1) instead of adding it after its k-loop.
# Then in alternation against cuBLAS. First, preload's numerics (the
# stream-K test shapes on 13 blocks, both split rules).
set -u
for fl in "-DTC_SK_PRELOAD=1" "-DTC_SK_PRELOAD=1 -DTC_SK_ALWAYS_EXTRA_WAVE=1"; do
  TILEC_CACHE_DIR=$(mktemp -d) TILEC_STREAM_K=1 TILEC_PERSISTENT_BLOCKS=13 TILEC_NVRTC_FLAGS="-DTC_SK_MIN_SAVED=4 -DTC_SK_SLOW_DIV=0 $fl" \
    timeout 60 build/tests/numerics/test_numerics_gemm --device cuda --dtype bf16 --shapes 1000x1000x1000,777x1300x1999,1000x1100x70,3000x5000x2000 > $OUT/preload-check.log 2>&1
  echo "preload numerics ($fl): rc $?"; tail -2 $OUT/preload-check.log
done
G=$PWD/examples/gemm.tile T=$OUT/tl; mkdir -p $T
build/bin/tilec $G --target=sm_90a --emit=cuda -D dtype=bf16 -o $T/def.cu
build/bin/tilec $G --target=sm_90a --emit=cuda -D dtype=bf16 --stream-k -o $T/sk.cu
python3 bench/timeline/instrument.py $T/def.cu $T/def_i.cu
python3 bench/timeline/instrument.py $T/sk.cu $T/sk_i.cu
F="-DTC_SK_MIN_SAVED=0 -DTC_SK_SLOW_DIV=0"
run() {  # shape name stream_k nvrtc-flags
  local n=$(( ${1##*x} / 64 ))
  TILEC_CUDA_OVERRIDE=$T/def.cu:$T/def_i.cu,$T/sk.cu:$T/sk_i.cu TILEC_CACHE_DIR=$(mktemp -d) TILEC_STREAM_K=$3 TILEC_NVRTC_FLAGS="$4" \
    timeout 60 python3 bench/timeline/run_gemm.py --shape $1 > $T/$1-$2.log 2> $T/$1-$2.err
  echo "=== $1 $2 (rc $?)"; grep "^L" $T/$1-$2.log | tail -2
  python3 bench/timeline/timeline.py $T/$1-$2.log $n > $T/$1-$2.txt; tail -9 $T/$1-$2.txt | cut -c1-300
}
run 4096x4096x4096 def 0 ""
run 4096x4096x4096 sk 1 "$F"
run 4096x4096x4096 skw 1 "$F -DTC_SK_ALWAYS_EXTRA_WAVE=1"
run 4096x4096x4096 skwp 1 "$F -DTC_SK_ALWAYS_EXTRA_WAVE=1 -DTC_SK_PRELOAD=1"
run 2304x2048x8192 def 0 ""
run 2304x2048x8192 sk 1 ""
run 2304x2048x8192 skp 1 "-DTC_SK_PRELOAD=1"
echo "=== alternation"
timeout 200 python3 bench/bench_alternating.py --gemm --shapes 4096x4096x4096,3840x4096x4096,2304x2048x8192 \
  --rep-ms 1000 --min-steps 20 \
  --gemm-variant "sk=env.TILEC_STREAM_K:1,env.TILEC_NVRTC_FLAGS:$F" \
  --gemm-variant "skw=env.TILEC_STREAM_K:1,env.TILEC_NVRTC_FLAGS:$F -DTC_SK_ALWAYS_EXTRA_WAVE=1" \
  --gemm-variant "skwp=env.TILEC_STREAM_K:1,env.TILEC_NVRTC_FLAGS:$F -DTC_SK_ALWAYS_EXTRA_WAVE=1 -DTC_SK_PRELOAD=1" \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A10 "^## "; grep -v "edited CUDA" $OUT/ab.err | tail -3
