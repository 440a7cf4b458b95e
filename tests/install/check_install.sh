#!/usr/bin/env bash
# Install the build into a temporary DESTDIR, then compile and run C programs
# against it with `pkg-config --cflags --libs deg` only (as a host app would).
#   check_install.sh MESON BUILD_ROOT B_SANITIZE CC PROGRAM.c [ARGS...]
# Exit 77 (skip) for sanitizer builds: a host app would need the same flags.
set -euo pipefail
meson="$1" build="$2" sanitize="$3" cc="$4" src="$5"; shift 5
[ "$sanitize" = none ] || { echo "skip: b_sanitize=$sanitize"; exit 77; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$meson" install -C "$build" --destdir "$tmp/root" --no-rebuild --quiet

pc="$(find "$tmp/root" -name deg.pc -print -quit)"
[ -n "$pc" ] || { echo "FAIL: no deg.pc installed"; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
echo "--- $pc"; cat "$pc"
version="$(pkg-config --modversion deg)"
grep -qx "$version" "$(dirname "$0")/../../VERSION" \
    || { echo "FAIL: deg.pc version $version != VERSION"; exit 1; }
for h in deg.h deg_runtime.h deg_schema.h deg_fill.h deg_train.h deg_version.h cartridge.h lora.h; do
    [ -n "$(find "$tmp/root" -name "$h" -print -quit)" ] || { echo "FAIL: $h not installed"; exit 1; }
done
libdir="$(pkg-config --variable=libdir deg)"
libdir="$tmp/root${libdir#"$tmp/root"}"  # pkgconf may already prefix the sysroot
[ -e "$libdir/libdeg.so.0" ] || { echo "FAIL: no libdeg.so.0 (soname link) in $libdir"; exit 1; }

cflags="$(pkg-config --cflags deg)" libs="$(pkg-config --libs deg)"
echo "--- cflags: $cflags"; echo "--- libs: $libs"
# shellcheck disable=SC2086
$cc -std=c11 -Wall -Wextra -Werror "$src" $cflags $libs -o "$tmp/prog"
# The program must resolve every symbol from the installed library.
deps="$(LD_LIBRARY_PATH="$libdir" ldd "$tmp/prog")"
echo "$deps"
case "$deps" in
    *"libdeg.so.0 => $libdir/libdeg.so.0"*) ;;
    *) echo "FAIL: the program does not use the installed libdeg"; exit 1 ;;
esac
LD_BIND_NOW=1 LD_LIBRARY_PATH="$libdir" "$tmp/prog" "$@"
