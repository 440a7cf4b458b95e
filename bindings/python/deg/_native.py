"""The cffi extension (generated from include/deg.h) and small call helpers."""
from ._deg_cffi import ffi, lib  # noqa: F401

from .errors import raise_for_status


def check(status):
    """Raise the typed DegError for a non-OK deg_status, carrying deg_errmsg()."""
    if status != 0:
        raise_for_status(status, ffi.string(lib.deg_errmsg()).decode("utf-8", "replace"))


def has(name):
    """True if the linked libdeg provides function `name`."""
    try:
        getattr(lib, name)
    except AttributeError:
        return False
    return True
