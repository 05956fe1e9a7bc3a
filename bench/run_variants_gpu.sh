#!/bin/sh
# run_variants_gpu.sh STEP... - issue 13's GPU checks for the attention
# variants (gqa_attention, flash_decoding, varlen_attention), on the device
# machine with build/ carried. Logs go under $OUT (default ./variants-out);
# a short summary is printed last. Steps, in the order given:
#   tests      ctest -L gpu -L numerics for the variants (7 cases)
#   sanitizer  compute-sanitizer memcheck/racecheck/synccheck cases (9)
#   gqa | decoding | varlen   bench/bench_attention_variants.py --modes STEP
#   bwd-tests      ctest -L gpu numerics of the backward (4 cases)
#   bwd-sanitizer  compute-sanitizer cases of the backward (6)
#   bwd            bench/bench_attention_bwd.py (backward vs SDPA FLASH/CUDNN)
# Each bench step stays under ~8 minutes on an H100 (one 10-minute device
# command): e.g. `tests decoding`, then `varlen gqa`, then `sanitizer`.
OUT=${OUT:-variants-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
summary=""
for step in "$@"; do
  case $step in
    tests)
      ctest --test-dir build -L numerics -R "gpu\.(gqa|flash_decoding|varlen)" --output-on-failure \
        >"$OUT/ctest-gpu-variants.log" 2>&1
      summary="$summary
tests: $(grep -E 'tests passed|tests failed' "$OUT/ctest-gpu-variants.log" | tail -1), $(grep -c '(Skipped)' "$OUT/ctest-gpu-variants.log") skipped" ;;
    sanitizer)
      ctest --test-dir build -L sanitizer -R "gqa|decoding|varlen" --output-on-failure \
        >"$OUT/ctest-sanitizer-variants.log" 2>&1
      summary="$summary
sanitizer: $(grep -E 'tests passed|tests failed' "$OUT/ctest-sanitizer-variants.log" | tail -1), $(grep -c '(Skipped)' "$OUT/ctest-sanitizer-variants.log") skipped" ;;
    bwd-tests)
      ctest --test-dir build -L numerics -R "gpu\.attention_bwd" --output-on-failure \
        >"$OUT/ctest-gpu-bwd.log" 2>&1
      summary="$summary
bwd-tests: $(grep -E 'tests passed|tests failed' "$OUT/ctest-gpu-bwd.log" | tail -1), $(grep -c '(Skipped)' "$OUT/ctest-gpu-bwd.log") skipped" ;;
    bwd-sanitizer)
      ctest --test-dir build -L sanitizer -R "attention_bwd" --output-on-failure \
        >"$OUT/ctest-sanitizer-bwd.log" 2>&1
      summary="$summary
bwd-sanitizer: $(grep -E 'tests passed|tests failed' "$OUT/ctest-sanitizer-bwd.log" | tail -1), $(grep -c '(Skipped)' "$OUT/ctest-sanitizer-bwd.log") skipped" ;;
    bwd)
      timeout 570 python3 bench/bench_attention_bwd.py --out-dir "$OUT/bwd" >"$OUT/bench-bwd.log" 2>&1
      summary="$summary
bench bwd: exit $? (table: $OUT/bwd/*-bwd.md)" ;;
    gqa|decoding|varlen)
      timeout 570 python3 bench/bench_attention_variants.py --modes "$step" --out-dir "$OUT/$step" \
        >"$OUT/bench-$step.log" 2>&1
      summary="$summary
bench $step: exit $? (tables: $OUT/$step/*-variants.md)" ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
for step in "$@"; do
  case $step in
    gqa|decoding|varlen) cat "$OUT/$step"/*-variants.md 2>/dev/null | grep -v '^$' ;;
    bwd) cat "$OUT/bwd"/*-bwd.md 2>/dev/null | grep -v '^$' ;;
  esac
done
echo "$summary"
