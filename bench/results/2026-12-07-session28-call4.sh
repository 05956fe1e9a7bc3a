#!/bin/bash
# Session 28 call 4: FP8 with whole tiles by default now (stream-k leaves
# FP8 GEMMs unmarked), against 128 x 256 tiles and a raster panel of 8;
# gemm.tile with a raster panel of 8 against 10 (bf16); the FP8, stream-K
# gpu tests on this code.
set -u
V=/tmp/v; mkdir -p $V/p8 $V/fp8p8
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
sed "s/panel_size = 10/panel_size = 8/" examples/gemm.tile > $V/p8/gemm.tile
sed "s/panel_size = 10/panel_size = 8/" examples/gemm_fp8_nt.tile > $V/fp8p8/gemm_fp8_nt.tile
grep -c "panel_size = 8" $V/p8/gemm.tile $V/fp8p8/gemm_fp8_nt.tile
python3 bench/bench_alternating.py --gemm --shapes 4096x4096x4096,8192x8192x8192,4096x4096x1024,3000x5000x2000 \
  --rep-ms 800 --min-steps 25 --gemm-variant p8=@$V/p8/gemm.tile \
  --fp8 --fp8-variant n256=block_N:256 --fp8-variant p8=@$V/fp8p8/gemm_fp8_nt.tile --fp8-variant sk1=env.TILEC_STREAM_K:1 \
  --out-dir $OUT/alt 2> $OUT/alt.err | tee $OUT/alt.out | grep -A10 "^## "
grep -v "edited CUDA" $OUT/alt.err | tail -5
timeout ${CT:-200} ctest --test-dir build -L gpu -R "fp8|stream_k" -j4 --timeout 150 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|Failed|\*\*\*|Not Run" $OUT/ctest.log | tail -12
