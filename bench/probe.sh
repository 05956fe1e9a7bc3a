#!/bin/sh
# probe.sh [STEP...] - device calls (build/ carried) for the questions the
# nineteenth session left open (bench/results/2026-12-06-nvidia-h100-
# session19-notes.md, "What is still missing"). Steps, each one device
# command of a few minutes (default: tests gemm):
#
#   tests      the whole gpu suite (ctest -L gpu): the nineteenth session's
#              last compiler change (every kernel's dynamic shared array
#              declared 1024-aligned) was compiled by NVRTC, not run;
#   gemm       bench_gemm.py on the thin rows (M = 1, 16 against 4096^2 and
#              8192^2; M = 64 as a control): tilec.gemm's plan runs
#              gemm_thin.tile there, measured only on an H100 (0.97-1.13x
#              torch); the H200's decode rows were 0.85-0.89 with gemm.tile;
#   splitk     512 x 512 x 65536 (0.89x, the one GEMM row under 0.9) with
#              more split-K tiles beside the plan's 128 x 128 / 6 stages:
#              128 x 256 in 4 stages (a quarter less L2 -> SM traffic;
#              buildable since the nineteenth session), 128-deep K tiles in
#              3 stages, 7 stages, and 64 x 128 in 8;
#   squares    the bf16 GEMM squares (4096^3: 0.987 in alternation on both
#              GPUs, the goal 1.0) against gemm.tile builds the defaults do
#              not pick: 32-deep K tiles in 6 or 8 stages, 256 x 128 tiles
#              (four consumer warpgroups); all build without spills;
#   attention  bench_alternating.py over the whole flagship grid, and
#              bench_attention.py's block-timed dim 64 causal rows (the
#              block-timed misses: 2048 at 0.97 on the H100).
#
# Usage on the device machine: sh bench/probe.sh tests; sh bench/probe.sh
# gemm splitk squares attention (logs under $OUT, default ./probe-out;
# tables last).
# Say which GPU (H100 or H200) with every number: gpu.txt has it.
OUT=${OUT:-probe-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
export TILEC_BUILD_DIR="$here/build" PYTHONUNBUFFERED=1
[ $# -eq 0 ] && set -- tests gemm
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader >"$OUT/gpu.txt" 2>&1
echo "== $(cat "$OUT/gpu.txt")"
for step in "$@"; do
  case $step in
    tests)
      ctest --test-dir build -j8 -L gpu --timeout 300 --output-on-failure >"$OUT/ctest.log" 2>&1
      echo "== gpu tests: $(grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -1)"
      grep -E '\*\*\*Failed|Timeout' "$OUT/ctest.log" ;;
    gemm)
      python3 bench/bench_gemm.py --shapes 1x8192x8192,16x8192x8192,1x4096x4096,16x4096x4096,64x8192x8192 \
        --dtypes bf16,f16 --out-dir "$OUT/thin" >"$OUT/gemm-thin.log" 2>&1
      grep '^|' "$OUT"/thin/*-gemm.md ;;
    splitk)
      python3 bench/bench_gemm.py --shapes 512x512x65536 --dtypes bf16,f16 --rounds 2 \
        --splitk-tile m128-n256=block_M:128,block_N:256,threads:256,num_stages:4 \
        --splitk-tile m128-k128=block_M:128,threads:256,block_K:128,num_stages:3 \
        --splitk-tile m128-s7=block_M:128,threads:256,num_stages:7 \
        --splitk-tile m64-s8=num_stages:8 --out-dir "$OUT/splitk" >"$OUT/gemm-splitk.log" 2>&1
      grep '^|' "$OUT"/splitk/*-gemm.md
      python3 - "$OUT"/splitk/*-gemm.json <<'PY'
import json, sys
for row in json.load(open(sys.argv[1]))["rows"]:
    t = row["torch"].get("ms")
    for name, v in sorted(row["tilec"]["variants"].items()):
        print("%s %-22s %s" % (row["id"], name, "%.3fx torch" % (t / v["ms"]) if "ms" in v and t else v.get("error", "?")[:80]))
PY
      ;;
    squares)
      python3 bench/bench_alternating.py --gemm --rep-ms 600 --gemm-variant bk32s8=block_K:32,num_stages:8 \
        --gemm-variant bk32s6=block_K:32,num_stages:6 --gemm-variant m256=block_M:256,block_N:128 \
        --out-dir "$OUT/squares" >"$OUT/squares.log" 2>&1
      grep -E '^\||Worst' "$OUT"/squares/*-alternating.md ;;
    attention)
      python3 bench/bench_alternating.py --attention --out-dir "$OUT/alt" >"$OUT/alt.log" 2>&1
      grep -E '^\||Worst' "$OUT"/alt/*-alternating.md
      python3 bench/bench_attention.py --dims 64 --seqlens 2048,4096 --dtypes f16,bf16 --causal yes --gemm-sizes= \
        --impls tilec,sdpa-cudnn --no-compile-times --rounds 3 --out-dir "$OUT/grid" >"$OUT/grid.log" 2>&1
      grep -E '^\|' "$OUT"/grid/*.md | head -12 ;;
    *) echo "probe.sh: unknown step $step (tests, gemm, splitk, squares, attention)" >&2; exit 2 ;;
  esac
done
