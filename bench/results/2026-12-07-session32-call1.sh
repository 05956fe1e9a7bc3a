#!/bin/bash
# Prepared in session 31 for the next session's first device call (build/
# carried; about 150 s; either GPU, say which). BEFORE the call:
#   git cherry-pick stream-k-register-order   (its one commit)
#   cmake --build build -j16; rm -rf build/tests/fuzz/stress build/tests/fuzz/many_names
# The branch stores and adds stream-K parts in wgmma's register order
# (tc_sk_part_quad): no gathering MOVs before the part's STG.128 (call 7's
# ncu put the store's stalls there). It has not run on a GPU.
#  1. the 15 stream-K gpu tests (numerics + compute-sanitizer) on it;
#  2. timelines of the split at 2304 x 2048 x 8192 (fix-up times; session
#     31 call 4: part 3.2-4.7 us, finisher 2.9-6.8 us);
#  3. the thin-wave shapes in alternation (session 31 calls 4-5: 0.904-0.905,
#     1.003-1.006, 0.939-0.946, 1.036), plus f16 squares (grid: 0.993 /
#     0.989 block-timed, never in alternation).
# If 1 fails or 3 is not better, drop the branch and say so in the notes.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 150 ctest --test-dir build -L gpu -R stream_k -j8 --timeout 120 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Failed" $OUT/ctest.log | tail -5
G=$PWD/examples/gemm.tile T=$OUT/tl; mkdir -p $T
build/bin/tilec $G --target=sm_90a --emit=cuda -D dtype=bf16 --stream-k -o $T/sk.cu
python3 bench/timeline/instrument.py $T/sk.cu $T/sk_i.cu
TILEC_CUDA_OVERRIDE=$T/sk.cu:$T/sk_i.cu TILEC_CACHE_DIR=$(mktemp -d) TILEC_STREAM_K=1 \
  timeout 60 python3 bench/timeline/run_gemm.py --shape 2304x2048x8192 > $T/sk.log 2> $T/sk.err
python3 bench/timeline/timeline.py $T/sk.log 128 > $T/sk.txt; tail -3 $T/sk.txt | cut -c1-330
(cd $OUT && tar czf tl.tgz tl && rm -rf tl)
timeout 200 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16,f16 \
  --shapes 2304x2048x8192,4352x4096x4096,2176x4096x4096,4352x8192x8192,4096x4096x4096,8192x8192x8192 \
  --rep-ms 1000 --min-steps 20 --gemm-variant sk0=env.TILEC_STREAM_K:0 \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A16 "^## "; grep -v "edited CUDA" $OUT/ab.err | tail -3
