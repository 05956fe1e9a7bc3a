#!/bin/sh
# check_wheel.sh SOURCE_DIR - ctest package.wheel: builds the Python wheel
# from the source tree (pip wheel: the PEP 517 backend, scikit-build-core,
# runs CMake), installs it with NumPy into a fresh virtual environment, and runs
# smoke.py from an empty folder with no PYTHONPATH / TILEC_* variables: import
# tilec, its bundled libtilert compiles and runs a kernel on the CPU (values
# checked), and the `tilec` console script on PATH is the bundled compiler.
#
# Needs network for pip (scikit-build-core, NumPy; PyPI or a local
# find-links). Without it the test exits 77 (skipped); CI counts that as a
# failure (tests/require_no_skips.cmake). Interpreter: pyrun.sh's choice of a
# python3 that has venv and ensurepip.
set -eu
src=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-wheel-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset PYTHONPATH TILEC_LIBRARY TILEC_BUILD_DIR TILEC_SOURCE_DIR PIP_REQUIRE_VIRTUALENV || true

cat >"$tmp/mkvenv.py" <<'PY'
import sys, venv
venv.create(sys.argv[1], with_pip=True)
print("venv %s from python %s (%s)" % (sys.argv[1], sys.version.split()[0], sys.executable))
PY
sh "$here/../python/pyrun.sh" venv,ensurepip "$tmp/mkvenv.py" "$tmp/venv"
py=$tmp/venv/bin/python

network_or_fail() {  # $1: log. Exit 77 when pip could not reach an index.
  if grep -Eq "Could not find a version that satisfies|NewConnectionError|Temporary failure in name resolution|Network is unreachable|No matching distribution found" "$1"; then
    echo "SKIP: pip cannot reach a package index (no network?)"; exit 77
  fi
  exit 1
}

echo "== pip wheel $src"
start=$(date +%s)
if ! "$py" -m pip wheel --timeout 60 --retries 2 --no-deps -w "$tmp/dist" "$src" >"$tmp/wheel.log" 2>&1; then
  cat "$tmp/wheel.log"; network_or_fail "$tmp/wheel.log"
fi
tail -n 3 "$tmp/wheel.log"
whl=$(ls "$tmp"/dist/tilec-*.whl)
echo "built $(basename "$whl") in $(( $(date +%s) - start )) s"
"$py" -m zipfile -l "$whl" | grep -E "tilec/(lib/libtilert.so|bin/tilec)" || {
  echo "the wheel lacks tilec/lib/libtilert.so or tilec/bin/tilec"; exit 1; }

echo "== pip install the wheel + numpy into the fresh venv"
if ! "$py" -m pip install --timeout 60 --retries 2 "$whl" numpy >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"; network_or_fail "$tmp/install.log"
fi
tail -n 1 "$tmp/install.log"

echo "== smoke test from an empty folder"
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"
PATH="$tmp/venv/bin:$PATH" TILEC_CACHE_DIR="$tmp/cache" "$py" "$here/smoke.py"
echo "== tilec --version (console script on PATH)"
PATH="$tmp/venv/bin:$PATH" tilec --version
echo "package.wheel: all passed"
