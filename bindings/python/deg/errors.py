"""Typed exceptions for deg_status codes.

Every failing C call raises a subclass of DegError whose message is the C
library's own message (deg_errmsg(): where and why). The class tells the
kind; `.status` is the numeric deg_status and `.status_name` its C name (the
numbers are the C library's enum constants as the generated cffi module holds
them, never typed here).
Standard bases are mixed in where they fit (DegIOError is an OSError,
FormatError a ValueError, ...), so generic handlers keep working.
"""

__all__ = [
    "DegError", "ArgumentError", "DegIOError", "FormatError", "UnsupportedError",
    "DegMemoryError", "Utf8Error", "RangeError", "SchemaError", "RequestError",
    "FillError", "StateError", "MismatchError", "NumericError", "InternalError",
    "CancelledError", "LimitError", "ModelNotFoundError", "raise_for_status",
]

from ._deg_cffi import lib as _clib


def _code(name):
    """(value, name) of deg_status `name`: the enum constant from include/deg_runtime.h."""
    return getattr(_clib, name), name


class DegError(Exception):
    """Base class of every error raised by deg."""

    status = None          # deg_status value (negative int), None for Python-side errors
    status_name = "DEG_ERR"

    def __init__(self, message="", status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status

    def __str__(self):
        return self.message




class ArgumentError(DegError, ValueError):
    """DEG_ERR_ARG: invalid argument (NULL handle, bad size, ...)."""
    status, status_name = _code("DEG_ERR_ARG")


class DegIOError(DegError, OSError):
    """DEG_ERR_IO: file not found, unreadable, write failed."""
    status, status_name = _code("DEG_ERR_IO")

    def __init__(self, message="", status=None):
        DegError.__init__(self, message, status)

    def __str__(self):
        return self.message


class FormatError(DegError, ValueError):
    """DEG_ERR_FORMAT: malformed file (bad magic, truncated, corrupt)."""
    status, status_name = _code("DEG_ERR_FORMAT")


class UnsupportedError(DegError):
    """DEG_ERR_UNSUPPORTED: valid but unsupported (dtype, architecture, ...)."""
    status, status_name = _code("DEG_ERR_UNSUPPORTED")


class DegMemoryError(DegError, MemoryError):
    """DEG_ERR_NOMEM: allocation failed or memory budget exceeded."""
    status, status_name = _code("DEG_ERR_NOMEM")


class Utf8Error(DegError, ValueError):
    """DEG_ERR_UTF8: input text is not valid UTF-8."""
    status, status_name = _code("DEG_ERR_UTF8")


class RangeError(DegError, ValueError):
    """DEG_ERR_RANGE: index, length or value out of range."""
    status, status_name = _code("DEG_ERR_RANGE")


class SchemaError(DegError, ValueError):
    """DEG_ERR_SCHEMA: the JSON Schema is invalid; `.errors` lists the problems."""
    status, status_name = _code("DEG_ERR_SCHEMA")

    def __init__(self, message="", status=None, errors=()):
        super().__init__(message, status)
        self.errors = list(errors)


class RequestError(DegError, ValueError):
    """DEG_ERR_REQUEST: a fill request or its options are invalid."""
    status, status_name = _code("DEG_ERR_REQUEST")
    errors: list  # [{"loc", "msg"}], set where a listed request error is raised


class FillError(DegError):
    """DEG_ERR_FILL: a fill could not produce a valid value."""
    status, status_name = _code("DEG_ERR_FILL")
    errors: list  # [{"loc", "msg"}]: the reasons or validator violations, set where raised


class StateError(DegError, RuntimeError):
    """DEG_ERR_STATE: call not valid in the handle's current state (or closed)."""
    status, status_name = _code("DEG_ERR_STATE")


class MismatchError(DegError, ValueError):
    """DEG_ERR_MISMATCH: artifact does not match the model."""
    status, status_name = _code("DEG_ERR_MISMATCH")


class NumericError(DegError, ArithmeticError):
    """DEG_ERR_NUMERIC: NaN/Inf detected."""
    status, status_name = _code("DEG_ERR_NUMERIC")


class InternalError(DegError):
    """DEG_ERR_INTERNAL: a bug in libdeg; please report it."""
    status, status_name = _code("DEG_ERR_INTERNAL")


class CancelledError(DegError):
    """DEG_ERR_CANCELLED: the call's deg.CancelToken was cancelled (another thread)."""
    status, status_name = _code("DEG_ERR_CANCELLED")


class LimitError(DegError):
    """DEG_ERR_LIMIT: a work limit was reached: the deadline passed, or a fill's
    max_fields / max_fork_tokens cap would be exceeded (the message says which)."""
    status, status_name = _code("DEG_ERR_LIMIT")


class ModelNotFoundError(DegError, FileNotFoundError):
    """The default model is not in the cache (run scripts/fetch-model or `deg fetch-model`)."""

    def __str__(self):
        return self.message


_BY_STATUS = {cls.status: cls for cls in (
    ArgumentError, DegIOError, FormatError, UnsupportedError, DegMemoryError, Utf8Error,
    RangeError, SchemaError, RequestError, FillError, StateError, MismatchError,
    NumericError, InternalError, CancelledError, LimitError)}


def raise_for_status(status, message):
    """Raise the exception class of deg_status `status` with the C message."""
    cls = _BY_STATUS.get(status)
    if cls is None:
        raise DegError(f"unknown deg_status {status}: {message}", status)
    raise cls(message, status)
