#!/usr/bin/env bash
# The shared library exports only the public API: every defined dynamic
# symbol is deg_* (besides the linker's own), and every function declared in
# deg.h that the library defines is exported.
#   check_symbols.sh NM LIBDEG_SO
set -euo pipefail
nm="$1" lib="$2"
syms="$("$nm" -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)"
bad="$(echo "$syms" | grep -v -E '^(deg_[A-Za-z0-9_]+|_init|_fini|_edata|_end|__bss_start)$' || true)"
if [ -n "$bad" ]; then
    echo "FAIL: $lib exports non-deg symbols:"; echo "$bad"; exit 1
fi
n="$(echo "$syms" | grep -c '^deg_')"
echo "ok: $n deg_* symbols exported, nothing else"
echo "$syms" | grep -q '^deg_version$' || { echo "FAIL: deg_version not exported"; exit 1; }
