"""scripts/train/keep_heads.py: the kept kinds' tensors come byte for byte from
the source checkpoint, with their calibration temperatures; everything else is
the run's."""
import hashlib
import importlib.util
import json
import os
import struct

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _module():
    spec = importlib.util.spec_from_file_location(
        "keep_heads", os.path.join(ROOT, "scripts", "train", "keep_heads.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def _write(d, tensors, calibration):
    os.makedirs(d, exist_ok=True)
    hdr, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        b = np.asarray(arr, dtype="<f4").tobytes()
        hdr[name] = {"dtype": "F32", "shape": list(np.shape(arr)), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(hdr).encode()
    with open(os.path.join(d, "heads.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    with open(os.path.join(d, "deg.json"), "w") as f:
        json.dump({"calibration": calibration, "training": {}}, f)


def _tensor(d, name):
    b = open(os.path.join(d, "heads.safetensors"), "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    t = json.loads(b[8:8 + n])[name]
    s, e = t["data_offsets"]
    return np.frombuffer(b[8 + n + s:8 + n + e], dtype="<f4")


def test_kept_kinds_and_their_temperatures_come_from_the_source(tmp_path):
    run, src, out = (str(tmp_path / x) for x in ("run", "src", "out"))
    _write(run, {"noul.w": [1.0, 2.0], "count.w": [3.0, 4.0, 5.0]},
           {"noul": 2.5, "count": 1.0, "extract": 3.0})
    _write(src, {"noul.w": [-1.0, -2.0], "count.w": [-3.0, -4.0, -5.0]},
           {"noul": 0.7, "count": 1.0, "extract": 9.0})
    _module().main(run, src, out, "noul", "noul from src")
    assert _tensor(out, "noul.w").tolist() == [-1.0, -2.0]
    assert _tensor(out, "count.w").tolist() == [3.0, 4.0, 5.0]
    meta = json.load(open(os.path.join(out, "deg.json")))
    assert meta["calibration"] == {"noul": 0.7, "count": 1.0, "extract": 3.0}
    assert meta["training"]["kept_heads"] == "noul from src"
    heads = open(os.path.join(out, "heads.safetensors"), "rb").read()
    assert meta["heads_sha256"] == hashlib.sha256(heads).hexdigest()
