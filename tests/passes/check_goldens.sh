#!/usr/bin/env bash
# Golden IR dumps: runs `tilec --dump-ir` on one example with fixed -D
# bindings and compares every NN-<pass>.tir file with golden/<case>/.
#
#   check_goldens.sh TILEC CASE TILE_FILE [tilec options...]
#
# Regenerate every golden (then review `git diff tests/passes/golden`):
#   TILEC_UPDATE_GOLDENS=1 ctest --test-dir build -R golden
set -euo pipefail
tilec=$1 case_name=$2 tile=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
golden="$here/golden/$case_name"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$tilec" "$tile" --dump-ir="$out" "$@" -o "$out/output.txt"
rm -f "$out/output.txt"

if [ "${TILEC_UPDATE_GOLDENS:-0}" = 1 ]; then
  rm -rf "$golden"
  mkdir -p "$golden"
  cp "$out"/*.tir "$golden/"
  echo "updated $golden"
  exit 0
fi
[ -d "$golden" ] || { echo "no goldens in $golden (run with TILEC_UPDATE_GOLDENS=1)"; exit 1; }
if ! diff -ru "$golden" "$out"; then
  echo "IR dumps of '$case_name' differ from the goldens (above)." >&2
  echo "If the change is intended: TILEC_UPDATE_GOLDENS=1 ctest --test-dir build -R golden" >&2
  exit 1
fi
echo "$case_name: $(ls "$out" | wc -l) dumps match"
