#!/bin/bash
# Prepared in session 29 for the next session's first device call (build/
# carried; about 400 s). Prefer an H200: nothing of sessions 28-29 ran on one.
#  1. the gemm gpu tests on gemm.tile's new raster panel of 8 (session 29
#     switched from 10 after H100 alternations; the ctest ran before it);
#  2. panel 8 against 10 in alternation (bf16 squares and 4096^2 x 1024);
#     FP8 squares with whole tiles (H200: 0.859 at 8192^3 with the split);
#  3. ncu of FP8 128 x 128 against 128 x 144 at 8192^3: where the wider
#     tile's 5 % goes (its C leaves by column-pair stores, 108 STG in SASS
#     against 128 x 128's TMA store).
set -u
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 170 ctest --test-dir build -L gpu -R "gemm" -E "fp8" -j8 --timeout 150 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Not Run" $OUT/ctest.log | tail -8
V=/tmp/v; mkdir -p $V/p10
sed "s/panel_size = 8/panel_size = 10/" examples/gemm.tile > $V/p10/gemm.tile
timeout 120 python3 bench/bench_alternating.py --gemm --fp8 \
  --shapes 4096x4096x4096,4096x4096x1024,8192x8192x8192 --rep-ms 1500 --min-steps 25 \
  --gemm-variant p10=@$V/p10/gemm.tile --out-dir $OUT/ab 2> $OUT/ab.err | grep -A7 "^## "
grep -v "edited CUDA" $OUT/ab.err | tail -3
for n in 128 144; do
  echo "--- ncu FP8 8192^3, block_N $n"
  timeout 80 ncu --clock-control none -k regex:"tilec_gemm_fp8" --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats \
    --metrics sm__cycles_elapsed.avg.per_second,lts__t_bytes.sum,smsp__inst_executed_op_global_st.sum,lts__t_sectors_op_write.sum \
    python3 bench/profile_fp8.py --shape 8192x8192x8192 --iters 2 -D block_N=$n > $OUT/ncu-n$n.txt 2>&1
  echo "ncu rc $?"; grep -E "Duration|SM Frequency|lts__t|global_st|Compute \(SM\) Throughput|L2 Cache Throughput|No Eligible" $OUT/ncu-n$n.txt | cut -c1-120 | head -10
done
