#!/bin/bash
# Session 28 call 3: the FP8 gpu tests with column-slice promotion (fixed);
# FP8 variants in alternation (128 x 256 / 128 x 192 tiles through the
# slices, 6 stages, 2-CTA clusters, stream-K off); ncu of the 128 x 256
# FP8 kernel at 8192^3.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 100 ctest --test-dir build -L gpu -R fp8 -j4 --timeout 90 > $OUT/ctest-fp8.log 2>&1
echo "ctest fp8 rc $?"; grep -E "tests passed|Failed|\*\*\*|Not Run" $OUT/ctest-fp8.log | tail -8
python3 bench/bench_alternating.py --fp8 --rep-ms 1500 --min-steps 40 \
  --fp8-variant n256=block_N:256 --fp8-variant n256s3=block_N:256,num_stages:3 --fp8-variant n192=block_N:192 \
  --fp8-variant s6=num_stages:6 --fp8-variant cl=env.TILEC_CLUSTER_MULTICAST:1 --fp8-variant sk0=env.TILEC_STREAM_K:0 \
  --out-dir $OUT/alt 2> $OUT/alt.err | tee $OUT/alt.out | grep -A8 "^## "
grep -v "edited CUDA" $OUT/alt.err | tail -5
echo "--- ncu FP8 8192^3, block_N 256"
timeout ${NT:-100} ncu --clock-control none -k regex:"tilec_gemm_fp8" --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --metrics sm__cycles_elapsed.avg.per_second,lts__t_bytes.sum,dram__bytes_read.sum,smsp__inst_executed.sum \
  python3 bench/profile_fp8.py --shape 8192x8192x8192 --iters 2 -D block_N=256 > $OUT/ncu-fp8-n256.txt 2>&1
echo "ncu rc $?"; grep -E "^  [a-z_]+.*\(|Duration|SM Frequency|Executed Ipc|Issue Slots Busy|lts__t_bytes|dram__bytes|inst_executed.sum|No Eligible|Compute \(SM\) Throughput|L2 Cache Throughput" $OUT/ncu-fp8-n256.txt | cut -c1-120 | head -20
