#!/bin/sh
# override_pairs.sh TILEC PAIRS_SCRIPT KERNEL.tile OUT_DIR: bench/override_pairs.sh
# gives TILEC_CUDA_OVERRIDE pairs under which every build of its copy of the
# .tile compiles the other compiler's code (shape classes, the stream-K
# build), and the .tile at its own path is left alone. The "other compiler"
# here is tilec with a marker kernel appended to its text; the builds are
# checked through --emit=cubin (NVRTC, no GPU).
set -u
tilec=$1 pairs_script=$2 tile=$3 out=$4
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

other="$out/other_tilec.sh"
cat >"$other" <<EOF
#!/bin/sh
# tilec, then a marker kernel appended to the file after -o
"$tilec" "\$@" || exit
while [ \$# -gt 1 ]; do [ "\$1" = -o ] && printf '\\nextern "C" __global__ void tilec_other_marker() {}\\n' >>"\$2"; shift; done
EOF
chmod +x "$other"

pairs=$(sh "$pairs_script" "$tilec" "$other" "$tile" "$out/pairs" -D dtype=bf16) || fail "the script failed"
n=$(printf '%s\n' "$pairs" | tr ',' '\n' | grep -c ':')
[ "$n" = 8 ] || fail "expected 8 pairs (4 shape classes, with and without stream-K), got $n: $pairs"
copy="$out/pairs/$(basename "$tile")"
[ -f "$copy" ] || fail "no copy of the .tile at $copy"
for pair in $(printf '%s\n' "$pairs" | tr ',' ' '); do
  base=${pair%%:*} edit=${pair#*:}
  [ -s "$base" ] && [ -s "$edit" ] || fail "missing text in pair $pair"
  cmp -s "$base" "$edit" && fail "the pair's two texts are the same: $pair"
  grep -q tilec_other_marker "$edit" || fail "the other compiler's text lacks the marker: $edit"
  grep -q tilec_other_marker "$base" && fail "the base text has the marker: $base"
done
echo "ok: 8 pairs, base and other texts as expected"

# Each build of the copy (class 0, its stream-K build, class 3) compiles the other text.
for build in "0 0" "0 1" "3 0"; do
  set -- $build
  err=$(TILEC_STREAM_K=$2 TILEC_CUDA_OVERRIDE="$pairs" "$tilec" "$copy" -D dtype=bf16 --target=sm_90a \
          --shape-class="$1" --emit=cubin -o "$out/copy.cubin" 2>&1)
  rc=$?
  case "$err" in *"needs NVRTC"*) echo "SKIP: $err"; exit 77 ;; esac
  [ $rc = 0 ] || fail "class $1 stream-K $2: --emit=cubin exited $rc: $err"
  case "$err" in *"edited CUDA"*) ;; *) fail "class $1 stream-K $2: no note that the other text was compiled: $err" ;; esac
  grep -q tilec_other_marker "$out/copy.cubin" || fail "class $1 stream-K $2: the marker kernel is not in the cubin"
done
echo "ok: every build of the copy compiled the other compiler's text"

# The .tile at its own path: its text names another path, nothing applies.
err=$(TILEC_CUDA_OVERRIDE="$pairs" "$tilec" "$tile" -D dtype=bf16 --target=sm_90a --emit=cubin \
        -o "$out/own.cubin" 2>&1) || fail "the build of the .tile at its own path failed: $err"
case "$err" in *"edited CUDA"*) fail "an override applied to the .tile at its own path: $err" ;; esac
grep -q tilec_other_marker "$out/own.cubin" && fail "the .tile at its own path got the other text"
echo "ok: the .tile at its own path is compiled as generated"
