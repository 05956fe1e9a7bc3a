#!/bin/bash
# Session 27 call 3 (call 2 trimmed): the 21 gpu tests call 1's time limit
# cut (stmatrix build) first, then the bf16 squares with raster panel 16 and
# FP8 with block_N 256 / stream-K off, in alternation.
set -u
V=/tmp/v; mkdir -p $V/p16
nvidia-smi --query-gpu=name --format=csv,noheader
timeout ${CT:-170} ctest --test-dir build -L gpu -R '^numerics\.gpu\.flash_attention\.bf16\.d128\.no_fastdiv$|^numerics\.gpu\.flash_attention\.bf16\.d64\.causal\.no_fastdiv$|^numerics\.gpu\.flash_attention\.f16\.d128\.causal\.no_fastdiv$|^numerics\.gpu\.flash_attention\.f16\.d256$|^numerics\.gpu\.gemm\.bf16\.held_stage3$|^numerics\.gpu\.gemm\.bf16\.persistent\.no_fastdiv$|^numerics\.gpu\.gemm\.bf16\.stream_k13$|^numerics\.gpu\.gemm\.bf16\.stream_k_auto7$|^numerics\.gpu\.gemm\.bf16\.stream_k_default13$|^numerics\.gpu\.gemm\.bf16\.stream_k_own$|^numerics\.gpu\.gemm\.f16\.held_stage5$|^python\.atomic_add\.gpu$|^python\.attention_bwd_driver\.gpu$|^python\.reduce_across_warps\.gpu$|^python\.splitk\.gpu$|^python\.stream_k_streams\.gpu$|^python\.wgmma_nsplit\.gpu$|^runtime_gpu$|^sanitizer\.memcheck\.python_atomic_add$|^torch\.cpu$|^torch\.cuda$' -j6 --output-on-failure --timeout 150 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|Failed|\*\*\*|Not Run|Passed" $OUT/ctest.log | cut -c1-100 | tail -25
sed "s/panel_size = 10/panel_size = 16/" examples/gemm.tile > $V/p16/gemm.tile
timeout 150 python3 bench/bench_alternating.py --gemm --rep-ms 2000 --min-steps 60 --gemm-variant p16=@$V/p16/gemm.tile \
  --fp8 --fp8-variant n256=block_N:256 --fp8-variant sk0=env.TILEC_STREAM_K:0 \
  --out-dir $OUT 2> $OUT/alt.err | tee $OUT/alt.out | grep -A12 "^## "
grep -v "edited CUDA" $OUT/alt.err | tail -3
