"""The installed package matches the source tree and the binding covers deg.h."""
import re
from pathlib import Path

import deg
from conftest import ROOT


def test_every_source_module_is_installed():
    src = ROOT / "bindings" / "python" / "deg"
    installed = Path(deg.__file__).parent
    missing = [str(p.relative_to(src)) for p in src.rglob("*.py")
               if not (installed / p.relative_to(src)).is_file()]
    assert not missing, ("listed in no py.install_sources: add them to "
                         f"bindings/python/meson.build: {missing}")


def test_extension_is_self_contained():
    # libdeg is linked statically into the extension: no libdeg.so needed.
    from deg import _deg_cffi
    maps = Path("/proc/self/maps").read_text() if Path("/proc/self/maps").exists() else ""
    assert "libdeg.so" not in maps
    assert Path(_deg_cffi.__file__).suffix == ".so"


def test_binding_declares_the_header_constants():
    from deg._native import lib
    header = (ROOT / "include" / "deg_runtime.h").read_text()
    for name, value in re.findall(r"\b(DEG_ERR_\w+)\s*=\s*(-?\d+)", header):
        assert getattr(lib, name) == int(value)
