"""Atomic file writes: a temporary file in the target's directory, fsync, rename over the target."""
import os
import tempfile


def _mode_for(path):
    """The permission bits the file should get: the replaced file's, else what
    open() would give a new file (0666 less the umask); mkstemp's own 0600
    would silently make a user's report or checkpoint file private."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def atomic_write(path, write):
    """Call write(binary file handle) on a temporary file next to path, fsync
    it and rename it over path: readers see the old file or the whole new
    one, never a half-written one. The file keeps the replaced file's mode (a
    new one gets 0666 less the umask). The temporary file is removed if write
    raises (the exception propagates)."""
    d = os.path.dirname(os.fspath(path)) or "."
    mode = _mode_for(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
