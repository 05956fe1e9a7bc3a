#!/bin/sh
# check_install.sh BUILD_DIR SOURCE_DIR - ctest install.consumer: installs the
# build into a temporary prefix (cmake --install), moves the tree (it must be
# relocatable), then builds tests/install/consumer/consumer.c against it three
# ways and runs each (a CPU kernel whose every element is checked):
#   1. find_package(tilec) + tilec::tilert         (shared)
#   2. find_package(tilec) + tilec::tilert_static  (static)
#   3. cc $("$pkgconfig" --cflags --libs tilert)     (shared)
# and runs the installed CLI. Any failure exits non-zero.
set -eu
build=$1 src=$2
cc=${CC:-cc}
flags=${TILEC_CONSUMER_FLAGS:-}  # a sanitizer build's flags: its libtilert needs them
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
step() { echo "== $*"; }

step "cmake --install $build --prefix $tmp/stage"
cmake --install "$build" --prefix "$tmp/stage" >"$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
mv "$tmp/stage" "$tmp/prefix"
prefix=$tmp/prefix
for f in bin/tilec lib/libtilert.so lib/libtilert.a include/tilec/tilert.h include/tilec/tilec.h \
         include/tilec/dlpack/dlpack.h lib/cmake/tilec/tilecConfig.cmake lib/pkgconfig/tilert.pc; do
  test -e "$prefix/$f" || { echo "missing from the installed tree: $f"; exit 1; }
done

step "installed CLI"
out=$("$prefix/bin/tilec" --version)
echo "$out"
case $out in "tilec "[0-9]*) ;; *) echo "unexpected tilec --version: $out"; exit 1 ;; esac

step "find_package(tilec) (moved prefix)"
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$flags" \
      -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$tmp/cfg.log" 2>&1 || { cat "$tmp/cfg.log"; exit 1; }
cmake --build "$tmp/consumer" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
"$tmp/consumer/consumer_shared" "find_package, tilec::tilert"
ldd "$tmp/consumer/consumer_shared" | grep -q "$prefix/lib/libtilert.so" || {
  echo "consumer_shared does not load the installed libtilert.so:"; ldd "$tmp/consumer/consumer_shared"; exit 1; }
"$tmp/consumer/consumer_static" "find_package, tilec::tilert_static"
if ldd "$tmp/consumer/consumer_static" | grep -q libtilert; then
  echo "consumer_static links libtilert.so, not libtilert.a"; exit 1
fi

step "pkg-config tilert"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
pkgconfig=${PKG_CONFIG:-pkg-config}
"$pkgconfig" --modversion tilert
# shellcheck disable=SC2046
# shellcheck disable=SC2086 # $flags: several words on purpose
$cc -O1 $flags -o "$tmp/consumer_pc" "$src/tests/install/consumer/consumer.c" \
    $("$pkgconfig" --cflags --libs tilert) -lm -Wl,-rpath,"$prefix/lib"
"$tmp/consumer_pc" "pkg-config"
echo "install.consumer: all passed"
