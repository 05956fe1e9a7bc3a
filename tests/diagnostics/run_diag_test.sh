#!/usr/bin/env bash
# run_diag_test.sh TILEC FILE - checks the diagnostics tilec reports for FILE.
#
# FILE holds comment lines `// expect-error@LINE:COL {{substring}}` (LINE:COL
# absolute, 1-based). The test passes when `TILEC FILE --emit=ir -o OUT`:
#   - exits with status 1,
#   - reports, for every expectation, an error line
#     `FILE:LINE:COL: error: ...substring...` on stderr,
#   - reports no other error (count of `: error:` lines == expectations),
#   - does not create OUT.
# A line `// tilec-args: ARGS` adds ARGS to the command (e.g. --target=sm_90a
# for a target's limits). Style after MLIR's expected-error checks (invalid.mlir).
set -u

if [ $# -ne 2 ]; then
  echo "usage: $0 TILEC FILE.tile" >&2
  exit 2
fi
tilec=$1
file=$2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-diag.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out.tir

extra=$(grep -a -o '^// tilec-args: .*' "$file" | head -1 | sed 's|^// tilec-args: ||')
# shellcheck disable=SC2086 # ARGS are words on purpose
"$tilec" "$file" --emit=ir $extra -o "$out" >"$tmp/stdout" 2>"$tmp/stderr"
status=$?

fail=0
complain() {
  echo "FAIL: $file: $*" >&2
  fail=1
}

# Expectations: LINE, COL and the substring, one per line, tab-separated.
# grep -a: the file may hold stray binary bytes on purpose.
grep -a -o 'expect-error@[0-9]*:[0-9]* {{.*}}' "$file" |
  sed 's/^expect-error@\([0-9]*\):\([0-9]*\) {{\(.*\)}}$/\1\t\2\t\3/' >"$tmp/expect"
nexpect=$(wc -l <"$tmp/expect")
if [ "$nexpect" -eq 0 ]; then
  complain "no '// expect-error@LINE:COL {{...}}' line in the file"
fi

if [ "$status" -ne 1 ]; then
  complain "exit status $status, expected 1"
fi

# Error lines start in column 1; the quoted source lines diag prints below
# each message are indented, so they never count.
grep -a -E '^[^[:space:]].*: error: ' "$tmp/stderr" >"$tmp/errors"
nerrors=$(wc -l <"$tmp/errors")

while IFS=$'\t' read -r line col text; do
  prefix="$file:$line:$col: error: "
  found=0
  while IFS= read -r err; do
    if [[ "$err" == "$prefix"* && "${err#"$prefix"}" == *"$text"* ]]; then
      found=1
      break
    fi
  done <"$tmp/errors"
  if [ "$found" -eq 0 ]; then
    complain "missing error at $line:$col containing '$text'"
  fi
done <"$tmp/expect"

if [ "$nerrors" -ne "$nexpect" ]; then
  complain "$nerrors error(s) reported, $nexpect expected"
fi

if [ -e "$out" ]; then
  complain "output file was written although the input has errors"
fi

if [ "$fail" -ne 0 ]; then
  echo "---- stderr of: $tilec $file --emit=ir -o $out" >&2
  cat "$tmp/stderr" >&2
  exit 1
fi
echo "ok: $file ($nexpect error(s))"
exit 0
