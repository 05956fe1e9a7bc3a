#!/bin/sh
# probe.sh [STEP...] - device calls (build/ carried) for the questions the
# twentieth session left open (bench/results/2026-12-06-nvidia-h100-
# session20-notes.md, "Still missing"). Steps, each one device command of
# a few minutes (default: tests grid):
#
#   tests      the whole gpu suite (ctest -L gpu): after the twentieth
#              session's 16-bit pair stores 219 of 220 finished and passed
#              within the call's limit (torch.cpu was still running);
#   grid       the issue-14 grid, bf16 and f16 (bench_gemm.py) and FP8
#              (--fp8): on an H100 every row >= 0.93 and the squares
#              >= 1.00 block-timed in the twentieth session; nothing was
#              measured on an H200 since the seventeenth (its decode rows
#              then 0.85-0.89, before gemm_thin.tile);
#   squares    bench_alternating.py on the bf16 GEMM squares (4096^3 at
#              0.984-0.987 in alternation on the H100, the goal 1.0);
#   attention  bench_alternating.py over the whole flagship grid, and
#              bench_attention.py's block-timed dim 64 causal rows (the
#              block-timed misses: 2048 at 0.98 on the H100);
#   cluster    ncu of gemm.tile at 4096^3 with and without 2-block
#              clusters ($TILEC_CLUSTER_MULTICAST): L2 traffic by source
#              (the twentieth session saw L2 bytes go UP with multicast,
#              560 against 300 MB on a split-K kernel: where from?).
#
# Usage on the device machine: sh bench/probe.sh tests grid; sh
# bench/probe.sh squares attention cluster (logs under $OUT, default
# ./probe-out; tables last).
# Say which GPU (H100 or H200) with every number: gpu.txt has it.
OUT=${OUT:-probe-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
export TILEC_BUILD_DIR="$here/build" PYTHONUNBUFFERED=1
[ $# -eq 0 ] && set -- tests grid
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader >"$OUT/gpu.txt" 2>&1
echo "== $(cat "$OUT/gpu.txt")"
for step in "$@"; do
  case $step in
    tests)
      ctest --test-dir build -j8 -L gpu --timeout 300 --output-on-failure >"$OUT/ctest.log" 2>&1
      echo "== gpu tests: $(grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -1)"
      grep -E '\*\*\*Failed|Timeout' "$OUT/ctest.log"
      # not gpu-labelled, with checks only an sm_90 GPU runs (tilert_module_warnings)
      ctest --test-dir build -R runtime_compile_log -V >"$OUT/compile-log.log" 2>&1
      echo "== runtime_compile_log: $(grep -E 'tests passed|tests failed' "$OUT/compile-log.log" | tail -1)"
      grep -E '^[0-9]+: (ok|note):' "$OUT/compile-log.log" ;;
    grid)
      python3 bench/bench_gemm.py --dtypes bf16,f16 --fp8 --out-dir "$OUT/grid-gemm" >"$OUT/grid-gemm.log" 2>&1
      grep '^|' "$OUT"/grid-gemm/*-gemm.md ;;
    squares)
      python3 bench/bench_alternating.py --gemm --rep-ms 600 --out-dir "$OUT/squares" >"$OUT/squares.log" 2>&1
      grep -E '^\||Worst' "$OUT"/squares/*-alternating.md ;;
    cluster)
      m=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
      m=$m,lts__t_bytes.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum
      m=$m,lts__t_sectors_srcnode_gpc.sum,lts__t_sectors_op_read.sum,lts__t_requests_srcunit_tex.sum,dram__bytes_read.sum
      for c in 0 1; do
        TILEC_CLUSTER_MULTICAST=$c ncu --clock-control none --kernel-name regex:tilec_ --launch-skip 2 --launch-count 1 \
          --metrics "$m" python3 bench/profile_gemm.py --n 4096 --dtype bf16 >"$OUT/cluster$c.txt" 2>&1
        echo "== TILEC_CLUSTER_MULTICAST=$c"
        grep -E 'tilec_gemm|duration|hmma|lts__|dram__' "$OUT/cluster$c.txt"
      done ;;
    attention)
      python3 bench/bench_alternating.py --attention --out-dir "$OUT/alt" >"$OUT/alt.log" 2>&1
      grep -E '^\||Worst' "$OUT"/alt/*-alternating.md
      python3 bench/bench_attention.py --dims 64 --seqlens 2048,4096 --dtypes f16,bf16 --causal yes --gemm-sizes= \
        --impls tilec,sdpa-cudnn --no-compile-times --rounds 3 --out-dir "$OUT/grid" >"$OUT/grid.log" 2>&1
      grep -E '^\|' "$OUT"/grid/*.md | head -12 ;;
    *) echo "probe.sh: unknown step $step (tests, grid, squares, attention, cluster)" >&2; exit 2 ;;
  esac
done
