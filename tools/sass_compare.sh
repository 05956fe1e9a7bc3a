#!/bin/sh
# sass_compare.sh TILEC_A TILEC_B [TARGET] - the SASS of every example, built by two
# tilec binaries (e.g. main's and a branch's), compared instruction by instruction.
# Each examples/*.tile goes through `tilec --emit=cubin --target=TARGET` (default sm_90a;
# NVRTC, no GPU) and `cuobjdump -sass`; addresses and encodings are stripped, so only
# the instruction text (branch targets included) is compared. Prints per example the
# instruction count of each side and SAME or DIFFERS (with the first lines of the
# diff); exits 1 when any differs. cuobjdump and nvdisasm: $CUOBJDUMP / $PATH (pip's
# nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels work).
set -u
a=$1 b=$2 target=${3:-sm_90a}
cuobjdump=${CUOBJDUMP:-cuobjdump}
command -v "$cuobjdump" > /dev/null || { echo "no cuobjdump (set CUOBJDUMP)"; exit 2; }
out=$(mktemp -d "${TMPDIR:-/tmp}/sass_compare.XXXXXX") || exit 2
trap 'rm -rf "$out"' EXIT
cd "$(dirname "$0")/.." || exit 2
rc=0
for f in examples/*.tile; do
  n=$(basename "$f" .tile)
  for side in a b; do
    t=$a; [ $side = b ] && t=$b
    if ! "$t" "$f" --target="$target" --emit=cubin -o "$out/$n.$side.cubin" 2> "$out/$n.$side.err"; then
      echo "$n: $side does not build: $(head -c 200 "$out/$n.$side.err")"; rc=1; continue 2
    fi
    "$cuobjdump" -sass "$out/$n.$side.cubin" | grep -E '^[[:space:]]+/\*[0-9a-f]{4,}\*/|Function' |
      sed -E 's#^[[:space:]]*/\*[0-9a-f]+\*/[[:space:]]*##; s#[[:space:]]*/\* 0x[0-9a-f]+ \*/[[:space:]]*$##; s#[[:space:]]+# #g' \
      > "$out/$n.$side.sass"
  done
  na=$(grep -vc Function "$out/$n.a.sass") nb=$(grep -vc Function "$out/$n.b.sass")
  if cmp -s "$out/$n.a.sass" "$out/$n.b.sass"; then
    echo "$n: $na instructions, SAME"
  else
    echo "$n: $na -> $nb instructions, DIFFERS"; diff "$out/$n.a.sass" "$out/$n.b.sass" | head -10; rc=1
  fi
done
exit $rc
