#!/usr/bin/env python3
"""Generate the C source of the cffi API-mode extension deg._deg_cffi.

Run by Meson at build time with the build's Python. The declarations come
from the public headers themselves (no hand-kept copy; each given with
--header, a header before the ones that use its types; include/deg.h is only an
umbrella of #includes): preprocessor lines are dropped
except plain integer #defines (also those of the generated deg_version.h),
blocks under `#ifdef __cplusplus` are dropped, comments and the DEG_API
export token are removed, and the rest goes to ffibuilder.cdef().

Functions declared in the header but not (yet) defined in the static archive
libdeg.a are left out of the binding, with a warning on stderr, so that the
package imports while the library grows; `nm` reads the archive's symbols.
"""
import argparse
import os
import re
import subprocess
import sys

import cffi

INT_DEFINE = re.compile(
    r"^\s*#\s*define\s+([A-Za-z_]\w*)\s+(-?(?:0[xX][0-9a-fA-F]+|\d+))[uUlL]*\s*$")
COND_OPEN = re.compile(r"^\s*#\s*(if|ifdef|ifndef)\b(.*)$")
COND_ELSE = re.compile(r"^\s*#\s*(else|elif)\b")
COND_END = re.compile(r"^\s*#\s*endif\b")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def clean_header(text, defines):
    """Return the C declarations of a header; append its integer #defines."""
    out = []
    # Conditional stack: [is a __cplusplus test, current branch skipped].
    # Only C++ blocks are evaluated (as not C++); other conditionals keep
    # their content (the header guards and DEG_API's definition).
    skip = []
    lines = strip_comments(text).replace("\\\n", " ").splitlines()
    for line in lines:
        m = COND_OPEN.match(line)
        if m:
            cpp = "__cplusplus" in m.group(2)
            skip.append([cpp, cpp and m.group(1) != "ifndef"])
            continue
        if COND_ELSE.match(line):
            if skip and skip[-1][0]:
                skip[-1][1] = not skip[-1][1]
            continue
        if COND_END.match(line):
            if skip:
                skip.pop()
            continue
        if any(s[1] for s in skip):
            continue
        if line.lstrip().startswith("#"):
            m = INT_DEFINE.match(line)
            if m and not m.group(1).endswith("_H"):  # include guards (DEG_H, ...)
                defines[m.group(1)] = m.group(2)
            continue
        out.append(line)
    body = "\n".join(out)
    body = re.sub(r"\bDEG_API\b", "", body)
    return body


def split_declarations(body):
    """Split top-level declarations at ';' outside braces."""
    decls, depth, cur = [], 0, []
    for ch in body:
        cur.append(ch)
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == ";" and depth == 0:
            decls.append("".join(cur).strip())
            cur = []
    rest = "".join(cur).strip()
    if rest:
        raise SystemExit(f"gen_cffi: trailing text after the last declaration: {rest[:80]!r}")
    return decls


def function_name(decl):
    """Name of a function declaration, None for types and variables."""
    if decl.startswith("typedef") or "(" not in decl:
        return None
    head = decl[:decl.index("(")]
    m = re.search(r"([A-Za-z_]\w*)\s*$", head)
    return m.group(1) if m else None


def archive_symbols(nm, archive):
    res = subprocess.run([nm, "--defined-only", "-g", archive],
                         capture_output=True, text=True, check=True)
    syms = set()
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWwDdBbRr":
            syms.add(parts[2])
    return syms


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--header", required=True, action="append",
                    help="a public header (repeatable, in include order: deg_runtime.h, "
                         "deg_schema.h, deg_fill.h, deg_train.h, cartridge.h, lora.h)")
    ap.add_argument("--version-header", required=True)
    ap.add_argument("--archive", help="libdeg.a: bind only the functions it defines")
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--output", required=True)
    ap.add_argument("--cdef-output", help="also write the cdef text (debugging)")
    args = ap.parse_args()

    defines = {}
    with open(args.version_header, encoding="utf-8") as f:
        clean_header(f.read(), defines)
    body = ""
    for header in args.header:
        with open(header, encoding="utf-8") as f:
            body += clean_header(f.read(), defines) + "\n"

    decls = split_declarations(body)
    if args.archive:
        have = archive_symbols(args.nm, args.archive)
        kept, missing = [], []
        for d in decls:
            name = function_name(d)
            if name is not None and name not in have:
                missing.append(name)
            else:
                kept.append(d)
        if missing:
            print("gen_cffi: warning: declared in deg.h but not defined in libdeg "
                  "(left out of the Python binding): " + ", ".join(missing),
                  file=sys.stderr)
        decls = kept

    cdef = "".join(f"#define {k} {v}\n" for k, v in defines.items())
    cdef += "\n".join(decls) + "\n"
    if args.cdef_output:
        with open(args.cdef_output, "w", encoding="utf-8") as f:
            f.write(cdef)

    ffibuilder = cffi.FFI()
    ffibuilder.cdef(cdef)
    includes = "".join(f'#include "{os.path.basename(h)}"\n' for h in args.header)
    ffibuilder.set_source("deg._deg_cffi", includes)
    ffibuilder.emit_c_code(args.output)


if __name__ == "__main__":
    main()
