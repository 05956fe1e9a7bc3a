#!/bin/bash
# Prepared in session 32 for the next session's first device call (build/
# carried; about 200 s). On an H200 if one comes (say which GPU).
#  1. the first-launch probe: the runtime's prebuild now covers up to 7 other
#     shape classes (gemm.tile has 8 since the sm_count rule); never run on
#     a GPU. Class 2 (M = 128) and class 4 (192 x 192 tiles) in fresh
#     processes with empty caches, prebuild on and off.
#  2. the gpu tests of session 32's changes (balanced grids, 192 x 192 tiles,
#     stream-K, the runtime's shape classes);
#  3. issue 10 / 14's GEMM rows in alternation: the squares (bf16 4096^3 read
#     0.998-1.001 on an H100: parity, no margin), the thin-wave shapes.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 80 python3 bench/first_launch_probe.py --gemm 128x8192x8192 --reps 2 2>&1 | tail -6
timeout 80 python3 bench/first_launch_probe.py --gemm 2304x2048x8192 --reps 2 2>&1 | tail -6
timeout 200 ctest --test-dir build -L gpu -R "192|balanced|stream_k|runtime_gpu|python.splitk|held_stage" -j8 --timeout 180 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Failed" $OUT/ctest.log | tail -6
timeout 60 ctest --test-dir build -R runtime_compile_log --output-on-failure 2>&1 | tail -3
timeout 200 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16,f16 \
  --shapes 4096x4096x4096,8192x8192x8192,2304x2048x8192,2176x4096x4096,4352x4096x4096 \
  --rep-ms 1500 --min-steps 20 --gemm-variant off=env.TILEC_BALANCED_WAVES:0 \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A12 "^| row"; grep -v "edited CUDA" $OUT/ab.err | tail -3
