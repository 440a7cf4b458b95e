#!/usr/bin/env python3
"""Dequantization goldens from gguf-py (gguf.quants.dequantize), an
independent implementation of the ggml block formats.

For each type T in F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q6_K it writes
tests/goldens/dequant/T.raw (random but valid blocks: random quant bits, sane
f16 scales) and T.f32 (little-endian f32 values). F16/BF16 also cover
subnormals, infinities and NaN. f32_to_f16.bin / f32_to_bf16.bin hold f32
inputs (including exact halfway cases) followed by the rounded 16-bit values
numpy (astype(float16)) and gguf-py (BF16 quantize) produce.

Run: /tmp/venv/bin/python tests/goldens/gen_dequant.py
"""
import os

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "dequant")


def sane_f16(rng, n, lo=1e-3, hi=2.0, signed=True):
    mag = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
    if signed:
        mag *= rng.choice([-1.0, 1.0], n)
    return mag.astype(np.float16).view(np.uint8).reshape(n, 2)


def random_blocks(rng, qt, n_blocks):
    """n_blocks valid blocks of qt as a uint8 array [n_blocks, type_size]."""
    _, size = gguf.GGML_QUANT_SIZES[qt]
    b = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    if qt in (Q.Q8_0, Q.Q4_0):
        b[:, 0:2] = sane_f16(rng, n_blocks)
    elif qt in (Q.Q4_1, Q.Q5_1):
        b[:, 0:2] = sane_f16(rng, n_blocks, signed=False)
        b[:, 2:4] = sane_f16(rng, n_blocks)
    elif qt == Q.Q5_0:
        b[:, 0:2] = sane_f16(rng, n_blocks)
    elif qt == Q.Q4_K:
        b[:, 0:2] = sane_f16(rng, n_blocks, 1e-4, 0.05, signed=False)  # d
        b[:, 2:4] = sane_f16(rng, n_blocks, 1e-4, 0.05, signed=False)  # dmin
    elif qt == Q.Q6_K:
        b[:, 208:210] = sane_f16(rng, n_blocks, 1e-4, 0.05)
    return b


def main():
    rng = np.random.default_rng(12345)
    os.makedirs(OUT, exist_ok=True)
    for qt, n_blocks in ((Q.Q8_0, 8), (Q.Q4_0, 8), (Q.Q4_1, 8), (Q.Q4_K, 3), (Q.Q6_K, 3)):
        raw = random_blocks(rng, qt, n_blocks)
        deq = gguf.quants.dequantize(raw, qt).astype(np.float32)
        raw.tofile(os.path.join(OUT, qt.name + ".raw"))
        deq.astype("<f4").tofile(os.path.join(OUT, qt.name + ".f32"))

    # F16 / BF16: random bit patterns plus specials (zeros, subnormals, inf, NaN)
    specials = np.array([0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0xFC00,
                         0x7E00, 0x7C01, 0x3C00, 0xBC00], dtype=np.uint16)
    for qt in (Q.F16, Q.BF16):
        bits = np.concatenate([specials, rng.integers(0, 65536, 500, dtype=np.uint16)])
        if qt == Q.F16:
            deq = bits.view(np.float16).astype(np.float32)
        else:
            deq = gguf.quants.dequantize(bits.view(np.uint8), Q.BF16).astype(np.float32)
        bits.astype("<u2").tofile(os.path.join(OUT, qt.name + ".raw"))
        deq.astype("<f4").tofile(os.path.join(OUT, qt.name + ".f32"))

    # f32 -> f16 / bf16 rounding (round to nearest even)
    vals = [0.0, -0.0, 1.0, 65504.0, 65519.99, 65520.0, 1e6, -1e6, 6.1e-5, 5.96e-8,
            2.98e-8, 2.99e-8, 1e-10, np.inf, -np.inf, 1.0009765625 / 2 + 0.5]
    # exact halfway cases between adjacent halves (both parities)
    for k in range(0, 40):
        h = np.uint16(0x3C00 + k)
        a = np.float32(np.array([h], dtype=np.uint16).view(np.float16)[0])
        b = np.float32(np.array([h + 1], dtype=np.uint16).view(np.float16)[0])
        vals.append((a + b) / 2)
    x = np.concatenate([np.array(vals, dtype=np.float32),
                        rng.standard_normal(300).astype(np.float32) * np.float32(100),
                        (rng.standard_normal(100) * 1e-5).astype(np.float32)])
    x.astype("<f4").tofile(os.path.join(OUT, "f32_in.f32"))
    with np.errstate(over="ignore"):
        f16 = x.astype(np.float16)
    f16.view(np.uint16).astype("<u2").tofile(os.path.join(OUT, "f32_to_f16.u16"))
    gguf.quants.quantize(x, Q.BF16).view(np.uint16).astype("<u2").tofile(
        os.path.join(OUT, "f32_to_bf16.u16"))
    # Q5_0 / Q5_1 (added later: their own generator, so the files above keep
    # their bytes)
    rng5 = np.random.default_rng(555)
    for qt in (Q.Q5_0, Q.Q5_1):
        raw = random_blocks(rng5, qt, 8)
        deq = gguf.quants.dequantize(raw, qt).astype(np.float32)
        raw.tofile(os.path.join(OUT, qt.name + ".raw"))
        deq.astype("<f4").tofile(os.path.join(OUT, qt.name + ".f32"))
    print("wrote goldens to", OUT)


if __name__ == "__main__":
    main()
