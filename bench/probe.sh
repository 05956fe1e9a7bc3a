#!/bin/sh
# probe.sh [STEP...] - device calls (build/ carried) for the questions the
# twenty-first session left open (bench/results/2026-12-06-nvidia-h100-
# session21-notes.md). Steps, each one device command of a few minutes
# (default: tests grid):
#
#   tests      the whole gpu suite (ctest -L gpu; 227/227 on an H100 at
#              81413a0, the twenty-first session's last compiler change;
#              2ecf1e3's merged wgmma_gpu test kernel has not run on a GPU)
#              and runtime_compile_log's sm_90-only checks;
#   grid       the issue-14 grid, bf16 and f16 (bench_gemm.py) and FP8
#              (--fp8): on an H100 every row >= 0.93 and the squares
#              >= 1.00 block-timed (twentieth session); nothing was
#              measured on an H200 since the seventeenth;
#   squares    bench_alternating.py on the bf16 GEMM squares (4096^3 at
#              0.985-0.990 in alternation on the H100, the goal 1.0);
#   waves      the squares' neighbours in M (3840 .. 4352 x 4096 x 4096):
#              tilec's time is flat within a count of 128 x 256 waves on
#              132 SMs, cuBLAS's follows the work (4352: 0.90); the check
#              for stream-K;
#   attention  bench_alternating.py over the whole flagship grid, and
#              bench_attention.py's block-timed dim 64 causal rows (2048:
#              1.00 / 1.00 over 5 rounds on the H100, 0.98 before);
#   streamk    the stream-K gpu tests with the gemm suite, and ten bounded
#              racecheck runs of gqa_attention causal (hung once before
#              the stagger barrier fix, session 22);
#   skwaves    stream-K ($TILEC_STREAM_K=1) against the default build and cuBLAS on
#              3840 .. 4352 x 4096 x 4096 and 8192^3 (alternating);
#   skauto     $TILEC_STREAM_K=auto against cuBLAS at 4352 x 4096 x 4096
#              (a thin last wave: the stream-K build; 0.942 with stream-K,
#              0.904 without, session 23) and 4096^3 (the default build);
#   skl2       ncu of gemm.tile 4096^3 with and without stream-K: L2
#              requests and lookups, to test session 23's reading that the
#              lockstepped whole-tile waves have their k-slice requests
#              served together (stream-K: 65 % more L2 read sectors);
#   skdefault  stream-K by default (session 24): the stream-K gpu tests
#              (stream_k_auto7 reworked for the host's choice, not yet run),
#              FP8 8192^3 with TILEC_STREAM_K=0 and unset (a last wave of 4:
#              now the stream-K build, unmeasured), and 4352 x 4096 x 1024 /
#              4096 in alternation (the first stays on the default build now);
#   kblock     gemm.tile's squares with 32-wide k-blocks (the same 192 KB ring
#              in 8 stages: 50 % more bytes in flight while the consumers hold
#              two stages; 6 and 7 stages, whose smaller ring leaves C's
#              staging more slots) against the default, alternating;
#   timeline   a globaltimer timeline of the default 4096^3 and 8192^3 bf16
#              kernels (bench/timeline/README.md; session 25: epilogue
#              1.4-1.9 us a tile, 2.5 us before the first stage);
#   energy     gemm.tile against cuBLAS back to back at 4096^3: time and
#              energy per GEMM, SM clock and power (bench/gemm_energy.py;
#              session 25: level in cycles, cuBLAS 2 % faster clocks);
#   cluster    ncu of gemm.tile at 4096^3 with and without 2-block
#              clusters ($TILEC_CLUSTER_MULTICAST), and of cuBLAS: L2 and
#              DRAM traffic (multicast raised L2 read sectors 25 %; cuBLAS
#              reads 150 MB from DRAM against our 187).
#
# Usage on the device machine: sh bench/probe.sh tests grid; sh
# bench/probe.sh squares waves attention cluster (logs under $OUT, default
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
    waves)
      python3 bench/bench_alternating.py --gemm --rep-ms 600 --out-dir "$OUT/waves" \
        --shapes 3840x4096x4096,3968x4096x4096,4096x4096x4096,4224x4096x4096,4352x4096x4096 >"$OUT/waves.log" 2>&1
      grep -E '^\||Worst' "$OUT"/waves/*-alternating.md ;;
    cluster)
      m=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
      m=$m,lts__t_bytes.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum
      m=$m,lts__t_sectors_srcnode_gpc.sum,lts__t_sectors_op_read.sum,lts__t_requests_srcunit_tex.sum,dram__bytes_read.sum
      for c in 0 1; do
        TILEC_CLUSTER_MULTICAST=$c ncu --clock-control none --kernel-name regex:tilec_ --launch-skip 2 --launch-count 1 \
          --metrics "$m" python3 bench/profile_gemm.py --n 4096 --dtype bf16 >"$OUT/cluster$c.txt" 2>&1
        echo "== TILEC_CLUSTER_MULTICAST=$c"
        grep -E 'tilec_gemm|duration|hmma|lts__|dram__' "$OUT/cluster$c.txt"
      done
      printf '%s\n' 'import torch' \
        "a = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16); c = torch.empty_like(a)" \
        'for _ in range(5): torch.matmul(a, a, out=c)' 'torch.cuda.synchronize()' >"$OUT/cublas_4096.py"
      ncu --clock-control none --launch-skip 2 --launch-count 1 --metrics "$m" python3 "$OUT/cublas_4096.py" \
        >"$OUT/cublas.txt" 2>&1
      echo "== cuBLAS"
      grep -E 'nvjet|sm90|duration|hmma|lts__|dram__' "$OUT/cublas.txt" ;;
    attention)
      python3 bench/bench_alternating.py --attention --out-dir "$OUT/alt" >"$OUT/alt.log" 2>&1
      grep -E '^\||Worst' "$OUT"/alt/*-alternating.md
      python3 bench/bench_attention.py --dims 64 --seqlens 2048,4096 --dtypes f16,bf16 --causal yes --gemm-sizes= \
        --impls tilec,sdpa-cudnn --no-compile-times --rounds 5 --out-dir "$OUT/grid" >"$OUT/grid.log" 2>&1
      grep -E '^\|' "$OUT"/grid/*.md | head -12 ;;
    streamk)
      # the stream-K gpu tests (numerics at capped grids, the sanitizers) and
      # the gemm suite around them; then racecheck of gqa_attention causal,
      # which hung once (session 22: the stagger's end link shared its
      # barrier with the start's) -- ten runs, each bounded
      ctest --test-dir build -j8 -L gpu -R 'gemm|stream_k' --timeout 300 --output-on-failure >"$OUT/streamk.log" 2>&1
      echo "== gemm / stream-K gpu tests: $(grep -E 'tests passed|tests failed' "$OUT/streamk.log" | tail -1)"
      grep -E '\*\*\*Failed|Timeout' "$OUT/streamk.log"
      pass=0; hang=0
      for i in 1 2 3 4 5 6 7 8 9 10; do
        if timeout 60 ctest --test-dir build -R 'sanitizer.racecheck.gqa_attention_causal$' >"$OUT/race$i.log" 2>&1; then
          pass=$((pass + 1)); else hang=$((hang + 1)); fi
      done
      echo "== racecheck gqa_attention_causal x10: $pass passed, $hang failed or hung" ;;
    skwaves)
      # stream-K (env.TILEC_STREAM_K:1, off by default) against the default
      # build, cuBLAS beside both, on the 4096^3 neighbours and 8192^3
      # (session 22, H100: slower at every split shape)
      python3 bench/bench_alternating.py --gemm --rep-ms 600 --out-dir "$OUT/skwaves" --gemm-variant sk=env.TILEC_STREAM_K:1 \
        --shapes 3840x4096x4096,4096x4096x4096,4224x4096x4096,4352x4096x4096,8192x8192x8192 >"$OUT/skwaves.log" 2>&1
      grep -E '^\||Worst' "$OUT"/skwaves/*-alternating.md ;;
    skauto)
      TILEC_STREAM_K=auto python3 bench/bench_alternating.py --gemm --rep-ms 400 --out-dir "$OUT/skauto" \
        --shapes 4352x4096x4096,4096x4096x4096 >"$OUT/skauto.log" 2>&1
      grep -E '^\||Worst' "$OUT"/skauto/*-alternating.md ;;
    skl2)
      m=gpu__time_duration.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read.sum
      m=$m,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_op_read.sum,dram__bytes_read.sum
      for sk in 0 1; do
        TILEC_STREAM_K=$sk ncu --clock-control none --kernel-name regex:tilec_ --launch-skip 3 --launch-count 1 \
          --metrics "$m" python3 bench/profile_gemm.py --n 4096 --dtype bf16 --iters 5 >"$OUT/skl2-$sk.txt" 2>&1
        echo "== TILEC_STREAM_K=$sk"
        grep -E 'duration|lts__|dram__' "$OUT/skl2-$sk.txt"
      done ;;
    skdefault)
      ctest --test-dir build -j6 -L gpu -R 'stream_k|streams' --timeout 200 --output-on-failure >"$OUT/skdefault-tests.log" 2>&1
      echo "== stream-K gpu tests: $(grep -E 'tests passed|tests failed' "$OUT/skdefault-tests.log" | tail -1)"
      grep -E '\*\*\*Failed|Timeout' "$OUT/skdefault-tests.log"
      for mode in 0 default; do
        if [ $mode = 0 ]; then export TILEC_STREAM_K=0; else unset TILEC_STREAM_K; fi
        python3 bench/bench_gemm.py --dtypes "" --fp8 --fp8-shapes 8192x8192x8192 --rounds 3 \
          --out-dir "$OUT/fp8-sk$mode" >"$OUT/fp8-sk$mode.log" 2>&1
        echo "== FP8 8192^3, TILEC_STREAM_K=$mode"
        grep -h '^| fp8' "$OUT"/fp8-sk$mode/*-gemm.md
      done
      unset TILEC_STREAM_K
      python3 bench/bench_alternating.py --gemm --rep-ms 400 --out-dir "$OUT/skdefault" \
        --shapes 4352x4096x1024,4352x4096x4096 >"$OUT/skdefault.log" 2>&1
      grep -E '^\||Worst' "$OUT"/skdefault/*-alternating.md ;;
    kblock)
      python3 bench/bench_alternating.py --gemm --rep-ms 600 --out-dir "$OUT/kblock" \
        --shapes 4096x4096x4096,8192x8192x8192 \
        --gemm-variant k32s8=block_K:32,num_stages:8 --gemm-variant k32s7=block_K:32,num_stages:7 \
        --gemm-variant k32s6=block_K:32,num_stages:6 >"$OUT/kblock.log" 2>&1
      grep -E '^\||Worst' "$OUT"/kblock/*-alternating.md ;;
    timeline)
      w=$(mktemp -d)
      build/bin/tilec "$here/examples/gemm.tile" --target=sm_90a --emit=cuda -D dtype=bf16 -o "$w/def.cu"
      python3 bench/timeline/instrument.py "$w/def.cu" "$w/def_i.cu"
      for shape in 4096x4096x4096 8192x8192x8192; do
        TILEC_CACHE_DIR=$(mktemp -d -p "$w") TILEC_CUDA_OVERRIDE="$w/def.cu:$w/def_i.cu" \
          python3 bench/timeline/run_gemm.py --shape $shape --iters 6 >"$OUT/timeline-$shape.log" 2>&1
        echo "== timeline $shape"
        python3 bench/timeline/timeline.py "$OUT/timeline-$shape.log" $(( ${shape##*x} / 64 )) | tail -8
      done ;;
    energy)
      python3 bench/gemm_energy.py --shape 4096x4096x4096 --secs 1.0 --rounds 4 >"$OUT/energy.log" 2>&1
      grep -E '^\||error' "$OUT/energy.log" ;;
    *) echo "probe.sh: unknown step $step (tests, grid, squares, waves, attention, cluster, streamk, skwaves, skauto, skl2, skdefault, kblock, timeline, energy)" >&2; exit 2 ;;
  esac
done
