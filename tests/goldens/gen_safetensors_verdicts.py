"""Write the safetensors reader cases and the reference's verdicts.

Each case is a small file tests/goldens/safetensors_verdicts/<name>.safetensors;
verdicts.json maps name -> {"ok": bool, "error": "<reference message>"} as the
`safetensors` package (Hugging Face, Rust core) decides it when it deserializes
the file (safetensors.safe_open over the file, every tensor read).
tests/c/test_safetensors.c (st_ref) asserts libdeg's reader gives the same
ok / not ok for every file. Regenerate:

    python -m venv /tmp/st && /tmp/st/bin/pip install safetensors==0.8.0 numpy
    /tmp/st/bin/python tests/goldens/gen_safetensors_verdicts.py
"""
import json
import os
import struct

import safetensors
from safetensors import safe_open

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "safetensors_verdicts")


def f32(name, begin, end, shape=None):
    n = (end - begin) // 4
    return name, {"dtype": "F32", "shape": shape if shape is not None else [n],
                  "data_offsets": [begin, end]}


def build(tensors, data_len, metadata=None, pad=0, header_text=None):
    hdr = dict(tensors)
    if metadata is not None:
        hdr["__metadata__"] = metadata
    text = header_text if header_text is not None else json.dumps(hdr)
    text = text.encode() + b" " * pad
    return struct.pack("<Q", len(text)) + text + bytes(i % 251 for i in range(data_len))


CASES = {
    "contiguous": build([f32("a", 0, 8), f32("b", 8, 12)], 12),
    "contiguous_padded_header": build([f32("a", 0, 8)], 8, pad=5),
    "gap_between": build([f32("a", 0, 8), f32("b", 12, 16)], 16),
    "trailing_bytes": build([f32("a", 0, 8)], 12),
    "first_not_zero": build([f32("a", 4, 12)], 12),
    "overlap": build([f32("a", 0, 8), f32("b", 4, 12)], 12),
    "empty_inside_other": build([f32("a", 0, 8), f32("b", 4, 4, [0]), f32("c", 8, 12)], 12),
    "empty_at_boundary": build([f32("a", 0, 8), f32("b", 8, 8, [0]), f32("c", 8, 12)], 12),
    "empty_only": build([f32("a", 0, 0, [0])], 0),
    "empty_only_trailing": build([f32("a", 0, 0, [0])], 4),
    "no_tensors": build([], 0),
    "no_tensors_trailing": build([], 8),
    "metadata_only": build([], 0, metadata={"format": "pt"}),
    "unsorted_header": build([f32("b", 8, 12), f32("a", 0, 8)], 12),
    "size_mismatch": build([f32("a", 0, 8, [3])], 8),
}


def verdict(path):
    try:
        with safe_open(path, framework="numpy") as f:
            for k in f.keys():
                f.get_tensor(k)
        return {"ok": True}
    except Exception as e:  # noqa: BLE001 - the reference's verdict
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}


def main():
    os.makedirs(OUT, exist_ok=True)
    verdicts = {}
    for name, data in CASES.items():
        path = os.path.join(OUT, name + ".safetensors")
        with open(path, "wb") as f:
            f.write(data)
        verdicts[name] = verdict(path)
    with open(os.path.join(OUT, "verdicts.json"), "w") as f:
        json.dump({"generator": f"safetensors {safetensors.__version__}", "cases": verdicts}, f,
                  indent=1, sort_keys=True)
        f.write("\n")
    for k, v in verdicts.items():
        print(f"{k:28s} {v}")


if __name__ == "__main__":
    main()
