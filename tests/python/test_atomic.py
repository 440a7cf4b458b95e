"""deg.atomic.atomic_write: whole file or old file, and the file's mode is
the replaced file's (a new file: 0666 less the umask), not mkstemp's 0600."""
import os
import stat

import pytest

from deg.atomic import atomic_write


def test_modes_and_failure(tmp_path):
    old = os.umask(0o022)
    try:
        p = tmp_path / "new.json"
        atomic_write(p, lambda fh: fh.write(b"{}"))
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o644 and p.read_bytes() == b"{}"
        q = tmp_path / "kept.json"
        q.write_bytes(b"old")
        os.chmod(q, 0o640)
        atomic_write(q, lambda fh: fh.write(b"new"))
        assert stat.S_IMODE(os.stat(q).st_mode) == 0o640 and q.read_bytes() == b"new"

        def boom(fh):
            fh.write(b"half")
            raise RuntimeError("disk full")
        with pytest.raises(RuntimeError):
            atomic_write(q, boom)
        assert q.read_bytes() == b"new"
        assert sorted(x.name for x in tmp_path.iterdir()) == ["kept.json", "new.json"]
    finally:
        os.umask(old)
