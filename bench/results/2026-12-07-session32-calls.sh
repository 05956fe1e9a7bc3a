#!/bin/bash
# Session 32's device calls as run (build/ and .devscripts/ carried; H100 each time,
# call 8 asked for an H200 and got an H100). One call per section; not meant to
# run as a whole. Call 1 compared against -DTC_SK_PART_LOGICAL_ORDER, a define
# that existed only in that call's working tree (the logical part order).

# ---- call 1
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
timeout 260 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16,f16 \
  --shapes 2304x2048x8192,4352x4096x4096,2176x4096x4096,4352x8192x8192,4096x4096x4096,8192x8192x8192 \
  --rep-ms 1000 --min-steps 20 --gemm-variant logical=env.TILEC_NVRTC_FLAGS:-DTC_SK_PART_LOGICAL_ORDER \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A20 "^## "; grep -v "edited CUDA" $OUT/ab.err | tail -3

# ---- call 2
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 300 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16,f16 \
  --shapes 4096x4096x4096,8192x8192x8192 \
  --rep-ms 1500 --min-steps 20 --gemm-variant p128=env.TILEC_PERSISTENT_BLOCKS:128 \
  --gemm-variant cl=env.TILEC_CLUSTER_MULTICAST:1 \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A10 "^| row"; grep -v "edited CUDA" $OUT/ab.err | tail -3
timeout 200 python3 bench/bench_alternating.py --fp8 \
  --rep-ms 1500 --min-steps 20 --fp8-variant p128=env.TILEC_PERSISTENT_BLOCKS:128 \
  --out-dir $OUT/fp8 2> $OUT/fp8.err | grep -A6 "^| row"; grep -v "edited CUDA" $OUT/fp8.err | tail -3

# ---- call 3
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 240 ctest --test-dir build -L gpu -R "gemm|persistent|flash" -j8 --timeout 200 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Failed" $OUT/ctest.log | tail -8
timeout 150 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16,f16 \
  --shapes 4096x4096x4096,8192x8192x8192,8192x1024x8192,6144x6144x6144 \
  --rep-ms 1500 --min-steps 20 --gemm-variant off=env.TILEC_BALANCED_WAVES:0 \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A10 "^| row"; grep -v "edited CUDA" $OUT/ab.err | tail -3
timeout 80 python3 bench/bench_alternating.py --fp8 \
  --rep-ms 1500 --min-steps 20 --fp8-variant off=env.TILEC_BALANCED_WAVES:0 \
  --out-dir $OUT/fp8 2> $OUT/fp8.err | grep -A4 "^| row"; grep -v "edited CUDA" $OUT/fp8.err | tail -3
timeout 200 python3 bench/bench_alternating.py --attention --causal no --dims 64,128 \
  --rep-ms 600 --min-steps 20 --variant off=env.TILEC_BALANCED_WAVES:0 \
  --out-dir $OUT/fa 2> $OUT/fa.err | grep -A20 "^| row"; grep -v "edited CUDA" $OUT/fa.err | tail -3

# ---- call 4
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 300 python3 bench/bench_alternating.py --attention --causal no --dims 64,128 \
  --rep-ms 600 --min-steps 20 --variant off=env.TILEC_BALANCED_WAVES:0 \
  --out-dir $OUT/fa 2> $OUT/fa.err | grep -A20 "^| row"; grep -v "edited CUDA" $OUT/fa.err | tail -3
timeout 150 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16 \
  --shapes 4096x4096x4096,8192x8192x8192,4096x4096x1024,3000x5000x2000 \
  --rep-ms 1500 --min-steps 20 --gemm-variant off=env.TILEC_BALANCED_WAVES:0 \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A10 "^| row"; grep -v "edited CUDA" $OUT/ab.err | tail -3

# ---- call 5
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
for r in 1 2; do
timeout 150 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16 \
  --shapes 4096x4096x1024,4096x4096x2048,4096x4096x4096,8192x4096x1024 \
  --rep-ms 2000 --min-steps 20 --gemm-variant off=env.TILEC_BALANCED_WAVES:0 \
  --out-dir $OUT/ab$r 2> $OUT/ab$r.err | grep -A7 "^| row"; grep -v "edited CUDA" $OUT/ab$r.err | tail -3
timeout 200 python3 bench/bench_alternating.py --attention --causal no --dims 128 --seqlens 2048,16384 --dtypes bf16,f16 \
  --rep-ms 1200 --min-steps 20 --variant off=env.TILEC_BALANCED_WAVES:0 \
  --out-dir $OUT/fa$r 2> $OUT/fa$r.err | grep -A6 "^| row"; grep -v "edited CUDA" $OUT/fa$r.err | tail -3
done

# ---- call 6
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
for s in 4096x4096x4096 4096x4096x1024 4096x4096x2048; do echo "## $s"
timeout 100 python3 bench/gemm_energy.py --shape $s --env-variant off=TILEC_BALANCED_WAVES:0 --secs 1.0 --rounds 4 2>&1 | tail -6
done

# ---- call 7
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 200 ctest --test-dir build -L gpu -R "gemm|stream_k|fp8|runtime" -j8 --timeout 180 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Failed" $OUT/ctest.log | tail -8
timeout 150 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16,f16 \
  --shapes 4096x4096x4096,8192x8192x8192,4096x4096x2048,4096x4096x1024 \
  --rep-ms 1500 --min-steps 20 --gemm-variant off=env.TILEC_BALANCED_WAVES:0 \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A10 "^| row"; grep -v "edited CUDA" $OUT/ab.err | tail -3
timeout 80 python3 bench/bench_alternating.py --fp8 --fp8-shapes 4096x4096x4096,8192x8192x8192,4096x4096x2048 \
  --rep-ms 1500 --min-steps 20 --fp8-variant off=env.TILEC_BALANCED_WAVES:0 \
  --out-dir $OUT/ab 2> $OUT/fp8.err | grep -A5 "^| row"; grep -v "edited CUDA" $OUT/fp8.err | tail -3

# ---- call 8
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
R=$OUT/r; mkdir -p $R
timeout 200 ctest --test-dir build -L gpu -R "gemm|stream_k|fp8" -j8 --timeout 180 > $R/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Failed" $R/ctest.log | tail -6
timeout 150 python3 bench/bench_gemm.py --dtypes bf16,f16 --fp8 --out-dir $R/grid > $R/grid.out 2> $R/grid.err; echo "grid rc $?"; grep -i "worst" $R/grid.out | head -5
timeout 150 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16,f16 \
  --shapes 4096x4096x4096,8192x8192x8192,4096x4096x2048,4352x4096x4096,2304x2048x8192 \
  --rep-ms 1500 --min-steps 20 --gemm-variant off=env.TILEC_BALANCED_WAVES:0 \
  --out-dir $R/ab 2> $R/ab.err | grep -A12 "^| row"; grep -v "edited CUDA" $R/ab.err | tail -3
timeout 80 python3 bench/bench_alternating.py --fp8 \
  --rep-ms 1500 --min-steps 20 --fp8-variant off=env.TILEC_BALANCED_WAVES:0 \
  --out-dir $R/fp8 2> $R/fp8.err | grep -A4 "^| row"; grep -v "edited CUDA" $R/fp8.err | tail -3
timeout 250 python3 bench/bench_alternating.py --attention --rep-ms 500 --min-steps 20 \
  --out-dir $R/fa 2> $R/fa.err | grep -A36 "^| row"; grep -v "edited CUDA" $R/fa.err | tail -3
(cd $OUT && tar czf r.tgz r && rm -rf r); tar tzf $OUT/r.tgz | head -3

# ---- call 9 (.devscripts/gemm_p16.tile, gemm_p4.tile: gemm.tile with use_swizzle(panel_size = 16 / 4))
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second
export TILEC_BUILD_DIR=$PWD/build
timeout 120 ncu --clock-control none --metrics $M -k regex:tilec_gemm --launch-skip 3 --launch-count 1 \
  python3 bench/profile_gemm.py --n 4096 --dtype bf16 --iters 5 > $OUT/ncu_bal.log 2>&1; echo "ncu rc $?"
TILEC_BALANCED_WAVES=0 timeout 120 ncu --clock-control none --metrics $M -k regex:tilec_gemm --launch-skip 3 --launch-count 1 \
  python3 bench/profile_gemm.py --n 4096 --dtype bf16 --iters 5 > $OUT/ncu_off.log 2>&1; echo "ncu rc $?"
timeout 120 ncu --clock-control none --metrics $M -k regex:"nvjet|gemm|sm90" --launch-skip 3 --launch-count 1 \
  python3 -c "
import torch
a=torch.randn(4096,4096,device='cuda',dtype=torch.bfloat16); b=torch.randn(4096,4096,device='cuda',dtype=torch.bfloat16)
for _ in range(6): c=a@b
torch.cuda.synchronize()" > $OUT/ncu_cublas.log 2>&1; echo "ncu rc $?"
for f in bal off cublas; do echo "== $f"; grep -E "^\s+(gpu__|dram__|lts__|sm__|smsp__)|tilec_gemm|nvjet" $OUT/ncu_$f.log | sed 's/  */ /g' | head -12; done
timeout 150 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16,f16 \
  --shapes 4096x4096x4096,8192x8192x8192,4096x4096x2048 \
  --rep-ms 1500 --min-steps 20 --gemm-variant p16=@$PWD/.devscripts/gemm_p16.tile --gemm-variant p4=@$PWD/.devscripts/gemm_p4.tile \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A8 "^| row"; grep -v "edited CUDA" $OUT/ab.err | tail -3

# ---- call 10 (the hand edit: bench/results/2026-12-07-session32-epilogue-overlap/, mk_overlap.py applies overlap_template.cu to the generated gemm.cu)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
D=$PWD/.devscripts
build/bin/tilec $PWD/examples/gemm.tile --target=sm_90a --emit=cuda -D dtype=bf16 -o $D/g_orig.cu
python3 bench/results/2026-12-07-session32-epilogue-overlap/mk_overlap.py $D/g_orig.cu bench/results/2026-12-07-session32-epilogue-overlap/overlap_template.cu $D/g_overlap.cu && echo made
timeout 200 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16 \
  --shapes 4096x4096x4096,8192x8192x8192,4096x4096x2048,4000x4096x4096,4096x4096x192,4096x4096x64,6144x6144x6144 \
  --rep-ms 1500 --min-steps 20 --gemm-variant ov=env.TILEC_CUDA_OVERRIDE:$D/g_orig.cu:$D/g_overlap.cu \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A10 "^| row"; sort $OUT/ab.err | uniq -c | tail -5

# ---- call 11
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 280 ctest --test-dir build -L gpu -R "balanced|stream_k_auto7|held_stage|gemm_fp8.gpu.nk.e4m3.fp8_tiles$|runtime_gpu|python" -j8 --timeout 250 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Failed|Passed" $OUT/ctest.log | tail -30

# ---- call 12
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 90 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__cluster_dim_x,launch__block_size,dram__bytes_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
  --launch-skip 3 --launch-count 2 python3 -c "
import torch
a=torch.randn(2304,8192,device='cuda',dtype=torch.bfloat16); b=torch.randn(8192,2048,device='cuda',dtype=torch.bfloat16)
for _ in range(6): c=a@b
torch.cuda.synchronize()" > $OUT/ncu_thin.log 2>&1; echo "ncu rc $?"
grep -E "^\s+[a-z_]+__|^\s+launch__|nvjet|sm90|gemm|Kernel|\(" $OUT/ncu_thin.log | grep -v "==PROF==" | sed 's/  */ /g' | head -24
timeout 400 python3 bench/bench_gemm.py --dtypes bf16,f16 --fp8 --rounds 3 --out-dir $OUT/grid > $OUT/grid.out 2> $OUT/grid.err; echo "grid rc $?"
grep -E "^\| (bf16|f16|fp8)" $OUT/grid/*.md | awk -F'|' '{print $2,$3,$8,$10}' | head -40

# ---- call 13
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16,f16 \
  --shapes 2304x2048x8192,2176x4096x4096,4352x4096x4096,4096x4096x4096 \
  --rep-ms 1200 --min-steps 20 --gemm-variant b192=block_M:192,block_N:192 --gemm-variant b192s4=block_M:192,block_N:192,num_stages:4 \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A10 "^| row"; grep -v "edited CUDA" $OUT/ab.err | tail -3

# ---- call 14
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 ctest --test-dir build -L gpu -R "192|stream_k_auto7|stream_k_default13|gpu.gemm.bf16$|gpu.gemm.f16$|python.splitk|held_stage3" -j8 --timeout 180 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Failed" $OUT/ctest.log | tail -8
timeout 150 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16,f16 \
  --shapes 2304x2048x8192,2176x4096x4096,4352x4096x4096,4096x4096x4096 \
  --rep-ms 1200 --min-steps 20 --gemm-variant t256=block_M:128,block_N:256 \
  --out-dir $OUT/ab 2> $OUT/ab.err | grep -A10 "^| row"; grep -v "edited CUDA" $OUT/ab.err | tail -3
