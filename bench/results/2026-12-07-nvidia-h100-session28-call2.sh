#!/bin/bash
# Session 28 call 2: the FP8 gpu tests (column-half promotion for tiles
# wider than 128); FP8 variants (6 stages, 2-CTA clusters, 128 x 192 and
# 128 x 256 tiles) and gemm.tile raster panel 8 against the defaults, in alternation;
# the flagship's alternation grid; ncu of the FP8 8192^3 kernel and
# cuBLAS's. sk0 is rerun: before this session an env variant set the
# variable only while loading, after the runtime had read it.
set -u
V=/tmp/v; mkdir -p $V/p8
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 100 ctest --test-dir build -L gpu -R fp8 -j4 --timeout 90 > $OUT/ctest-fp8.log 2>&1
echo "ctest fp8 rc $?"; grep -E "tests passed|Failed|\*\*\*|Not Run" $OUT/ctest-fp8.log | tail -8
sed "s/panel_size = 10/panel_size = 8/" examples/gemm.tile > $V/p8/gemm.tile
python3 bench/bench_alternating.py --gemm --shapes 4096x4096x4096,8192x8192x8192,4096x4096x1024,3000x5000x2000,4352x4096x4096,2304x2048x8192 \
  --rep-ms 1500 --min-steps 40 --gemm-variant p8=@$V/p8/gemm.tile \
  --fp8 --fp8-variant s6=num_stages:6 --fp8-variant n256=block_N:256 --fp8-variant n192=block_N:192 --fp8-variant cl=env.TILEC_CLUSTER_MULTICAST:1 --fp8-variant sk0=env.TILEC_STREAM_K:0 \
  --out-dir $OUT/gemm 2> $OUT/alt.err | tee $OUT/alt.out | grep -A12 "^## "
grep -v "edited CUDA" $OUT/alt.err | tail -5
echo "--- attention alternation"
timeout ${AT:-150} python3 bench/bench_alternating.py --attention --rep-ms 300 --out-dir $OUT/attn 2> $OUT/attn.err | tee $OUT/attn.out | grep -A40 "^## " | cut -c1-200
tail -3 $OUT/attn.err
echo "--- ncu FP8 8192^3 (tilec, then cuBLAS)"
timeout ${NT:-120} ncu --clock-control none -k regex:"tilec_gemm_fp8|nvjet|sm90" --launch-skip 1 --launch-count 2 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
  --metrics sm__cycles_elapsed.avg.per_second,lts__t_bytes.sum,dram__bytes_read.sum,smsp__inst_executed.sum \
  python3 bench/profile_fp8.py --shape 8192x8192x8192 --iters 2 > $OUT/ncu-fp8.txt 2>&1
echo "ncu rc $?"; grep -E "^  [a-z_]+.*\(|Duration|SM Frequency|Executed Ipc|Issue Slots Busy|lts__t_bytes|dram__bytes|inst_executed.sum|No Eligible|Stall|Compute \(SM\) Throughput|Memory Throughput" $OUT/ncu-fp8.txt | cut -c1-120 | head -60
