#!/bin/bash
# Session 28 call 1: session 27's call 2 (prepared, not run then) with the
# bf16 rows of 4096^2 x 1024 and 3000 x 5000 x 2000 added, run from the
# repo root as CT=220 AT=230 bash <this file>.
sed 's/bench_alternating.py --gemm --rep-ms/bench_alternating.py --gemm --shapes 4096x4096x4096,8192x8192x8192,4096x4096x1024,3000x5000x2000 --rep-ms/' \
  bench/results/2026-12-06-nvidia-h200-session27-call2.sh | bash
