#!/bin/sh
# aot_cli.sh TILEC FLASH_ATTENTION.tile CACHE_DIR OUT_DIR (see CMakeLists.txt)
# The cache directory is left populated for aot_gpu_load (sm_90a, bf16, dim 128).
set -u
tilec=$1 tile=$2 cache=$3 out=$4
rm -rf "$cache" "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

# e_flags of a cubin: the arch is bits 8..15 (0x5a = 90, 0x50 = 80).
check_cubin() { # FILE ARCH_NUMBER
  [ -s "$1" ] || fail "$1: no cubin written"
  magic=$(od -A n -t x1 -N 4 "$1" | tr -d ' \n')
  [ "$magic" = 7f454c46 ] || fail "$1: not an ELF file (magic $magic)"
  machine=$(od -A n -t u2 -j 18 -N 2 "$1" | tr -d ' \n')
  [ "$machine" = 190 ] || fail "$1: e_machine $machine, want 190 (EM_CUDA)"
  flags=$(od -A n -t u4 -j 48 -N 4 "$1" | tr -d ' \n')
  sm=$(( (flags >> 8) & 255 ))
  [ "$sm" = "$2" ] || fail "$1: e_flags say sm_$sm, want sm_$2"
  echo "ok: $1 is a CUDA ELF for sm_$sm ($(wc -c < "$1") bytes)"
}

err=$(TILEC_AOT_VERBOSE=1 "$tilec" "$tile" --emit=cubin --target=sm_90a -D dtype=bf16 \
        --cache-dir="$cache" -o "$out/fa_sm90a.cubin" 2>&1)
rc=$?
case "$err" in
*"needs NVRTC"*) echo "SKIP: $err"; exit 77 ;;
esac
[ $rc = 0 ] || fail "tilec --emit=cubin exited $rc: $err"
case "$err" in *"stored in the cache"*) ;; *) fail "first run did not store the entry: $err" ;; esac
check_cubin "$out/fa_sm90a.cubin" 90
ls "$cache"/*.cubin > /dev/null 2>&1 || fail "no <key>.cubin in $cache"

# A second process computes the same key and finds the entry (the runtime's
# lookup, rt_gpu_cubin): no NVRTC run, the same bytes.
err=$(TILEC_AOT_VERBOSE=1 "$tilec" "$tile" --emit=cubin --target=sm_90a -D dtype=bf16 \
        --cache-dir="$cache" -o "$out/fa_sm90a_again.cubin" 2>&1) || fail "second run: $err"
case "$err" in *"from the cache"*) ;; *) fail "second run was not a cache hit: $err" ;; esac
cmp -s "$out/fa_sm90a.cubin" "$out/fa_sm90a_again.cubin" || fail "the cached cubin differs"
echo "ok: second run was a cache hit with the same bytes"

# The flagship's shape class 1 (dim 128 from seq_len 8192: 176 keys per
# block) into the same cache, for aot_gpu_load's long launch; its cubin
# differs from class 0's.
err=$(TILEC_AOT_VERBOSE=1 "$tilec" "$tile" --emit=cubin --target=sm_90a -D dtype=bf16 --shape-class=1 \
        --cache-dir="$cache" -o "$out/fa_sm90a_class1.cubin" 2>&1) || fail "--shape-class=1: $err"
case "$err" in *"stored in the cache"*) ;; *) fail "shape class 1 was not stored: $err" ;; esac
check_cubin "$out/fa_sm90a_class1.cubin" 90
cmp -s "$out/fa_sm90a.cubin" "$out/fa_sm90a_class1.cubin" && fail "shape class 1's cubin is class 0's"
echo "ok: shape class 1 stored beside class 0"

# The runtime builds every other shape class of a loaded module in the
# background (prebuild threads): the ragged build (bit 1, seq_len % 128 != 0)
# goes in too, so aot_gpu_load's process never needs NVRTC. Class 3 is class
# 1's build (ragged_keys folds to true with 176-key blocks): the same entry.
for c in 2 3; do
  err=$(TILEC_AOT_VERBOSE=1 "$tilec" "$tile" --emit=cubin --target=sm_90a -D dtype=bf16 --shape-class=$c \
          --cache-dir="$cache" -o "$out/fa_sm90a_class$c.cubin" 2>&1) || fail "--shape-class=$c: $err"
done
cmp -s "$out/fa_sm90a_class1.cubin" "$out/fa_sm90a_class3.cubin" || fail "shape class 3's cubin is not class 1's"
echo "ok: shape classes 2 and 3 in the cache (3 is class 1's entry)"

# libnvrtc is opened by a compile only: the dynamic loader's own trace
# (glibc LD_DEBUG=files) shows it for a miss (another arch) and not for a
# hit. Where the loader prints no trace (not glibc) this check says so.
LD_DEBUG=files "$tilec" "$tile" --emit=cubin --target=sm_80 -D dtype=bf16 --cache-dir="$cache" \
  -o "$out/fa_sm80_cached.cubin" 2> "$out/ld_miss" || fail "sm_80 into the cache: $(tail -3 "$out/ld_miss")"
LD_DEBUG=files "$tilec" "$tile" --emit=cubin --target=sm_90a -D dtype=bf16 --cache-dir="$cache" \
  -o "$out/fa_sm90a_hit.cubin" 2> "$out/ld_hit" || fail "third run: $(tail -3 "$out/ld_hit")"
if grep -q 'file=' "$out/ld_miss"; then
  grep -q 'file=[^ ]*libnvrtc' "$out/ld_miss" || fail "a cache miss did not open libnvrtc?"
  if grep 'file=[^ ]*libnvrtc' "$out/ld_hit"; then fail "a cache hit opened libnvrtc"; fi
  echo "ok: a cache hit opens no libnvrtc (LD_DEBUG=files), a miss does"
else
  echo "note: this loader prints no LD_DEBUG=files trace; libnvrtc laziness not checked here"
fi

# sm_80 (the mma.sync path), no cache.
"$tilec" "$tile" --emit=cubin --target=sm_80 -D dim=64 -D is_causal=true -o "$out/fa_sm80.cubin" \
  || fail "sm_80 cubin"
check_cubin "$out/fa_sm80.cubin" 80

# sm_89 (an L4/L40): the sm_80 code in a cubin for its own arch.
"$tilec" "$tile" --emit=cubin --target=sm_89 -D dim=64 -o "$out/fa_sm89.cubin" || fail "sm_89 cubin"
check_cubin "$out/fa_sm89.cubin" 89

for c in "${CUOBJDUMP:-}" "$(command -v cuobjdump 2>/dev/null)" /usr/local/cuda/bin/cuobjdump; do
  if [ -n "$c" ] && [ -x "$c" ]; then
    "$c" --list-elf "$out/fa_sm90a.cubin" | grep -q 'sm_90a' || fail "$c --list-elf: no sm_90a"
    "$c" --list-elf "$out/fa_sm80.cubin" | grep -q 'sm_80' || fail "$c --list-elf: no sm_80"
    echo "ok: $c --list-elf names sm_90a and sm_80"
    break
  fi
done

# PTX for the virtual arch, to stdout.
"$tilec" "$tile" --emit=ptx --target=sm_90a > "$out/fa.ptx" || fail "--emit=ptx"
grep -q '^\.target sm_90a' "$out/fa.ptx" || fail "PTX has no .target sm_90a"
grep -q '\.entry tilec_flash_attention' "$out/fa.ptx" || fail "PTX has no tilec_flash_attention entry"
echo "ok: PTX for sm_90a ($(wc -c < "$out/fa.ptx") bytes)"

# Usage errors and a missing NVRTC: clear messages, no output file.
"$tilec" "$tile" --emit=cubin --target=sm_90a 2> "$out/err1" && fail "cubin without -o succeeded"
grep -q 'give -o PATH' "$out/err1" || fail "cubin without -o: $(cat "$out/err1")"
"$tilec" "$tile" --emit=cubin --target=cpu -o "$out/x" 2> "$out/err2" && fail "--target=cpu succeeded"
grep -q 'need a GPU --target' "$out/err2" || fail "cpu target: $(cat "$out/err2")"
TILEC_NVRTC_LIB=/nonexistent/libnvrtc.so "$tilec" "$tile" --emit=cubin --target=sm_90a \
  -o "$out/none.cubin" 2> "$out/err3" && fail "succeeded without libnvrtc"
grep -q 'needs NVRTC' "$out/err3" || fail "missing NVRTC: $(cat "$out/err3")"
[ ! -e "$out/none.cubin" ] || fail "a cubin was written without NVRTC"
echo "ok: usage errors and a missing libnvrtc"

# --no-tma: the build the runtime launches for tensors TMA cannot take (no TMA
# copy, so no producer warpgroup either); refused with --emit=cubin.
"$tilec" "$tile" --target=sm_90a > "$out/tma.cu" || fail "sm_90a CUDA"
"$tilec" "$tile" --target=sm_90a --no-tma > "$out/notma.cu" || fail "sm_90a --no-tma CUDA"
grep -q 'tc_tma_load' "$out/tma.cu" && grep -q 'tc_setmaxnreg_inc' "$out/tma.cu" || fail "sm_90a CUDA has no TMA/producer"
grep -q 'tc_tma_load\|tc_setmaxnreg' "$out/notma.cu" && fail "--no-tma CUDA still has TMA or setmaxnreg"
grep -q 'tc_copy_g2s' "$out/notma.cu" || fail "--no-tma CUDA has no cp.async copy"
"$tilec" "$tile" --emit=cubin --target=sm_90a --no-tma -o "$out/y" 2> "$out/err4" && fail "--no-tma with cubin succeeded"
grep -q -- '--no-tma goes with --emit=cuda|ir' "$out/err4" || fail "--no-tma with cubin: $(cat "$out/err4")"
echo "ok: --no-tma drops TMA and the producer; refused with --emit=cubin"
echo "aot_cli: all checks passed"
