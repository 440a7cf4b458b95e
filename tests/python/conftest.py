"""Fixtures for the deg Python tests.

The real-model tests use $DEG_MODEL or the default model in the cache
(scripts/run-tests fetches it) and skip with the reason otherwise.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

import deg
from deg._native import has

ROOT = Path(__file__).resolve().parents[2]

# Property tests draw the same examples on every run (CI must not pass or
# fail by luck); set HYPOTHESIS_PROFILE=explore to search new examples.
settings.register_profile("repeatable", derandomize=True, deadline=None,
                          database=None)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def needs(*names):
    """Skip unless libdeg provides all the named C functions."""
    missing = [n for n in names if not has(n)]
    return pytest.mark.skipif(bool(missing),
                              reason=f"libdeg does not implement {', '.join(missing)} yet")


def _model_path():
    env = os.environ.get("DEG_MODEL")
    if env:
        return Path(env)
    p = deg.default_model_path(check=False)
    return p if p.is_file() else None


@pytest.fixture(scope="session")
def model_path():
    p = _model_path()
    if p is None or not p.exists():
        pytest.skip("default model not fetched: run ./scripts/fetch-model "
                    "(scripts/run-tests does) or set DEG_MODEL")
    if not has("deg_model_load"):
        pytest.skip("libdeg does not implement deg_model_load yet")
    return p


@pytest.fixture(scope="session")
def model(model_path):
    m = deg.load_model(model_path)
    yield m
    m.close()


def run_cli(*args, env=None, check=True):
    """Run `python -m deg.cli ARGS` (the same code as the `deg` script)."""
    e = dict(os.environ)
    e.update(env or {})
    res = subprocess.run([sys.executable, "-m", "deg.cli", *map(str, args)],
                         capture_output=True, text=True, env=e, timeout=600)
    if check and res.returncode != 0:
        raise AssertionError(f"deg {' '.join(map(str, args))} exited {res.returncode}:\n"
                             f"{res.stdout}\n{res.stderr}")
    return res


def built_tool(name, env):
    """The path of tools/NAME as the library's Meson build made it ($env, else
    build-tests/ or build/); skips the test when it is not built."""
    cands = [os.environ.get(env)] + [str(ROOT / d / "tools" / name)
                                     for d in ("build-tests", "build")]
    for c in cands:
        if c and os.access(c, os.X_OK):
            return c
    pytest.skip(f"tools/{name} is not built (meson -Dtests=true, build-tests/)")
