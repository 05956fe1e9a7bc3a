set -u
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 ctest --test-dir build -L gpu -R "fp8|rounds16" -j8 --timeout 120 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|\*\*\*|Failed" $OUT/ctest.log | tail -8
timeout 150 python3 bench/bench_alternating.py --fp8 --fp8-shapes 4096x4096x4096,8192x8192x8192,6144x6144x6144,1024x8192x8192,2048x8192x8192 --rep-ms 1200 --min-steps 20 --fp8-variant n128=block_N:128 --out-dir $OUT/ab 2> $OUT/ab.err | grep -A10 "^## "; tail -2 $OUT/ab.err
