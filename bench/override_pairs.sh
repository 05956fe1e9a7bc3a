#!/bin/sh
# override_pairs.sh RUNTIME_TILEC OTHER_TILEC FILE.tile DIR [-D NAME=VALUE]...
#
# Times another compiler's code inside the runtime of this build: copies
# FILE.tile to DIR/ (its own path, so its generated text is its own), and
# for every build the runtime may make of that copy with these defines on
# sm_90a -- shape classes 0-3, each with and without --stream-k --
# writes what RUNTIME_TILEC generates (what the runtime will be about to
# compile) and what OTHER_TILEC generates, then prints the
# TILEC_CUDA_OVERRIDE pairs (comma-separated, one line) that swap the
# first for the second. Load DIR/<name>.tile as a variant (e.g.
# bench_alternating.py --gemm-variant old=@DIR/gemm.tile) with
# TILEC_CUDA_OVERRIDE set to the pairs (several calls' pairs joined by
# commas) and that variant runs OTHER_TILEC's code; the runtime notes
# each edit it compiled on stderr ("edited CUDA (...)"), so a log shows
# whether the swap happened. Both compilers must agree on the kernel's
# signature and shared memory (the host side stays the runtime's).
# The defines must be spelled as the runtime gets them (Python: True is
# "true"). Run it where the benchmark runs: the text names the copy's path.
set -eu
[ $# -ge 4 ] || { echo "usage: $0 RUNTIME_TILEC OTHER_TILEC FILE.tile DIR [-D NAME=VALUE]..." >&2; exit 2; }
base=$1 other=$2 tile=$3 dir=$4
shift 4
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
copy="$dir/$(basename "$tile")"
cp "$tile" "$copy"
stem="$dir/$(basename "$tile" .tile)"
pairs=""
for class in 0 1 2 3; do
  for sk in "" --stream-k; do
    tag="$class${sk:+sk}"
    "$base" "$copy" "$@" --target=sm_90a --shape-class="$class" $sk -o "$stem.base$tag.cu"
    "$other" "$copy" "$@" --target=sm_90a --shape-class="$class" $sk -o "$stem.other$tag.cu"
    pairs="$pairs${pairs:+,}$stem.base$tag.cu:$stem.other$tag.cu"
  done
done
echo "$pairs"
