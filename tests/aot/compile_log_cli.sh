#!/bin/sh
# compile_log_cli.sh TILEC COMPILE_LOG.tile COMPILE_LOG.cu SOFTMAX.tile OUT_DIR
# tilec --emit=cubin|ptx prints the warnings of NVRTC's log (see CMakeLists.txt).
set -u
tilec=$1 tile=$2 fixture=$3 clean=$4 out=$5
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

# compile_log.cu in place of compile_log.tile's generated CUDA.
"$tilec" "$tile" --target=sm_90a -o "$out/generated.cu" || fail "tilec could not write the CUDA text"
export TILEC_CUDA_OVERRIDE="$out/generated.cu:$fixture"

"$tilec" "$tile" --emit=cubin --target=sm_90a -o "$out/probe.cubin" 2> "$out/cubin.err"
rc=$?
grep -q "needs NVRTC" "$out/cubin.err" && { echo "SKIP: $(cat "$out/cubin.err")"; exit 77; }
[ $rc = 0 ] || fail "--emit=cubin exited $rc: $(cat "$out/cubin.err")"
[ -s "$out/probe.cubin" ] || fail "no cubin written"
expect() { # FILE TEXT: TEXT is a line of FILE, start to end
  grep -qxF -- "$2" "$1" || fail "$1 lacks the line '$2':
$(cat "$1")"
}
expect "$out/cubin.err" "tilec: warning: nvrtc: compile_log.cu(19): warning #177-D: variable \"unused_probe\" was declared but never referenced"
expect "$out/cubin.err" "    int unused_probe = 1;" # the source line NVRTC quotes under it
# The advisory's code and reason depend on the NVRTC version; its words do not.
grep -q "^tilec: warning: slow kernel: ptxas: (C75[0-9][0-9]) Potential Performance Loss: wgmma.mma_async instructions are serialized .* in the function 'tilec_probe'\$" "$out/cubin.err" \
  || fail "no slow-kernel warning: $(cat "$out/cubin.err")"
expect "$out/cubin.err" "tilec: note: $tile: ptxas serialized the kernel's wgmma instructions: its results are right, but its tensor cores run one instruction at a time (docs/cuda-runtime.md, \"The compile log\")"
# Information that asks nothing of the user stays out.
if grep -e C7519 -e Remark -e "ptxas info" "$out/cubin.err"; then fail "info lines printed"; fi
echo "ok: --emit=cubin prints the NVRTC warning and the slow-kernel advisory, exit 0"

# PTX runs NVRTC's front end only: its warning, no ptxas.
"$tilec" "$tile" --emit=ptx --target=sm_90a -o "$out/probe.ptx" 2> "$out/ptx.err" || fail "--emit=ptx: $(cat "$out/ptx.err")"
expect "$out/ptx.err" "tilec: warning: nvrtc: compile_log.cu(19): warning #177-D: variable \"unused_probe\" was declared but never referenced"
if grep ptxas "$out/ptx.err"; then fail "--emit=ptx printed a ptxas line"; fi
echo "ok: --emit=ptx prints the NVRTC warning"

# --cache-dir keeps the log beside the cubin (<key>.log): a second run, a
# cache hit, prints the same warnings (as ccache replays a compiler's).
for run in 1 2; do
  TILEC_AOT_VERBOSE=1 "$tilec" "$tile" --emit=cubin --target=sm_90a --cache-dir="$out/cache" -o "$out/c$run.cubin" \
    2> "$out/c$run.all" || fail "--cache-dir run $run: $(cat "$out/c$run.all")"
  grep -v "^tilec: sm_90a cubin, " "$out/c$run.all" > "$out/c$run.err"
done
grep -q "(stored in the cache)" "$out/c1.all" && grep -q "(from the cache)" "$out/c2.all" \
  || fail "not a store then a hit: $(cat "$out/c1.all" "$out/c2.all")"
[ "$(ls "$out/cache" | grep -c '\.log$')" = 1 ] || fail "no single <key>.log in the cache: $(ls "$out/cache")"
cmp -s "$out/cubin.err" "$out/c1.err" && cmp -s "$out/c1.err" "$out/c2.err" \
  || fail "the hit's warnings differ: $(diff "$out/c1.err" "$out/c2.err")"
echo "ok: --cache-dir stores the log; a cache hit prints the same warnings"

# A clean kernel whose log is all ptxas information (-v): nothing printed.
unset TILEC_CUDA_OVERRIDE
TILEC_NVRTC_FLAGS=--ptxas-options=-v "$tilec" "$clean" --emit=cubin --target=sm_90a -o "$out/clean.cubin" \
  2> "$out/clean.err" || fail "clean build: $(cat "$out/clean.err")"
[ ! -s "$out/clean.err" ] || fail "a clean build printed: $(cat "$out/clean.err")"
echo "ok: ptxas -v information is not printed"
echo "compile_log_cli: all checks passed"
