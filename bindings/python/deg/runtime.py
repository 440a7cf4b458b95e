"""Library-wide calls: versions, runtime description, thread count."""
import json

from ._native import ffi, lib

#: Version of the deg.h the binding was built from ("MAJOR.MINOR.PATCH").
HEADER_VERSION = f"{lib.DEG_VERSION_MAJOR}.{lib.DEG_VERSION_MINOR}.{lib.DEG_VERSION_PATCH}"


def version():
    """Run-time libdeg version string, e.g. "0.2.0"."""
    return ffi.string(lib.deg_version()).decode()


def runtime_info():
    """The runtime as a dict: libdeg version, BLIS kernel set ("blas_arch"),
    how it was chosen, thread count (deg_runtime_info())."""
    return json.loads(ffi.string(lib.deg_runtime_info()).decode())


def blas_arch():
    """Name of the BLIS kernel set in use ("skx", "zen3", "haswell", ...)."""
    return ffi.string(lib.deg_blas_arch()).decode()


def set_num_threads(n):
    """Threads used by compute kernels (n <= 0: the default, the machine's
    cores). Returns the previous value."""
    return lib.deg_set_num_threads(int(n))
