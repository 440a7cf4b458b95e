"""Work limits and cancellation (deg_cancel, deg_run_limits in include/deg.h).

    token = deg.CancelToken()
    threading.Timer(2.0, token.cancel).start()     # from any thread
    deg.fill(text, schema, model=ckpt, cancel=token,
             options={"deadline_ms": 30000, "max_fields": 5000, "max_fork_tokens": 10**6})
    model.generate("Hi", max_tokens=4000, cancel=token, deadline_ms=5000)

A cancelled call raises CancelledError; a deadline or cap raises LimitError
(each with the C message, e.g. "deadline of 50 ms passed during prefill").

Defaults (issue 19): a call is bounded unless the caller lifts a limit: limits
left None take libdeg's defaults (deg_run_limits_default(): DEFAULT_DEADLINE_MS
= 10 minutes per request (deg.fill_many: times the number of jobs; also
Model.generate's deadline), DEFAULT_MAX_FIELDS instantiated fields,
DEFAULT_MAX_FORK_TOKENS fork tokens; why these numbers: include/deg_runtime.h);
0 lifts that limit explicitly (no limit). deg.fill(..., limits={"deadline_ms":
0, "max_fields": 20000, "max_fork_tokens": 0}) raises or lifts the defaults;
the request options of the same names can only tighten them. A LimitError's
message names the limit, says whether it is the default, and how to lift it.
The running call polls the token between units of work (each layer of a
forward pass, each fork batch, each decode step), so it returns within one. The C
calls release the GIL, so cancel() from another Python thread is seen.
"""

import argparse
from collections.abc import Mapping

from ._native import check, ffi, lib
from .errors import ArgumentError

__all__ = ["CancelToken", "run_limits", "LIMIT_NAMES", "DEFAULT_DEADLINE_MS",
           "DEFAULT_MAX_FIELDS", "DEFAULT_MAX_FORK_TOKENS", "LIFT_MARK", "LIMIT_FLAGS",
           "flag_hint", "add_limit_arguments", "limits_from_args"]

#: the limits a call runs under when the caller sets none (include/deg_runtime.h)
DEFAULT_DEADLINE_MS = int(lib.deg_run_limits_default().deadline_ms)
DEFAULT_MAX_FIELDS = int(lib.deg_run_limits_default().max_fields)
DEFAULT_MAX_FORK_TOKENS = int(lib.deg_run_limits_default().max_fork_tokens)
#: the keys of a limits mapping (deg.fill(limits=...), deg serve)
LIMIT_NAMES = ("deadline_ms", "max_fields", "max_fork_tokens")
#: what libdeg's LimitError message says before how to lift a limit of the caller's
#: or a default one in the library's terms (lib/base/run.h DG_LIMIT_HINT_MARK)
LIFT_MARK = "; to lift it: "
#: how a limit's message starts -> the command-line flag that sets it (deg fill, deg serve)
LIMIT_FLAGS = (("deadline of ", "--deadline-ms N"), ("max_fields ", "--max-fields N"),
               ("max_fork_tokens ", "--max-fork-tokens N"),
               ("DEG_MAX_FORK_LEN ", "--max-fork-tokens 0 (no fork-token caps)"))


def flag_hint(message, who, tail=""):
    """A LimitError message whose limit a command line set, with libdeg's lift
    hint (the C field and the Python keyword) replaced by the flag: LIFT_MARK +
    who + " " + flag (+ " (0 = none)" for a flag taking a count) + tail. A
    message without the hint (a limit the request's own options set: the
    request can change it) is returned as is."""
    i = message.find(LIFT_MARK)
    if i < 0:
        return message
    head = message[:i]
    for start, flag in LIMIT_FLAGS:
        if head.startswith(start):
            if flag.endswith(" N"):  # a flag taking a count; the others say what they set
                flag += " (0 = none)"
            return f"{head}{LIFT_MARK}{who} {flag}{tail}"
    return message


def _flag_count(text):
    """argparse type of a limit flag: an integer >= 0 (a bad value is a usage
    error, exit 2, like every other malformed argument)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} must be >= 0 (0 = none)")
    return v


def add_limit_arguments(parser, what, deadline_ms=None, deadline_from=""):
    """--deadline-ms, --max-fields, --max-fork-tokens of a command that fills
    (what: e.g. "the fill"); each None = libdeg's default, 0 = none. deadline_ms:
    the command's own default deadline (None = libdeg's, DEFAULT_DEADLINE_MS);
    deadline_from: where the deadline's clock starts, said in its help."""
    parser.add_argument("--deadline-ms", type=_flag_count, default=deadline_ms,
                        help=f"wall-clock budget of {what}{deadline_from}; past it the fill "
                        f"fails with LimitError (default {deadline_ms or DEFAULT_DEADLINE_MS}, "
                        "0 = none)")
    parser.add_argument("--max-fields", type=_flag_count, default=None,
                        help=f"cap on the fields {what} instantiates (default "
                        f"{DEFAULT_MAX_FIELDS}; 0 = none)")
    parser.add_argument("--max-fork-tokens", type=_flag_count, default=None,
                        help=f"cap on the tokens {what} feeds to forks (default "
                        f"{DEFAULT_MAX_FORK_TOKENS}; 0 = none: lifts the single-fork cap too)")


def limits_from_args(args, prog):
    """The limits mapping of add_limit_arguments' flags (those left None are
    libdeg's defaults); SystemExit naming the flag for a negative value."""
    limits = {name: getattr(args, name) for name in LIMIT_NAMES
              if getattr(args, name) is not None}
    for name, v in limits.items():
        if v < 0:
            raise SystemExit(f"{prog}: --{name.replace('_', '-')} must be >= 0 (0 = none)")
    return limits


class CancelToken:
    """A thread-safe cancel flag (deg_cancel). cancel() from any thread stops
    every call that was given the token; reset() makes it reusable."""

    def __init__(self):
        out = ffi.new("deg_cancel **")
        check(lib.deg_cancel_new(out))
        self._ptr = ffi.gc(out[0], lib.deg_cancel_free)

    def cancel(self):
        lib.deg_cancel_set(self._ptr)

    def reset(self):
        lib.deg_cancel_reset(self._ptr)

    @property
    def cancelled(self):
        return bool(lib.deg_cancel_is_set(self._ptr))

    def __repr__(self):
        return f"<deg.CancelToken cancelled={self.cancelled}>"


def _count(name, v, default):
    """None -> the default; 0 -> no limit (explicit); n >= 1 -> n."""
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ArgumentError(f"{name} must be an integer >= 1, 0 (no limit) or None (the "
                            f"default), got {v!r}")
    if v > 2**63 - 1:
        raise ArgumentError(f"{name} must be below 2**63, got {v}")
    return v


def limits_of(limits):
    """The keyword arguments of run_limits from a limits mapping (None = {});
    unknown keys are ArgumentErrors."""
    if limits is None:
        return {}
    if not isinstance(limits, Mapping):
        raise ArgumentError(f"limits must be a mapping of {', '.join(LIMIT_NAMES)} or None, "
                            f"got {type(limits).__name__}")
    bad = sorted(str(k) for k in limits if k not in LIMIT_NAMES)
    if bad:
        raise ArgumentError(f"limits: unknown key(s) {', '.join(bad)} (known: "
                            f"{', '.join(LIMIT_NAMES)})")
    return dict(limits)


def run_limits(cancel=None, deadline_ms=None, max_fields=None, max_fork_tokens=None):
    """A deg_run_limits * for a C call (the token is kept alive by the caller).
    Each limit: None = libdeg's default (deg_run_limits_default), 0 = none,
    n >= 1 = n."""
    if cancel is not None and not isinstance(cancel, CancelToken):
        raise ArgumentError(f"cancel must be a deg.CancelToken or None, got "
                            f"{type(cancel).__name__}")
    lim = ffi.new("deg_run_limits *", lib.deg_run_limits_default())
    if cancel is not None:
        lim.cancel = cancel._ptr
    lim.deadline_ms = _count("deadline_ms", deadline_ms, lim.deadline_ms)
    lim.max_fields = _count("max_fields", max_fields, lim.max_fields)
    lim.max_fork_tokens = _count("max_fork_tokens", max_fork_tokens, lim.max_fork_tokens)
    return lim
