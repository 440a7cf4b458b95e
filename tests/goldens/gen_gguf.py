#!/usr/bin/env python3
"""Write tests/goldens/gguf/small.gguf with gguf-py's GGUFWriter: metadata of
every GGUF value type (arrays and nested arrays included) and one tensor of
each dtype deg reads. For each tensor T a companion F32 tensor "T.expected"
holds gguf-py's own dequantization (gguf.quants.dequantize), so the C test
(tests/c/test_gguf.c) checks every value against an independent reader.

Run: /tmp/venv/bin/python tests/goldens/gen_gguf.py
"""
import os

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q, GGUFValueType as V

from gen_dequant import random_blocks

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "gguf", "small.gguf")


def main():
    rng = np.random.default_rng(20261130)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    w = gguf.GGUFWriter(OUT, arch="llama")  # writes general.architecture
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -2000000000)
    w.add_float32("t.f32", 0.15625)
    w.add_bool("t.bool_true", True)
    w.add_bool("t.bool_false", False)
    w.add_string("t.str", "héllo wörld ✓")
    w.add_key_value("t.empty_str", "", V.STRING)  # add_string skips empty values
    w.add_uint64("t.u64", 18000000000000000000)
    w.add_int64("t.i64", -9000000000000000000)
    w.add_float64("t.f64", 2.718281828459045)
    w.add_key_value("t.arr_u8", [1, 2, 255], V.ARRAY, sub_type=V.UINT8)
    w.add_key_value("t.arr_i16", [-1, 2, -300], V.ARRAY, sub_type=V.INT16)
    w.add_array("t.arr_i32", [7, -8, 9, 10])
    w.add_key_value("t.arr_u64", [1, 2**40], V.ARRAY, sub_type=V.UINT64)
    w.add_array("t.arr_f32", [0.5, -1.25])
    w.add_key_value("t.arr_f64", [0.1], V.ARRAY, sub_type=V.FLOAT64)
    w.add_key_value("t.arr_bool", [True, False, True], V.ARRAY, sub_type=V.BOOL)
    w.add_array("t.arr_str", ["a", "", "Ġthe", "日本語"])
    w.add_array("t.arr_nested", [[1, 2, 3], [4], [5, 6]])
    w.add_array("t.arr_nested_str", [["x", "yy"], ["zzz"]])
    w.add_custom_alignment(64)  # sets general.alignment and pads data to 64
    w.add_uint32("t.after_arrays", 12345)  # read correctly only if arrays were skipped right

    tensors = []
    # plain types: (name, numpy dtype, shape)
    f32 = rng.standard_normal((3, 5)).astype(np.float32)
    tensors.append(("w.f32", f32, None))
    f16 = rng.standard_normal((2, 8)).astype(np.float16)
    tensors.append(("w.f16", f16, None))
    bf16_src = rng.standard_normal((4, 4)).astype(np.float32)
    bf16 = gguf.quants.quantize(bf16_src, Q.BF16)  # uint8 bytes
    tensors.append(("w.bf16", bf16, Q.BF16))
    for qt, rows in ((Q.Q8_0, 2), (Q.Q4_0, 3), (Q.Q4_1, 2), (Q.Q4_K, 2), (Q.Q6_K, 2)):
        block_elems, _ = gguf.GGML_QUANT_SIZES[qt]
        row_elems = 2 * block_elems if block_elems == 32 else block_elems
        blocks = random_blocks(rng, qt, rows * row_elems // block_elems)
        raw = blocks.reshape(rows, -1)
        tensors.append(("w." + qt.name.lower(), raw, qt))
    tensors.append(("w.i8", np.array([-128, 0, 127], dtype=np.int8), None))
    tensors.append(("w.i16", np.array([[-32768, 1], [2, 32767]], dtype=np.int16), None))
    tensors.append(("w.i32", np.array([-5, 6, 2**31 - 1], dtype=np.int32), None))
    tensors.append(("w.i64", np.array([-(2**62), 3], dtype=np.int64), None))
    tensors.append(("w.f64", np.array([1.0 / 3.0, -2.5], dtype=np.float64), None))
    tensors.append(("w.3d", rng.standard_normal((2, 3, 4)).astype(np.float32), None))
    # added later, last: the tensors above keep their random data
    for qt in (Q.Q5_0, Q.Q5_1):
        raw = random_blocks(rng, qt, 2 * 2).reshape(2, -1)
        tensors.append(("w." + qt.name.lower(), raw, qt))

    for name, arr, raw in tensors:
        if raw is None:
            w.add_tensor(name, arr)
        else:
            w.add_tensor(name, arr, raw_dtype=raw)
        if name in ("w.i8", "w.i16", "w.i32", "w.i64"):
            continue
        deq = gguf.quants.dequantize(arr, raw) if raw is not None else arr.astype(np.float32)
        w.add_tensor(name + ".expected", np.ascontiguousarray(deq, dtype=np.float32))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote", OUT, os.path.getsize(OUT), "bytes")

    # Independent read-back with gguf-py's reader as a sanity check.
    r = gguf.GGUFReader(OUT)
    assert int(r.fields["t.after_arrays"].parts[-1][0]) == 12345
    for t in r.tensors:
        print(f"  {t.name:16s} {t.tensor_type.name:5s} shape(ne)={list(t.shape)} offset={t.data_offset}")


if __name__ == "__main__":
    main()
