#!/bin/sh
# cuda_override.sh TILEC KERNEL.tile OUT_DIR: $TILEC_CUDA_OVERRIDE (a
# developer's switch, runtime/rt_gpu.c) compiles an edited copy of the
# generated CUDA where the generated text matches the given file byte for
# byte, and nowhere else. Checked through --emit=cubin (NVRTC, no GPU).
set -u
tilec=$1 tile=$2 out=$3
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

"$tilec" "$tile" --target=sm_90a -o "$out/generated.cu" || fail "tilec could not write the CUDA text"
cp "$out/generated.cu" "$out/edited.cu"
printf '\nextern "C" __global__ void tilec_override_marker() {}\n' >> "$out/edited.cu"

# Matching text: the edit is what NVRTC compiles (its extra kernel is in the cubin).
err=$(TILEC_CUDA_OVERRIDE="$out/generated.cu:$out/edited.cu" "$tilec" "$tile" --emit=cubin --target=sm_90a \
        -o "$out/edited.cubin" 2>&1)
rc=$?
case "$err" in *"needs NVRTC"*) echo "SKIP: $err"; exit 77 ;; esac
[ $rc = 0 ] || fail "tilec --emit=cubin with the override exited $rc: $err"
case "$err" in *"TILEC_CUDA_OVERRIDE"*) ;; *) fail "no note that the override was compiled: $err" ;; esac
grep -q tilec_override_marker "$out/edited.cubin" || fail "the edited kernel is not in the cubin"
echo "ok: the edited CUDA was compiled"

# Another build (other defines, so other text): the override does not apply.
err=$(TILEC_CUDA_OVERRIDE="$out/generated.cu:$out/edited.cu" "$tilec" "$tile" --emit=cubin --target=sm_90a \
        -D block_M=4 -o "$out/other.cubin" 2>&1) || fail "the block_M=4 build failed: $err"
case "$err" in *"TILEC_CUDA_OVERRIDE"*) fail "the override applied to text it does not match: $err" ;; esac
grep -q tilec_override_marker "$out/other.cubin" && fail "the block_M=4 build has the edited kernel"
echo "ok: text that does not match is compiled as generated"

# Several pairs: the one whose generated text matches applies (here the second;
# the first names a file of other text).
printf '// not the generated text\n' > "$out/other.cu"
err=$(TILEC_CUDA_OVERRIDE="$out/other.cu:$out/missing.cu,$out/generated.cu:$out/edited.cu" "$tilec" "$tile" \
        --emit=cubin --target=sm_90a -o "$out/pairs.cubin" 2>&1) || fail "the build with two pairs failed: $err"
case "$err" in *"edited.cu"*) ;; *) fail "no note naming the second pair's edit: $err" ;; esac
grep -q tilec_override_marker "$out/pairs.cubin" || fail "two pairs: the edited kernel is not in the cubin"
echo "ok: of several pairs, the matching one applies"
