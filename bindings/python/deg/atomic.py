"""Atomic file writes: a temporary file in the target's directory, fsync, rename over the target."""
import os
import tempfile


def atomic_write(path, write):
    """Call write(binary file handle) on a temporary file next to path, fsync
    it and rename it over path: readers see the old file or the whole new
    one, never a half-written one. The temporary file is removed if write
    raises (the exception propagates)."""
    d = os.path.dirname(os.fspath(path)) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
