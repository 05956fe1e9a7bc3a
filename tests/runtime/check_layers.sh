#!/bin/sh
# check_layers.sh - keeps libtilert in floors (docs/runtime.md, "Floors"):
# no runtime file calls, or includes, anything on a floor above its own or
# in the other column of its floor (CPU <-> GPU), and no two files call
# each other in a circle.
#
# usage: check_layers.sh NM RUNTIME_DIR OBJECT...
#   NM           the nm to run (ctest passes CMAKE_NM)
#   RUNTIME_DIR  runtime/: the #include "..." lines of its .c and .h files
#                (and cuda/'s) are checked against the same table
#   OBJECT...    every object file of tilert_objects and tilert_cuda
#
# Calls come from the objects: `nm -P -g` lists what each object defines and
# what it leaves undefined; a symbol undefined in A and defined in B is a
# reference from A to B (a call, or data such as rt_cuda_device_headers).
# Symbols defined outside these objects (libc, libtilec) are not checked.
# A file missing from the table fails the check: a new file must be given a
# floor (here and in docs/runtime.md).

# ---- the table: the one place that says which file is on which floor ----
# floor column  files (object / source names; shell patterns allowed)
LAYERS='
4 tests  rt_internal.h
3 api    tilert.c rt_aot.c
2 cpu    rt_cpu.h rt_cpu.c rt_cc.c
2 gpu    rt_gpu.h rt_gpu.c rt_gpu_nvrtc.c rt_tma.h rt_tma.c rt_repack.h rt_repack.c cuda_driver.h cuda_driver.c rt_cuda_headers.c rt_cuda_hdr_*.c
1 base   rt_base.h rt_error.c rt_compile.c rt_module.c rt_cache.c rt_validate.c rt_sha256.c rt_half.c
'
# rt_internal.h is the white-box tests' umbrella: no runtime file includes it.
# Headers not in the table (tilert.h, tilec.h, dlpack.h, libc) are the public
# types every floor may use.

if [ $# -lt 3 ]; then
  echo "usage: $0 NM RUNTIME_DIR OBJECT..." >&2
  exit 2
fi
NM=$1
RUNTIME_DIR=$2
shift 2
# ctest hands each CMake list ($<TARGET_OBJECTS:...>) over as one argument
# joined by ';': split them into one argument per object.
set -f
IFS=';'
# shellcheck disable=SC2048,SC2086
set -- $*
IFS=' 	
'
set +f

TMP=$(mktemp -d "${TMPDIR:-/tmp}/check_layers.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

# place NAME: prints "floor column" for a file name, nothing if it has none.
place() {
  echo "$LAYERS" | while read -r floor column files; do
    [ -n "$floor" ] || continue
    for pat in $files; do
      # shellcheck disable=SC2254
      case $1 in $pat) echo "$floor $column"; exit 0 ;; esac
    done
  done
}

status=0
unplaced() {
  echo "FAIL: $1 is on no floor: add it to the table in $0 (and to docs/runtime.md)"
  status=1
}

# ---- symbols: "file floor column D|U symbol" per line ----
: >"$TMP/syms"
for obj in "$@"; do
  name=$(basename "$obj" .o)
  where=$(place "$name")
  if [ -z "$where" ]; then
    unplaced "$name"
    continue
  fi
  "$NM" -P -g "$obj" >"$TMP/nm" || { echo "FAIL: $NM $obj"; exit 2; }
  awk -v f="$name" -v w="$where" '
    $2 == "U" || $2 == "w" || $2 == "v" { print f, w, "U", $1; next }
    NF >= 2                            { print f, w, "D", $1 }' "$TMP/nm" >>"$TMP/syms"
done

# ---- includes: "file floor column I header" per line, placed headers only ----
: >"$TMP/incs"
for src in "$RUNTIME_DIR"/*.c "$RUNTIME_DIR"/*.h "$RUNTIME_DIR"/cuda/*.c "$RUNTIME_DIR"/cuda/*.h; do
  [ -f "$src" ] || continue
  name=$(basename "$src")
  where=$(place "$name")
  if [ -z "$where" ]; then
    unplaced "$name"
    continue
  fi
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$src" |
    while read -r hdr; do
      hw=$(place "$(basename "$hdr")")
      [ -n "$hw" ] && echo "$name $where $(basename "$hdr") $hw"
    done >>"$TMP/incs"
done

# ---- the rules ----
# edges: "from ffloor fcol to tfloor tcol what" (what: a symbol, or #include)
awk 'NR == FNR { if ($4 == "D") { file[$5] = $1; fl[$5] = $2; co[$5] = $3 } next }
     $4 == "U" && ($5 in file) && file[$5] != $1 {
       print $1, $2, $3, file[$5], fl[$5], co[$5], $5 }' "$TMP/syms" "$TMP/syms" >"$TMP/edges"
awk '{ print $1, $2, $3, $4, $5, $6, "#include" }' "$TMP/incs" >>"$TMP/edges"

awk '
  function say(kind) {
    printf "FAIL: %s (floor %s, %s) %s %s (floor %s, %s): %s\n", $1, $2, $3,
           ($7 == "#include" ? "includes" : "uses " $7 " from"), $4, $5, $6, kind
    bad = 1
  }
  $1 == $4  { next }
  $5 > $2   { say("goes up a floor"); next }
  $5 == $2 && $6 != $3 { say("goes across to the other column of its floor") }
  END { exit bad }' "$TMP/edges" || status=1

# A circle inside one column (or inside the base) is as bad as one across
# floors: tsort refuses a graph with a loop.
awk '$1 != $4 { print $1, $4 }' "$TMP/edges" | sort -u >"$TMP/pairs"
if ! tsort "$TMP/pairs" >/dev/null 2>"$TMP/tsort"; then
  echo "FAIL: the runtime's files call each other in a circle:"
  sed 's/^/  /' "$TMP/tsort"
  status=1
fi

echo "file -> what it uses (calls and #includes between runtime files):"
awk '$1 != $4 { print $1 " (" $2 " " $3 ") -> " $4 }' "$TMP/edges" | sort -u |
  awk '{ k = $1 " " $2 " " $3; if (k != last) { if (last != "") print line; line = "  " k " " $4 " " $5; last = k } else line = line ", " $5 }
       END { if (last != "") print line }'
if [ $status -eq 0 ]; then
  echo "ok: $# objects, every reference goes down a floor or stays in its column"
fi
exit $status
