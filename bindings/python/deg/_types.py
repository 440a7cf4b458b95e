"""Type aliases of the deg package's public signatures (PEP 484)."""
import os
from typing import Any, Union

StrPath = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
"""A file system path as the C library takes it (deg._native.path_arg)."""

JSONValue = Any
"""A JSON value as json.loads returns it (dict, list, str, int, float, bool, None)."""
