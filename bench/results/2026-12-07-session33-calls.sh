#!/bin/bash
# Session 33 device calls after call 1 (2026-12-07-session33-call1.sh), as run; build/ and
# .devscripts/ carried. Both asked for nvidia-h200 and were given an H100. One call per section.

# ---- call 2
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
R=$OUT/r; mkdir -p $R
timeout 60 ctest --test-dir build -R runtime_compile_log --output-on-failure > $R/compile_log.log 2>&1; echo "compile_log rc $?"; grep -E "tests passed|Skipped|Not Run" $R/compile_log.log
timeout 270 python3 bench/bench_alternating.py --attention --rep-ms 500 --min-steps 20 \
  --out-dir $R/fa 2> $R/fa.err | grep -A36 "^| row"; grep -v "edited CUDA" $R/fa.err | tail -3
timeout 90 python3 bench/bench_alternating.py --fp8 \
  --rep-ms 1500 --min-steps 20 --fp8-variant n256=block_N:256 --out-dir $R/fp8 2> $R/fp8.err | grep -A4 "^| row"; grep -v "edited CUDA" $R/fp8.err | tail -3
timeout 170 python3 bench/bench_gemm.py --dtypes bf16,f16 --fp8 --out-dir $R/grid > $R/grid.out 2> $R/grid.err; echo "grid rc $?"; grep -iE "worst|^\| " $R/grid.out | head -60
(cd $OUT && tar czf r.tgz r && rm -rf r)

# ---- call 3
nvidia-smi --query-gpu=name --format=csv,noheader; R=$OUT/r2; mkdir -p $R
timeout 300 python3 bench/bench_gemm.py --dtypes bf16,f16 --fp8 --rounds 3 --out-dir $R/grid > $R/grid.out 2> $R/grid.err; echo "grid rc $?"
timeout 150 python3 bench/bench_alternating.py --gemm --gemm-dtypes bf16,f16 --shapes 4096x4096x4096,8192x8192x8192 --rep-ms 2000 --min-steps 20 --out-dir $R/ab 2> $R/ab.err | grep -A8 "^| row"
(cd $OUT && tar czf r2.tgz r2 && rm -rf r2)
