#!/usr/bin/env python3
"""Write tests/goldens/render_cases.json: contexts and their §7.1 rendering as Python
writes it (json.dumps(value, ensure_ascii=False), default ", " / ": " separators), plus
the canonical form (sort_keys=True, separators=(",", ":")) used for fingerprints.

The independent implementation is CPython's json module. Inputs are JSON texts (so key
order and the integer/float distinction are what the C side parses).
Run: /tmp/venv/bin/python tests/goldens/gen_render_cases.py
"""
import json
import math
import random
import struct
from pathlib import Path

OUT = Path(__file__).resolve().parent / "render_cases.json"
rng = random.Random(20261130)

values = [
    "plain string context", "", "é ü 日本語 🙂", "line\nbreak\ttab\r\x01\x1f\x7f \"q\" \\ /",
    {"b": 1, "a": 2}, {"z": {"y": [1, 2, {"x": None}]}, "é": "ü"}, [], {}, [[]], [{}],
    {"ints": [0, -1, 9007199254740993, -9223372036854775808, 9223372036854775807]},
    {"floats": [0.0, -0.0, 1.0, 100.0, 1e-05, 1e16, 1.5e16, 0.1, 1 / 3, 2.5e-7, 1e22,
                123456789012345678.0, 1e15, 0.0001, 0.00012, 5e-324, 1.7976931348623157e308,
                -2.2250738585072014e-308, 12345.678]},
    {"bools": [True, False, None]}, {"nested": {"a": {"b": {"c": {"d": {"e": "deep"}}}}}},
    {"key with \"quotes\"": "v", "tab\tkey": "w", "ctl\u0002": 1},
    ["mixed", 1, 2.5, True, None, {"k": []}],
    {"order": {"10": 1, "2": 2, "1": 3, "b": 4, "B": 5, "é": 6, "a": 7}},
    {"big": [2**63, -2**63 - 1, 10**40, -(10**60), 2**64 + 1, 12345678901234567890]},
    10**30, [["nested", [[9223372036854775808]]]],
    {"dup": 1, "x": "has \"1e999\" and 12345678901234567890123 inside a string"},
]
# random doubles across the whole range (bit patterns) and "human" decimals
for _ in range(300):
    bits = rng.getrandbits(64)
    x = struct.unpack("<d", struct.pack("<Q", bits))[0]
    if math.isfinite(x):
        values.append([x])
for _ in range(200):
    values.append([round(rng.uniform(-1e6, 1e6), rng.randint(0, 8)),
                   rng.randint(-10**12, 10**12) / 10 ** rng.randint(0, 12)])
for e in range(-330, 310, 7):
    values.append([float(f"1e{e}"), float(f"3.14159e{e}")])

cases = []
for v in values:
    text = json.dumps(v, ensure_ascii=True)
    if isinstance(v, int):
        text = str(v)
    cases.append({"json": text,
                  "render": v if isinstance(v, str) else json.dumps(v, ensure_ascii=False),
                  "canonical": json.dumps(v, ensure_ascii=False, sort_keys=True,
                                          separators=(",", ":"))})
OUT.write_text(json.dumps({"about": "json.dumps renderings by CPython; written by "
                           "tests/goldens/gen_render_cases.py", "cases": cases},
                          ensure_ascii=False, indent=0) + "\n")
print(f"{len(cases)} cases -> {OUT}")
