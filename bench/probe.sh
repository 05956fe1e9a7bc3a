#!/bin/sh
# probe.sh [STEP...] - device calls (build/ carried) that answer the
# eighteenth session's open questions, whose code was written without a GPU:
# issue 14's thin products (M <= 16) and issue 10's tile boundary. Steps
# (default: all, which may not fit one 10-minute command; `tests` alone and
# `gemm attention fastdiv` each should):
#
#   1. correctness: the gpu tests of examples/gemm_thin.tile (numerics at
#      ragged sizes, memcheck / racecheck / synccheck) and tilec.gemm's
#      plan on CUDA tensors (python.splitk.gpu: the thin rule's split-K);
#   2. speed: bench_gemm.py on the thin rows (bf16 and f16; M = 1, 16 against
#      8192 and 4096, and M = 64 as the control the thin rule leaves alone):
#      the plan (split-K on every block slot) against gemm.tile and the
#      thin/S columns (gemm_thin.tile), all against torch.matmul;
#   3. the same rows with every tensor map's L2 promotion at 256 bytes
#      ($TILEC_TMA_L2_PROMOTION=256) in a second process: do wider DRAM
#      fetches help the 128-byte box rows of B?
#   4. the flagship's one miss (dim 64 causal 2048) with the default and the
#      256-byte promotion, timed in alternation with cuDNN, one process each;
#   5. tile indices through multipliers ($TILEC_FAST_DIVISION=1) against
#      the default on the persistent dim 64 causal build (seq 4096: the
#      192-row tiles, 0.987 in the seventeenth session's alternation) and
#      dim 128 causal 2048, in alternation with cuDNN, one process each
#      (its gpu tests are in step 1).
#
# Steps: tests (1), gemm (2 and 3), attention (4), fastdiv (5). Usage on the
# device machine: sh bench/probe.sh tests; sh bench/probe.sh gemm attention
# fastdiv (logs under $OUT, default ./probe-out; tables last).
OUT=${OUT:-probe-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
export TILEC_BUILD_DIR="$here/build" PYTHONUNBUFFERED=1
[ $# -eq 0 ] && set -- tests gemm attention fastdiv
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader >"$OUT/gpu.txt" 2>&1
echo "== $(cat "$OUT/gpu.txt")"
shapes=1x8192x8192,16x8192x8192,1x4096x4096,16x4096x4096,64x8192x8192
for step in "$@"; do
  case $step in
    tests)
      ctest --test-dir build -j6 -L gpu -R "gemm_thin|splitk|fastdiv" --output-on-failure >"$OUT/ctest.log" 2>&1
      echo "== gpu tests: $(grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -1)"
      grep -E '\*\*\*Failed|Timeout' "$OUT/ctest.log" ;;
    gemm)
      python3 bench/bench_gemm.py --shapes $shapes --dtypes bf16,f16 --out-dir "$OUT/p128" >"$OUT/gemm-p128.log" 2>&1
      TILEC_TMA_L2_PROMOTION=256 python3 bench/bench_gemm.py --shapes $shapes --dtypes bf16 \
        --out-dir "$OUT/p256" >"$OUT/gemm-p256.log" 2>&1
      for f in "$OUT"/p128/*-gemm.md "$OUT"/p256/*-gemm.md; do
        echo "== $f"
        grep '^|' "$f"
      done ;;
    attention)
      for p in 128 256; do
        TILEC_TMA_L2_PROMOTION=$p python3 bench/bench_alternating.py --attention --dims 64 --seqlens 2048 \
          --causal yes --rep-ms 800 --out-dir "$OUT/att-p$p" >"$OUT/att-p$p.log" 2>&1
        echo "== attention, L2 promotion $p"
        grep -E '^\||Worst' "$OUT"/att-p$p/*-alternating.md
      done ;;
    fastdiv)
      for fd in 0 1; do
        TILEC_FAST_DIVISION=$fd python3 bench/bench_alternating.py --attention --dims 64,128 --seqlens 2048,4096 \
          --causal yes --dtypes bf16 --rep-ms 800 --out-dir "$OUT/fd$fd" >"$OUT/fd$fd.log" 2>&1
        echo "== attention, TILEC_FAST_DIVISION=$fd"
        grep -E '^\||Worst' "$OUT"/fd$fd/*-alternating.md
      done ;;
    *) echo "probe.sh: unknown step $step (tests, gemm, attention, fastdiv)" >&2; exit 2 ;;
  esac
done
