#!/bin/sh
# pyrun.sh MODULES SCRIPT [ARGS...] - run a Python test with the first
# interpreter that can import every module of MODULES (comma-separated, e.g.
# "numpy" or "numpy,torch"). Candidates, in order:
#   $TILEC_PYTHON          an explicit choice (the only candidate when set)
#   python3 from PATH      found at test time, not configure time: a build
#                          folder configured here also runs on the GPU machine,
#                          whose python3 (the one with torch) lives elsewhere
#   $TILEC_PYTHON_FALLBACKS  the interpreters tests/python/CMakeLists.txt saw at
#                          configure time, then /usr/bin/python3 and
#                          /usr/local/bin/python3 (the distribution's, which gets
#                          python3-numpy from apt, where PATH's python3 is e.g. a
#                          pyenv one without NumPy)
# The one chosen is printed. When none has the modules, PATH's python3 runs the
# script anyway, and the script reports the skip (exit 77) itself; with no
# python3 at all this exits 77.
need=$1
shift
if [ -n "${TILEC_PYTHON:-}" ]; then
  candidates=$TILEC_PYTHON
else
  candidates="python3 ${TILEC_PYTHON_FALLBACKS:-} /usr/bin/python3 /usr/local/bin/python3"
fi
imports=$(echo "$need" | tr ',' ' ')
for py in $candidates; do
  command -v "$py" >/dev/null 2>&1 || continue
  ok=1
  for m in $imports; do
    "$py" -c "import $m" >/dev/null 2>&1 || { ok=0; break; }
  done
  if [ $ok = 1 ]; then
    echo "pyrun: $(command -v "$py") (imports $need)"
    exec "$py" "$@"
  fi
done
py=${TILEC_PYTHON:-python3}
if command -v "$py" >/dev/null 2>&1; then
  echo "pyrun: no interpreter among [$candidates] imports $need; running $py anyway"
  exec "$py" "$@"
fi
echo "SKIP: no python3 found"
exit 77
