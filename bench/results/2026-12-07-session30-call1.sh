#!/bin/bash
# Session 30's first device call (build/ carried; about 450 s).
#  1. gpu tests of the tile widths stage-stores now stages in 16/32-column
#     panels (rows not a power of two of 16-byte chunks: gemm 144/80/112,
#     FP8 144/112/96, attention dims 96/80/48), and gemm.tile's defaults
#     on the raster panel of 8 (session 29 switched from 10 after the ctest);
#  2. FP8 squares: the default 128 x 128 against 128 x 144 and 128 x 112, whose
#     C now leaves by TMA in 16-column rounds (session 29, H100, column-pair
#     stores: 0.738/0.861 and 0.734/0.761); bf16 panel 8 against 10;
#  3. ncu of FP8 128 x 128 against 128 x 144 at 8192^3.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 200 ctest --test-dir build -L gpu -R "rounds16|n112|n144|n96|d96|d80|d48|bn176|gemm.bf16.defaults|gemm.bf16.rounds|gemm.f16.rounds|two_blocks|persistent" -j8 --timeout 150 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Not Run|Failed" $OUT/ctest.log | tail -12
V=/tmp/v; mkdir -p $V/p10
sed "s/panel_size = 8/panel_size = 10/" examples/gemm.tile > $V/p10/gemm.tile
timeout 150 python3 bench/bench_alternating.py --gemm --fp8 \
  --shapes 4096x4096x4096,4096x4096x1024,8192x8192x8192 --rep-ms 1500 --min-steps 25 \
  --gemm-variant p10=@$V/p10/gemm.tile --fp8-variant n144=block_N:144 --fp8-variant n112=block_N:112 \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A9 "^## "
grep -v "edited CUDA" $OUT/ab.err | tail -3
for n in 128 144; do
  echo "--- ncu FP8 8192^3, block_N $n"
  timeout 70 ncu --clock-control none -k regex:"tilec_gemm_fp8" --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats \
    --metrics sm__cycles_elapsed.avg.per_second,lts__t_bytes.sum,smsp__inst_executed_op_global_st.sum,lts__t_sectors_op_write.sum \
    python3 bench/profile_fp8.py --shape 8192x8192x8192 --iters 2 -D block_N=$n > $OUT/ncu-n$n.txt 2>&1
  echo "ncu rc $?"; grep -E "Duration|SM Frequency|lts__t|global_st|Compute \(SM\) Throughput|No Eligible" $OUT/ncu-n$n.txt | cut -c1-120 | head -8
done
