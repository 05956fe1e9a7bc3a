#!/usr/bin/env bash
# target_matrix.sh TILEC LIMITS - the target matrix of issue 15: every
# example (under a spread of -D settings) and every test kernel is compiled
# for cpu (C), sm_80 and sm_90a (cubins, through NVRTC), and the test fails
# when one target refuses what another accepts, unless the refusal is a
# listed hardware limit (LIMITS: lines `TARGET<TAB>extended regex` matched
# against the first error line; '#' starts a comment). The fuzz corpus is
# checked the same way with --emit=cuda (tilec's own acceptance, no NVRTC:
# fast). Prints one line per case that differs between targets; exit 0 when
# every difference is a listed limit, 1 otherwise, 77 without NVRTC.
set -u
tilec=$1; limits=$2
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
if ! "$tilec" "$top/examples/softmax.tile" --emit=cubin --target=sm_80 -o "$work/probe.cubin" 2>"$work/probe.err"; then
  if grep -qi nvrtc "$work/probe.err"; then echo "SKIP: no NVRTC: $(head -1 "$work/probe.err")"; exit 77; fi
fi

# One case: NAME GPUEMIT FILE [-D ...]; writes $work/NAME.{cpu,sm_80,sm_90a}
# (exit status, then the first error line).
one() {
  local name=$1 gpu=$2 file=$3; shift 3
  "$tilec" "$file" --emit=c --target=cpu "$@" -o /dev/null 2>"$work/$name.cpu.err"
  echo $? >"$work/$name.cpu"
  for t in sm_80 sm_90a; do
    "$tilec" "$file" --emit=$gpu --target=$t "$@" -o "$work/$name.$t.out" 2>"$work/$name.$t.err"
    echo $? >"$work/$name.$t"
    rm -f "$work/$name.$t.out"
  done
  for t in cpu sm_80 sm_90a; do
    grep -m1 'error' "$work/$name.$t.err" | sed 's/^[^ ]*: error: //' >>"$work/$name.$t"
  done
}
export -f one; export tilec work

cases=$work/cases
: >"$cases"
add() { printf '%s\n' "$*" >>"$cases"; } # NAME GPUEMIT FILE [-D ...]
EX=$top/examples
for dim in 32 48 64 80 96 128 160 192 256; do
  add "fa-f16-$dim" cubin "$EX/flash_attention.tile" -D dim=$dim
  add "fa-bf16-$dim-causal" cubin "$EX/flash_attention.tile" -D dtype=bf16 -D dim=$dim -D is_causal=true
done
for dt in f16 bf16; do
  add "fa-$dt-bound" cubin "$EX/flash_attention.tile" -D dtype=$dt -D seq_len=1000 -D block_M=64 -D block_N=64
  add "gemm-$dt" cubin "$EX/gemm.tile" -D dtype=$dt
  add "gemm-$dt-wgmma" cubin "$EX/gemm.tile" -D dtype=$dt -D threads=256
  add "gemm-$dt-big" cubin "$EX/gemm.tile" -D dtype=$dt -D block_N=256 -D num_stages=4
  add "gemm-$dt-small" cubin "$EX/gemm.tile" -D dtype=$dt -D block_M=32 -D block_N=32 -D block_K=16 -D M=100 -D N=70 -D K=45
  add "gemm_bias_gelu-$dt" cubin "$EX/gemm_bias_gelu.tile" -D dtype=$dt
  add "gemm_bias_gelu-$dt-mma" cubin "$EX/gemm_bias_gelu.tile" -D dtype=$dt -D threads=128
done
for n in 256 100 37 1000 4096; do
  add "softmax-$n" cubin "$EX/softmax.tile" -D N=$n
  add "rmsnorm-$n" cubin "$EX/rmsnorm.tile" -D N=$n
done
add "rmsnorm-bf16-96" cubin "$EX/rmsnorm.tile" -D dtype=bf16 -D N=96
for bm in 1 2 3 6 12; do add "softmax-100-bm$bm" cubin "$EX/softmax.tile" -D N=100 -D block_M=$bm; done
add "softmax-threads96" cubin "$EX/softmax.tile" -D threads=96
add "softmax-threads48" cubin "$EX/softmax.tile" -D threads=48
for f in "$top"/tests/python/kernels/*.tile "$top"/tests/parser/*.tile "$top"/tests/numerics/*.tile; do
  add "$(basename "$(dirname "$f")")-$(basename "$f" .tile)" cubin "$f"
done
add "intrinsics-f64" cubin "$top/tests/numerics/intrinsics.tile" -D T=f64
if command -v python3 >/dev/null; then
  mkdir -p "$work/embedded"
  python3 "$top/tools/embedded_kernels.py" "$top/tests" "$work/embedded"
  for f in "$work"/embedded/*.tile; do add "embedded-$(basename "$f" .tile)" cubin "$f"; done
fi
for f in "$top"/tests/fuzz/corpus/* "$top"/tests/fuzz/regressions/*; do
  add "fuzz-$(basename "$f")" cuda "$f"
done

# shellcheck disable=SC2016
xargs -P "$(nproc 2>/dev/null || echo 2)" -L 1 bash -c 'one "$@"' _ <"$cases"

status=0 ncases=0 ndiff=0 nlimit=0
while read -r name _; do
  ncases=$((ncases + 1))
  c=$(head -1 "$work/$name.cpu"); a=$(head -1 "$work/$name.sm_80"); h=$(head -1 "$work/$name.sm_90a")
  [ "$c" = 0 ] && [ "$a" = 0 ] && [ "$h" = 0 ] && continue
  [ "$c" != 0 ] && [ "$a" != 0 ] && [ "$h" != 0 ] && continue # refused everywhere: an invalid input
  ndiff=$((ndiff + 1))
  for t in cpu sm_80 sm_90a; do
    [ "$(head -1 "$work/$name.$t")" = 0 ] && continue
    msg=$(sed -n 2p "$work/$name.$t")
    ok=0
    while IFS=$'\t' read -r lt re; do
      case $lt in '#'* | '') continue ;; esac
      { [ "$lt" = "$t" ] || [ "$lt" = gpu ] && [ "$t" != cpu ]; } && printf '%s\n' "$msg" | grep -Eq -- "$re" && ok=1 && break
    done <"$limits"
    if [ $ok = 1 ]; then
      nlimit=$((nlimit + 1))
      echo "limit   $name: $t refuses: $msg"
    else
      status=1
      echo "FAILED  $name: cpu=$c sm_80=$a sm_90a=$h; $t refuses, not a listed limit: ${msg:-(no error line: $(tail -3 "$work/$name.$t.err" | tr '\n' ' '))}"
    fi
  done
done <"$cases"
echo "target matrix: $ncases cases, $ndiff accepted by some targets only, $nlimit refusals that are listed limits"
exit $status
