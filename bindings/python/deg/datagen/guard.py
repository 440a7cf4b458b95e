"""The evaluation-reserved source guard: every file datagen reads goes through here.

Reserved for evaluation (issue 12, doc/ARCHITECTURE.md "Data"): Debian copyright
files (DEP-5: `/usr/share/doc/*/copyright`, `debian/copyright`, any file named
`copyright`) and Python package metadata (`*.dist-info/METADATA`, `*.egg-info/PKG-INFO`,
any file named `METADATA` or `PKG-INFO`). They never enter datagen, training, tuning
or development evaluation sets, so `read_text` refuses them (ReservedSourceError)
and every datagen reader opens files only through it.
"""
import gzip
import lzma
import os

__all__ = ["ReservedSourceError", "is_reserved", "check_path", "read_text"]

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


def check_path(path):
    """Raise ReservedSourceError if `path` is reserved for evaluation."""
    if is_reserved(path):
        raise ReservedSourceError(f"{path}: reserved for evaluation (Debian copyright files and "
                                  "Python package metadata never enter datagen)")
    return path


def read_text(path, limit=1 << 20):
    """The text of `path` (gzip/xz by suffix, UTF-8 with replacement), at most
    `limit` bytes; refuses reserved paths."""
    check_path(path)
    opener = {".gz": gzip.open, ".xz": lzma.open}.get(os.path.splitext(str(path))[1], open)
    with opener(path, "rb") as f:
        return f.read(limit).decode("utf-8", "replace")
