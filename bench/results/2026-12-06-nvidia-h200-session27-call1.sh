#!/bin/bash
# Session 27 call 1: branch stmatrix's build (one-barrier + stmatrix) against
# main's and one-barrier's generated code (TILEC_CUDA_OVERRIDE) and cuBLAS,
# in one alternation process; then ctest -L gpu on the stmatrix build.
set -u
R=$PWD; S=$R/.devscripts/s27; V=/tmp/v
echo "root $R"; nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p $V/main $V/one $V/p16 $V/fmain $V/fone
for x in main one; do cp examples/gemm.tile $V/$x/gemm.tile; cp examples/gemm_fp8_nt.tile $V/f$x/gemm_fp8_nt.tile; done
sed 's/panel_size = 10/panel_size = 16/' examples/gemm.tile > $V/p16/gemm.tile
grep -c "panel_size = 16" $V/p16/gemm.tile
pairs=""
for x in main one; do
  for n in 0 1 2 3; do for sk in "" --stream-k; do
    t=$n${sk:+sk}
    $S/tilec_st  $V/$x/gemm.tile -D dtype=bf16 --target=sm_90a --shape-class=$n $sk -o $V/$x/st$t.cu
    $S/tilec_$x  $V/$x/gemm.tile -D dtype=bf16 --target=sm_90a --shape-class=$n $sk -o $V/$x/ed$t.cu
    $S/tilec_st  $V/f$x/gemm_fp8_nt.tile -D out_dtype=f16 --target=sm_90a --shape-class=$n $sk -o $V/f$x/st$t.cu
    $S/tilec_$x  $V/f$x/gemm_fp8_nt.tile -D out_dtype=f16 --target=sm_90a --shape-class=$n $sk -o $V/f$x/ed$t.cu
    pairs="$pairs,$V/$x/st$t.cu:$V/$x/ed$t.cu,$V/f$x/st$t.cu:$V/f$x/ed$t.cu"
  done; done
done
mkdir -p $V/amain; cp examples/flash_attention.tile $V/amain/flash_attention.tile
for dt in f16 bf16; do for d in 64 128; do for c in true false; do
  t=$dt$d$c
  $S/tilec_st   $V/amain/flash_attention.tile -D dtype=$dt -D dim=$d -D is_causal=$c --target=sm_90a -o $V/amain/st$t.cu
  $S/tilec_main $V/amain/flash_attention.tile -D dtype=$dt -D dim=$d -D is_causal=$c --target=sm_90a -o $V/amain/ed$t.cu
  pairs="$pairs,$V/amain/st$t.cu:$V/amain/ed$t.cu"
done; done; done
export TILEC_CUDA_OVERRIDE=${pairs#,}
cmp -s $V/main/st0.cu $V/main/ed0.cu && echo "WARN main text equals st text"
python3 bench/bench_alternating.py --gemm --shapes 4096x4096x4096,8192x8192x8192,4096x4096x1024,3000x5000x2000 \
  --gemm-variant main=@$V/main/gemm.tile --gemm-variant one=@$V/one/gemm.tile --gemm-variant p16=@$V/p16/gemm.tile \
  --fp8 --fp8-variant main=@$V/fmain/gemm_fp8_nt.tile --fp8-variant one=@$V/fone/gemm_fp8_nt.tile \
  --out-dir $OUT 2> $OUT/alt.err | tee $OUT/alt.out | tail -40
echo "--- attention"
python3 bench/bench_alternating.py --attention --variant main=@$V/amain/flash_attention.tile --rep-ms 300 \
  --out-dir $OUT/attn 2> $OUT/attn.err | tee $OUT/attn.out | tail -40
echo "--- override notes:"; cat $OUT/alt.err $OUT/attn.err | grep -o "edited CUDA ([^)]*)" | sort | uniq -c
grep -hv "edited CUDA" $OUT/alt.err $OUT/attn.err | tail -8
echo "--- ctest -L gpu (stmatrix build)"
timeout ${CT:-240} ctest --test-dir build -L gpu -j4 --output-on-failure --timeout 200 > $OUT/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|Failed|\*\*\*|Not Run" $OUT/ctest.log | tail -25
