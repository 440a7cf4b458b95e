"""Copy some head kinds of one checkpoint over another's trained heads.

    keep_heads.py RUN_DIR FROM_CKPT OUT_DIR KINDS NOTE [KEY]

Writes OUT_DIR/heads.safetensors = RUN_DIR's heads with every tensor whose
kind (name before the first '.') is in KINDS (comma-separated, e.g.
"count,anchor") taken byte for byte from FROM_CKPT, and OUT_DIR/deg.json =
RUN_DIR's with the new heads_sha256, training[KEY] = NOTE (KEY default
"kept_heads"; train-v4 wrote "count_anchor_heads") and, for each kept kind
with a calibration temperature, FROM_CKPT's temperature: a temperature
belongs to the head it was fit on (train-v4/v5 keep count, whose temperature
is 1.0 in every checkpoint, so their outputs are unchanged by this rule).
Why (train-v4, train-v5): a count head trained on datagen v2 lets its
saturated top class (63) win on some documents; the older heads do not.
"""
import hashlib
import json
import os
import struct
import sys


def read(path):
    b = open(os.path.join(path, "heads.safetensors"), "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    return b, 8 + n, json.loads(b[8:8 + n])


def main(run, src, out, kinds, note, key="kept_heads"):
    kinds = kinds.split(",")
    new, base, hdr = read(run)
    old, obase, ohdr = read(src)
    heads = bytearray(new)
    for name, t in hdr.items():
        if name.split(".")[0] in kinds:
            s, e = t["data_offsets"]
            os_, oe = ohdr[name]["data_offsets"]
            assert ohdr[name]["shape"] == t["shape"] and e - s == oe - os_, name
            heads[base + s:base + e] = old[obase + os_:obase + oe]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "heads.safetensors"), "wb") as f:
        f.write(heads)
    meta = json.load(open(os.path.join(run, "deg.json")))
    meta["heads_sha256"] = hashlib.sha256(heads).hexdigest()
    src_cal = json.load(open(os.path.join(src, "deg.json"))).get("calibration", {})
    for kind in kinds:
        if kind in meta.get("calibration", {}) and kind in src_cal:
            meta["calibration"][kind] = src_cal[kind]
    meta["training"][key] = note
    with open(os.path.join(out, "deg.json"), "w") as f:
        f.write(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    main(*sys.argv[1:])
