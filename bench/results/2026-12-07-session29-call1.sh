#!/bin/bash
# Session 29 call 1: FP8 tiles of 128 x 144 (the in-flight promotion now
# reaches 144 columns) against 128 x 128, 6 stages and 2-block clusters,
# all on whole tiles (the default since session 28); the FP8 gpu tests
# with the two new 128 x 144 cases; gemm.tile (bf16) with raster panels 8 and 16.
set -u
V=/tmp/v; mkdir -p $V/p8 $V/p16
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 100 ctest --test-dir build -L gpu -R "fp8_tiles" -j6 --timeout 90 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|Failed|\*\*\*|Not Run" $OUT/ctest.log | tail -8
timeout 250 python3 bench/bench_alternating.py --fp8 --rep-ms 600 --min-steps 25 \
  --fp8-variant s6=num_stages:6 --fp8-variant n144=block_N:144 --fp8-variant n144s6=block_N:144,num_stages:6 \
  --fp8-variant cl=env.TILEC_CLUSTER_MULTICAST:1 --fp8-variant n144cl=block_N:144,env.TILEC_CLUSTER_MULTICAST:1 \
  --out-dir $OUT/fp8 2> $OUT/fp8.err | tee $OUT/fp8.out | grep -A8 "^## "
grep -v "edited CUDA" $OUT/fp8.err | tail -4
sed "s/panel_size = 10/panel_size = 8/" examples/gemm.tile > $V/p8/gemm.tile
sed "s/panel_size = 10/panel_size = 16/" examples/gemm.tile > $V/p16/gemm.tile
timeout 110 python3 bench/bench_alternating.py --gemm --shapes 4096x4096x4096,4096x4096x1024 \
  --rep-ms 700 --min-steps 25 --gemm-variant p8=@$V/p8/gemm.tile --gemm-variant p16=@$V/p16/gemm.tile \
  --out-dir $OUT/bf16 2> $OUT/bf16.err | tee $OUT/bf16.out | grep -A6 "^## "
grep -v "edited CUDA" $OUT/bf16.err | tail -3
