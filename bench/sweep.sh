#!/usr/bin/env bash
# Block-shape sweep for the flagship and the GEMM on the device machine, in
# one call (see bench/README.md for carrying the build):
#   TILEC_BUILD_DIR=$PWD/build bash bench/sweep.sh
# Prints one line per configuration; the attention rows come from
# bench_attention.py with --tilec-define, the GEMM rows from build/bin/gemm.
set -u
B=${TILEC_BUILD_DIR:-$PWD/build}
attn() {
  echo "=== attention $*"
  python3 bench/bench_attention.py --impls tilec --no-compile-times --gemm-sizes '' --dims 64,128 \
    --seqlens 4096 --dtypes f16 --causal no "$@" 2>&1 | grep -E "^\s+f16"
}
attn --tilec-define block_M=128 --tilec-define block_N=32
attn --tilec-define block_M=128 --tilec-define block_N=64
attn --tilec-define block_M=128 --tilec-define block_N=64 --tilec-define num_stages=1
attn --tilec-define block_M=128 --tilec-define block_N=32 --tilec-define num_stages=3
for cfg in "128 128 32" "128 128 64" "128 256 32" "256 128 32"; do
  set -- $cfg
  echo "=== gemm 4096^3 f16 block $1x$2x$3"
  "$B/bin/gemm" --device cuda --m 4096 --n 4096 --k 4096 --block-m "$1" --block-n "$2" --block-k "$3" \
    --iters 20 2>&1 | grep -E "time|error|FAIL|OK"
done
