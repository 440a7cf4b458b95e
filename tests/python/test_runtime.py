"""Versions, runtime description, exceptions and their C messages."""
import re
from pathlib import Path

import pytest

import deg
from conftest import ROOT, needs


def test_version_matches_header_and_VERSION_file():
    v = deg.version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", v)
    assert v == deg.HEADER_VERSION == deg.__version__
    assert v == (ROOT / "VERSION").read_text().strip()


@needs("deg_runtime_info", "deg_blas_arch")
def test_runtime_info_reports_blas_kernel_set():
    info = deg.runtime_info()
    assert isinstance(info, dict)
    assert info["version"] == deg.version()
    arch = deg.blas_arch()
    assert arch and info["blas_arch"] == arch  # the kernel set, e.g. "haswell", "skx"
    assert info["blas_arch_source"] in ("env", "auto", "blis")  # user, CPU probe, BLIS itself
    assert info["threads"] >= 1


def test_blis_arch_env_is_respected():
    # A kernel set chosen by the user (BLIS_ARCH_TYPE) is kept and reported as "env".
    import subprocess
    import sys
    if not hasattr(deg._native.lib, "deg_runtime_info"):
        pytest.skip("libdeg does not implement deg_runtime_info yet")
    code = "import deg, json; print(json.dumps(deg.runtime_info()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "BLIS_ARCH_TYPE": "generic"},
                         check=True).stdout
    import json
    info = json.loads(out)
    assert info["blas_arch"] == "generic" and info["blas_arch_source"] == "env"


@needs("deg_set_num_threads")
def test_set_num_threads_returns_previous():
    prev = deg.set_num_threads(1)
    assert prev >= 1
    assert deg.set_num_threads(prev) == 1


def test_exception_hierarchy():
    for cls in (deg.DegIOError, deg.FormatError, deg.UnsupportedError, deg.Utf8Error,
                deg.RangeError, deg.StateError, deg.SchemaError, deg.FillError,
                deg.ArgumentError, deg.ModelNotFoundError):
        assert issubclass(cls, deg.DegError)
    assert issubclass(deg.DegIOError, OSError)
    assert issubclass(deg.FormatError, ValueError)
    assert deg.SchemaError("bad", errors=[{"path": "/x"}]).errors == [{"path": "/x"}]
    e = deg.FormatError("gguf: bad magic", -3)
    assert str(e) == "gguf: bad magic" and e.status == -3
    assert e.status_name == "DEG_ERR_FORMAT"


def test_status_names_match_the_c_library():
    from deg._native import ffi, lib
    from deg.errors import _BY_STATUS
    for status, cls in _BY_STATUS.items():
        assert ffi.string(lib.deg_status_name(status)).decode() == cls.status_name


def test_every_c_status_has_its_exception_class():
    # the table comes from the generated constants: a status added to deg_runtime.h
    # without a class fails here, and no class carries a number of its own
    from deg._native import lib
    from deg.errors import _BY_STATUS
    codes = {getattr(lib, n): n for n in dir(lib) if n.startswith("DEG_ERR_")}
    assert len(codes) == 16
    assert {s: c.status_name for s, c in _BY_STATUS.items()} == codes


@needs("deg_model_load")
def test_missing_file_raises_io_error_with_c_message(tmp_path):
    path = tmp_path / "no-such-model.gguf"
    with pytest.raises(deg.DegIOError) as ei:
        deg.load_model(path)
    assert ei.value.status == -2
    assert str(path) in str(ei.value)  # the C message names the file


@needs("deg_model_load")
def test_garbage_file_raises_format_error_with_c_message(tmp_path):
    path = tmp_path / "garbage.gguf"
    path.write_bytes(b"this is not a model file at all" * 100)
    with pytest.raises(deg.FormatError) as ei:
        deg.load_model(path)
    assert ei.value.status == -3
    assert len(str(ei.value)) > 10


@needs("deg_model_load")
def test_truncated_gguf_raises_format_error(tmp_path, model_path):
    path = tmp_path / "truncated.gguf"
    with open(model_path, "rb") as f:
        path.write_bytes(f.read(4096))
    with pytest.raises(deg.FormatError):
        deg.load_model(path)


def test_default_model_path_errors_clearly(tmp_path, monkeypatch):
    monkeypatch.setenv("DEG_CACHE", str(tmp_path))
    with pytest.raises(deg.ModelNotFoundError) as ei:
        deg.default_model_path()
    assert "fetch-model" in str(ei.value)
    p = deg.default_model_path(check=False)
    assert p == Path(tmp_path) / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_fetch_model_is_idempotent_when_present(tmp_path, monkeypatch, model_path):
    # A present file with the right hash is kept as is (no download).
    monkeypatch.setenv("DEG_CACHE", str(tmp_path))
    dest = deg.default_model_path(check=False)
    dest.parent.mkdir(parents=True)
    dest.symlink_to(Path(model_path).resolve())
    assert deg.fetch_model(verbose=False) == dest
    assert dest.is_symlink()


def test_every_integer_define_of_the_headers_is_bound():
    # read independently of gen_cffi: `#define NAME <integer>` with anything after it
    from deg._native import lib
    want = {}
    for h in ("deg_runtime.h", "deg_schema.h", "deg_fill.h", "deg_train.h", "cartridge.h",
              "lora.h"):
        for m in re.finditer(r"^#define\s+(\w+)\s+(-?\d+)\b", (ROOT / "include" / h).read_text(),
                             re.M):
            want[m.group(1)] = int(m.group(2))
    assert {"DEG_HEAD_CHOICE", "DEG_HEAD_EXTRACT_ANCHORED", "DEG_TRAIN_WEIGHTS",
            "DEG_LORA_ALL"} <= set(want)
    missing = {k: v for k, v in want.items() if getattr(lib, k, None) != v}
    assert not missing


def test_weight_modes(monkeypatch):
    """load_model(weights=...): the F16 tiny model is held as 16-bit blocks in
    the native modes (the default: native; F16 has f32 dots in both) and as f32 with "f32"
    (twice the matrix bytes); native-f32act's logits are f32's up to
    summation order; an unknown mode is an ArgumentError, and DEG_WEIGHTS
    picks the mode when weights is None."""
    path = ROOT / "tests" / "goldens" / "tiny-qwen3-untied"  # F16 safetensors
    ids = [5, 17, 3, 99, 42, 7]
    monkeypatch.delenv("DEG_WEIGHTS", raising=False)
    got = {}
    for mode in (None, "native-f32act", "f32", "native"):
        with deg.load_model(path, weights=mode) as m:
            got[mode] = (m.info.weight_bytes, m.trunk().prefill(ids, logits="all"))
    assert got[None][0] == got["native-f32act"][0] == got["native"][0]
    assert got[None][1].tobytes() == got["native"][1].tobytes()  # the default
    assert got["f32"][0] > 1.5 * got["native-f32act"][0]
    diff = max(abs(a - b) for a, b in zip(got["f32"][1], got["native-f32act"][1]))
    assert diff < 1e-4
    monkeypatch.setenv("DEG_WEIGHTS", "f32")
    with deg.load_model(path) as m:
        assert m.info.weight_bytes == got["f32"][0]
    monkeypatch.setenv("DEG_WEIGHTS", "f33")
    with pytest.raises(deg.ArgumentError, match="DEG_WEIGHTS='f33'"):
        deg.load_model(path)
    with pytest.raises(deg.ArgumentError, match="weights='q4'"):
        deg.load_model(path, weights="q4")
