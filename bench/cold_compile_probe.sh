#!/usr/bin/env bash
# cold_compile_probe.sh - is a "cold" NVRTC compile really cold on this machine?
# Compiles the flagship to a cubin with `tilec --emit=cubin` in fresh processes,
# each time under a kernel name never used before (so no cache keyed on the
# source or the IR can answer), with NVRTC's own phase timer on, and the same
# CUDA text through nvcc for comparison. Prints one table.
#   [REPS=3] bash bench/cold_compile_probe.sh [BUILD_DIR] [OUT_DIR]
set -u
BUILD=${1:-build}; OUT=${2:-/tmp/cold_probe}; REPS=${REPS:-3}; mkdir -p "$OUT"
TILEC=$BUILD/bin/tilec
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc)"
echo "nvrtc candidates: $(ldconfig -p 2>/dev/null | grep -o '/[^ ]*libnvrtc.so[^ ]*' | tr '\n' ' ')"
echo "CUDA_CACHE_PATH=${CUDA_CACHE_PATH:-unset} CUDA_CACHE_DISABLE=${CUDA_CACHE_DISABLE:-unset}"
printf '%-28s %8s %8s %8s %8s\n' case wall_ms fe_ms nvvm_ms ptxas_ms
for variant in "dtype=bf16" "dtype=bf16 dim=64 is_causal=true"; do
  for rep in $(seq "$REPS"); do
    salt=$(date +%s%N | tail -c 9)
    src=$OUT/fa_$salt.tile
    sed "s/^kernel flash_attention(/kernel fa_$salt(/" examples/flash_attention.tile > "$src"
    defs=(); for d in $variant; do defs+=(-D "$d"); done
    t0=$(date +%s%N)
    TILEC_NVRTC_FLAGS="--time=$OUT/time_$salt.csv" "$TILEC" "$src" "${defs[@]}" --target=sm_90a \
        --emit=cubin -o "$OUT/fa_$salt.cubin" 2> "$OUT/err_$salt.txt" || { echo "FAILED $(cat $OUT/err_$salt.txt)"; continue; }
    t1=$(date +%s%N)
    ph=$(awk -F, 'NR>1 {gsub(/ /,"",$0); v[$2]+=$3} END {printf "%s %s %s", v["CUDAC++Frontend"]+0, v["NVVMOptimizer"]+0, v["PTXTranslation"]+0}' "$OUT/time_$salt.csv" 2>/dev/null)
    printf '%-28s %8d %8s %8s %8s\n' "tilec ${variant// /,} #$rep" $(( (t1-t0)/1000000 )) $ph
  done
done
if command -v nvcc >/dev/null; then
  "$TILEC" examples/flash_attention.tile -D dtype=bf16 --target=sm_90a --emit=cuda -o "$OUT/fa.cu"
  for rep in 1 2; do
    t0=$(date +%s%N)
    nvcc -cubin -arch=sm_90a -std=c++17 -lineinfo -I runtime/device "$OUT/fa.cu" -o "$OUT/fa_nvcc.cubin" --time "$OUT/nvcc_time_$rep.csv" >/dev/null 2>&1
    t1=$(date +%s%N)
    printf '%-28s %8d   (%s)\n' "nvcc d128 #$rep" $(( (t1-t0)/1000000 )) "$(awk -F, 'NR>1 {gsub(/ /,"",$2); printf "%s=%.0f ", $2, $7}' $OUT/nvcc_time_$rep.csv)"
  done
fi
head -5 "$OUT"/time_*.csv | head -12
