#!/bin/bash
# Session 28 call 1 (was session 27 call 2): the 21 gpu tests call 1's time limit cut (stmatrix
# build), then a longer alternation at the bf16 squares (panel variants) and
# FP8 variants (block_N 256, stream-K off).
set -u
R=$PWD; V=/tmp/v; mkdir -p $V/p16 $V/p8 $V/p12
nvidia-smi --query-gpu=name --format=csv,noheader
for p in 8 12 16; do sed "s/panel_size = 10/panel_size = $p/" examples/gemm.tile > $V/p$p/gemm.tile; done
python3 bench/bench_alternating.py --gemm --shapes 4096x4096x4096,8192x8192x8192,4096x4096x1024,3000x5000x2000 --rep-ms 2500 --min-steps 60 \
  --gemm-variant p16=@$V/p16/gemm.tile --gemm-variant p12=@$V/p12/gemm.tile --gemm-variant p8=@$V/p8/gemm.tile \
  --fp8 --fp8-variant n256=block_N:256 --fp8-variant sk0=env.TILEC_STREAM_K:0 --fp8-variant n256sk0=block_N:256,env.TILEC_STREAM_K:0 \
  --out-dir $OUT 2> $OUT/alt.err | tee $OUT/alt.out | grep -A30 "^## "
grep -v "edited CUDA" $OUT/alt.err | tail -5
timeout ${CT:-200} ctest --test-dir build -L gpu -R '^numerics\.gpu\.flash_attention\.bf16\.d128\.no_fastdiv$|^numerics\.gpu\.flash_attention\.bf16\.d64\.causal\.no_fastdiv$|^numerics\.gpu\.flash_attention\.f16\.d128\.causal\.no_fastdiv$|^numerics\.gpu\.flash_attention\.f16\.d256$|^numerics\.gpu\.gemm\.bf16\.held_stage3$|^numerics\.gpu\.gemm\.bf16\.persistent\.no_fastdiv$|^numerics\.gpu\.gemm\.bf16\.stream_k13$|^numerics\.gpu\.gemm\.bf16\.stream_k_auto7$|^numerics\.gpu\.gemm\.bf16\.stream_k_default13$|^numerics\.gpu\.gemm\.bf16\.stream_k_own$|^numerics\.gpu\.gemm\.f16\.held_stage5$|^python\.atomic_add\.gpu$|^python\.attention_bwd_driver\.gpu$|^python\.reduce_across_warps\.gpu$|^python\.splitk\.gpu$|^python\.stream_k_streams\.gpu$|^python\.wgmma_nsplit\.gpu$|^runtime_gpu$|^sanitizer\.memcheck\.python_atomic_add$|^torch\.cpu$|^torch\.cuda$' -j4 --output-on-failure --timeout 150 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|Failed|\*\*\*|Not Run" $OUT/ctest.log | tail -25
echo "--- bench_attention grid (main)"
timeout ${AT:-150} python3 bench/bench_attention.py --dims 64,128 --seqlens 2048,4096,8192,16384 --dtypes f16,bf16 --gemm-sizes= \
  --impls tilec,sdpa-flash,sdpa-cudnn,triton --no-compile-times --rounds 2 --out-dir $OUT/grid > $OUT/grid.log 2>&1
echo "grid rc $?"; ls $OUT/grid; tail -4 $OUT/grid.log
