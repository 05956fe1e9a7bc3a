#!/bin/sh
# run_sanitizer.sh TOOL PROGRAM ARGS... - one example under compute-sanitizer
# (ctest label gpu: tests/cuda/CMakeLists.txt). Exit 77 (skipped) when
# compute-sanitizer or a GPU is missing; 1 when the tool reports anything
# (or the program fails), with the report on stdout.
tool=$1
shift
san=$(command -v compute-sanitizer 2>/dev/null)
[ -z "$san" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && san=/usr/local/cuda/bin/compute-sanitizer
if [ -z "$san" ]; then
  echo "skipped: compute-sanitizer not found (PATH, /usr/local/cuda/bin)"
  exit 77
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: no GPU (nvidia-smi -L fails)"
  exit 77
fi
# A fresh cache: the kernels are compiled under the tool as well.
TILEC_CACHE_DIR=$(mktemp -d) || exit 1
export TILEC_CACHE_DIR
out=$("$san" --tool "$tool" --error-exitcode 3 "$@" 2>&1)
rc=$?
rm -rf "$TILEC_CACHE_DIR"
echo "$out"
case "$out" in
  *"ERROR SUMMARY: 0 errors"* | *"RACECHECK SUMMARY: 0 hazards displayed"*) ;;
  *) echo "run_sanitizer.sh: no clean summary from $tool"; exit 1 ;;
esac
[ $rc -eq 0 ] || { echo "run_sanitizer.sh: exit status $rc"; exit 1; }
echo "clean: $tool $*"
