"""The cffi extension (generated from include/deg.h) and small call helpers.

`lib` wraps the extension's functions so that an argument cffi cannot convert
(a negative number for a size_t, a str for a pointer, ...) raises
ArgumentError naming the C function, like every other bad argument, instead
of cffi's OverflowError / TypeError (issue 19 item 9).
"""
import os

from ._deg_cffi import ffi
from ._deg_cffi import lib as _raw_lib

from .errors import ArgumentError, raise_for_status


class _Lib:
    """The C functions (and constants) of the extension, with typed errors for
    arguments cffi refuses to convert."""

    def __init__(self, raw):
        self._raw = raw

    def __getattr__(self, name):
        f = getattr(self._raw, name)
        if not callable(f):
            return f

        def call(*args):
            try:
                return f(*args)
            except (OverflowError, TypeError) as e:
                raise ArgumentError(f"{name}: an argument cannot be passed to C: {e}") from None
        call.__name__ = name
        self.__dict__[name] = call
        return call

    def __dir__(self):
        return dir(self._raw)


lib = _Lib(_raw_lib)


def path_arg(path, what="path"):
    """A file system path (str, bytes or os.PathLike) as the C library's bytes.
    ArgumentError for anything else or a path holding NUL."""
    try:
        b = os.fsencode(path)
    except TypeError:
        raise ArgumentError(f"{what} must be a path (str, bytes or os.PathLike), got "
                            f"{type(path).__name__}") from None
    if b"\0" in b:
        raise ArgumentError(f"{what} contains a NUL byte: {path!r}")
    return b


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
