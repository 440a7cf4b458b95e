"""The evaluation-reserved source guard: every file datagen reads goes through here.

Reserved for evaluation (issue 12, doc/ARCHITECTURE.md "Data"): Debian copyright
files (DEP-5: `/usr/share/doc/*/copyright`, `debian/copyright`, any file named
`copyright`) and Python package metadata (`*.dist-info/METADATA`, `*.egg-info/PKG-INFO`,
any file named `METADATA` or `PKG-INFO`). They never enter datagen, training, tuning
or development evaluation sets, so `read_text` refuses them (ReservedSourceError)
and every datagen reader opens files only through it. `walk` lists a tree
for the kinds that search directories (site-packages, /usr/share/doc, ...): it
never descends into a `*.dist-info` / `*.egg-info` directory and never yields
a reserved file.
"""
import gzip
import lzma
import os
import re

__all__ = ["ReservedSourceError", "is_reserved", "is_reserved_text", "check_path", "read_text",
           "read_bytes", "walk"]

_RESERVED_NAMES = ("copyright", "metadata", "pkg-info")


class ReservedSourceError(PermissionError):
    """A path reserved for evaluation was asked for."""


def is_reserved(path):
    """True for a path datagen must never read (see the module docstring). The
    check is on the path's own name and on its resolved target (a symlink to a
    copyright file is refused too); compression suffixes are ignored."""
    for p in {str(path), os.path.realpath(str(path))}:
        base = os.path.basename(p).lower()
        for suf in (".gz", ".xz", ".bz2"):
            if base.endswith(suf):
                base = base[: -len(suf)]
        if base in _RESERVED_NAMES or base.startswith("copyright."):
            return True
        parts = p.replace("\\", "/").lower().split("/")
        if any(x.endswith((".dist-info", ".egg-info")) for x in parts[:-1]):
            return True
    return False


# DEP-5 (https://dep-team.pages.debian.net/deps/dep5/): its header's Format: URL, the
# Upstream-Name: field, or a stanza with both Files: and Copyright: fields; Python core
# metadata (packaging.python.org "Core metadata specifications"): a Metadata-Version: field
_DEP5_FORMAT = re.compile(r"^Format:[ \t]*\S*(?:copyright-format|dep5)", re.M | re.I)
_RESERVED_FIELD = re.compile(r"^(?:Upstream-Name|Metadata-Version)[ \t]*:", re.M | re.I)
_FILES_COPYRIGHT = re.compile(r"^Files:[^\n]*\n(?:[ \t][^\n]*\n|[A-Za-z-]+:[^\n]*\n)*?Copyright:",
                              re.M | re.I)


def is_reserved_text(text):
    """True when `text` is a DEP-5 copyright file or Python package metadata by its
    content, whatever its name (see the module docstring)."""
    return bool(_DEP5_FORMAT.search(text) or _RESERVED_FIELD.search(text)
                or _FILES_COPYRIGHT.search(text))


def check_path(path):
    """Raise ReservedSourceError if `path` is reserved for evaluation."""
    if is_reserved(path):
        raise ReservedSourceError(f"{path}: reserved for evaluation (Debian copyright files and "
                                  "Python package metadata never enter datagen)")
    return path


def read_text(path, limit=1 << 20, content=False):
    """The text of `path` (gzip/xz by suffix, UTF-8 with replacement), at most
    `limit` bytes; refuses reserved paths, and with `content` a text that is
    reserved by its content (is_reserved_text)."""
    check_path(path)
    opener = {".gz": gzip.open, ".xz": lzma.open}.get(os.path.splitext(str(path))[1], open)
    with opener(path, "rb") as f:
        text = f.read(limit).decode("utf-8", "replace")
    if content and is_reserved_text(text):
        raise ReservedSourceError(f"{path}: a DEP-5 copyright file or Python package metadata by "
                                  "its content (reserved for evaluation)")
    return text


def read_bytes(path, limit=1 << 20):
    """The bytes of `path` (binary sources such as gettext .mo catalogues), at
    most `limit`; refuses reserved paths."""
    check_path(path)
    with open(path, "rb") as f:
        return f.read(limit)


def walk(root, suffixes, max_depth=4, max_bytes=256 << 10, skip_dirs=()):
    """Sorted regular files under `root` whose names end with one of `suffixes`
    (a tuple), at most `max_depth` directories down, each readable and at most
    `max_bytes` long. Directories named in `skip_dirs`, hidden ones and the
    package-metadata directories (`*.dist-info`, `*.egg-info`) are not entered;
    reserved files are never listed. A missing root gives []."""
    out = []
    root = str(root)
    for dirpath, dirs, files in os.walk(root):
        depth = dirpath[len(root):].count(os.sep)
        dirs[:] = sorted(d for d in dirs if depth < max_depth and not d.startswith(".")
                         and d not in skip_dirs
                         and not d.lower().endswith((".dist-info", ".egg-info")))
        for f in sorted(files):
            p = os.path.join(dirpath, f)
            if f.endswith(suffixes) and not is_reserved(p) and os.path.isfile(p) \
                    and os.access(p, os.R_OK) and os.path.getsize(p) <= max_bytes:
                out.append(p)
    return sorted(out)
