#!/usr/bin/env bash
# codegen_snapshot.sh TILEC OUTDIR - writes the generated CUDA (sm_80, sm_90a)
# and C of every example and test kernel, under a spread of -D settings, into
# OUTDIR (one file per case; a refused input keeps its diagnostics instead).
# Refactors of the back ends must leave this output unchanged byte for byte:
#   tools/codegen_snapshot.sh build/bin/tilec /tmp/before   # on the old commit
#   tools/codegen_snapshot.sh build/bin/tilec /tmp/after    # on the new one
#   diff -r /tmp/before /tmp/after
set -u
mkdir -p "$2"
tilec=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); out=$(cd "$2" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)

emit() { # name file [-D ...]
  local name=$1 file=$2; shift 2
  for t in cuda:sm_80 cuda:sm_90a c:cpu; do
    "$tilec" "$file" --emit=${t%%:*} --target=${t##*:} "$@" >"$out/$name.${t##*:}" 2>&1
    echo "exit $?" >>"$out/$name.${t##*:}"
  done
}

for dt in f16 bf16; do
  for dim in 32 64 96 128; do
    for causal in false true; do
      emit "fa-$dt-$dim-$causal" "$top/examples/flash_attention.tile" \
        -D dtype=$dt -D dim=$dim -D is_causal=$causal
    done
  done
  emit "fa-$dt-bound" "$top/examples/flash_attention.tile" -D dtype=$dt -D seq_len=1000 -D block_M=64 -D block_N=64
  # the builds of shape choices the cases above do not take (seq_len >= 4096)
  emit "fa-$dt-64-true-long" "$top/examples/flash_attention.tile" -D dtype=$dt -D dim=64 -D is_causal=true --shape-class=1
  emit "fa-$dt-256-true" "$top/examples/flash_attention.tile" -D dtype=$dt -D dim=256 -D is_causal=true
  emit "gemm-$dt" "$top/examples/gemm.tile" -D dtype=$dt
  emit "gemm-$dt-big" "$top/examples/gemm.tile" -D dtype=$dt -D block_N=256 -D num_stages=4
  emit "gemm-$dt-small" "$top/examples/gemm.tile" -D dtype=$dt -D block_M=32 -D block_N=32 -D block_K=16 -D M=100 -D N=70 -D K=45
  emit "gemm-thin-$dt" "$top/examples/gemm_thin.tile" -D dtype=$dt
done
emit softmax "$top/examples/softmax.tile"
emit softmax-37 "$top/examples/softmax.tile" -D N=37
emit softmax-100-bm3 "$top/examples/softmax.tile" -D N=100 -D block_M=3
for dim in 160 256; do emit "fa-f16-$dim" "$top/examples/flash_attention.tile" -D dim=$dim; done
# The backward (its dim-64 dQ^T: wgmma with the warpgroups splitting N).
for dim in 64 128; do
  for causal in false true; do
    emit "bwd-bf16-$dim-$causal" "$top/examples/flash_attention_bwd.tile" -D dtype=bf16 -D dim=$dim -D is_causal=$causal
  done
done
emit gemm_bias_gelu "$top/examples/gemm_bias_gelu.tile"
emit gemm_bias_gelu-mma "$top/examples/gemm_bias_gelu.tile" -D dtype=bf16 -D threads=128
emit rmsnorm "$top/examples/rmsnorm.tile"
# FP8 tiles and the FP8 wgmma (examples/gemm_fp8_nt.tile; sm_80 refuses them).
fp8="-D a_tile=f8e4m3 -D b_tile=f8e4m3"
emit gemm_fp8_nt-fp8 "$top/examples/gemm_fp8_nt.tile" $fp8 -D block_K=128 -D out_dtype=bf16
emit gemm_fp8_nt-fp8-k4096 "$top/examples/gemm_fp8_nt.tile" $fp8 -D block_K=128 -D K=4096
emit gemm_fp8_nt-fp8-m64 "$top/examples/gemm_fp8_nt.tile" $fp8 -D block_M=64 -D block_K=128 -D threads=128
emit gemm_fp8_nt-fp8-k192 "$top/examples/gemm_fp8_nt.tile" $fp8 -D block_M=64 -D block_K=192 -D threads=128 -D num_stages=3
emit gemm_fp8_nt-fp8-n256 "$top/examples/gemm_fp8_nt.tile" $fp8 -D block_N=256 -D block_K=128 -D num_stages=3
emit rmsnorm-100 "$top/examples/rmsnorm.tile" -D N=100 -D dtype=f16
emit softmax-100 "$top/examples/softmax.tile" -D N=100 -D block_M=4
emit intrinsics-f64 "$top/tests/numerics/intrinsics.tile" -D T=f64
# The attention variants (issue 13).
for causal in false true; do
  emit "gqa-$causal" "$top/examples/gqa_attention.tile" -D is_causal=$causal
  emit "gqa-64-$causal" "$top/examples/gqa_attention.tile" -D dim=64 -D dtype=bf16 -D is_causal=$causal
  emit "decoding-$causal" "$top/examples/flash_decoding.tile" -D is_causal=$causal
  emit "varlen-$causal" "$top/examples/varlen_attention.tile" -D is_causal=$causal
  emit "varlen-64-$causal" "$top/examples/varlen_attention.tile" -D dim=64 -D dtype=bf16 -D is_causal=$causal
done

for f in "$top"/tests/python/kernels/*.tile "$top"/tests/parser/*.tile "$top"/tests/diagnostics/*.tile \
         "$top"/tests/numerics/*.tile; do
  emit "$(basename "$(dirname "$f")")-$(basename "$f" .tile)" "$f"
done
for f in "$top"/tests/fuzz/corpus/* "$top"/tests/fuzz/regressions/*; do
  emit "fuzz-$(basename "$f")" "$f"
done
# Kernels embedded as strings in the C and Python tests (tools/embedded_kernels.py).
embedded=$(mktemp -d)
python3 "$top/tools/embedded_kernels.py" "$top/tests" "$embedded"
cd "$embedded" # relative names: the output names the file, not the temporary folder
for f in *.tile; do
  emit "embedded-${f%.tile}" "$f"
done
cd "$top"
rm -rf "$embedded"
# The golden IR dumps of tests/passes cover the passes.
