#!/usr/bin/env python3
"""safetensors goldens written by the reference implementation (the
`safetensors` package; torch only to create bf16 tensors):

  safetensors/py_all.safetensors + py_all.json: one tensor of every dtype deg
      reads (incl. a 0-d scalar and an empty tensor) and two metadata keys;
      the JSON lists dtype, shape and values for the C test to compare.
  safetensors/py_writer_ref.safetensors: tensors given by simple formulas
      that tests/c/test_safetensors.c rebuilds with deg's writer; the two
      files must be byte-identical (so Python reads what deg writes).
  safetensors/sharded/: a two-shard checkpoint with a Hugging Face style
      model.safetensors.index.json.

Run: /tmp/venv/bin/python tests/goldens/gen_safetensors.py
"""
import json
import os

import torch
from safetensors import safe_open
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "safetensors")


def writer_ref_tensors():
    # Must match build_writer_ref() in tests/c/test_safetensors.c.
    return {
        "w.f32": (torch.arange(12, dtype=torch.float32) * 0.25 - 1.0).reshape(3, 4),
        "b.f16": (torch.arange(5, dtype=torch.float32) * 0.5 - 1.0).to(torch.float16),
        "z.bf16": (torch.arange(4, dtype=torch.float32) * 1.5).to(torch.bfloat16).reshape(2, 2),
        "e.i64": torch.tensor([-3, 1 << 40], dtype=torch.int64),
        "d.f64": torch.tensor([0.125, -2.0], dtype=torch.float64),
        "i.i32": torch.tensor([[7], [-7]], dtype=torch.int32),
        "h.i16": torch.tensor([300, -300, 1], dtype=torch.int16),
        "c.i8": torch.tensor([-128, 127], dtype=torch.int8),
        "u.u8": torch.tensor([0, 255, 9], dtype=torch.uint8),
        "flag": torch.tensor([True, False], dtype=torch.bool),
        "empty": torch.zeros((0, 3), dtype=torch.float32),
        "scalar": torch.tensor(2.5, dtype=torch.float32),
        "a.f32": torch.tensor([1.0], dtype=torch.float32),
    }


def values(t):
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.to(torch.float64)
    return t.reshape(-1).tolist()


def main():
    os.makedirs(os.path.join(OUT, "sharded"), exist_ok=True)
    g = torch.Generator().manual_seed(7)
    allt = {
        "model.embed.weight": torch.randn(4, 3, generator=g),
        "half": torch.randn(2, 5, generator=g).to(torch.float16),
        "brain": torch.randn(3, 2, generator=g).to(torch.bfloat16),
        "double": torch.randn(3, generator=g, dtype=torch.float64),
        "i8": torch.tensor([-1, 2, -3], dtype=torch.int8),
        "i16": torch.tensor([[-1000, 2000]], dtype=torch.int16),
        "i32": torch.tensor([123456789, -5], dtype=torch.int32),
        "i64": torch.tensor([-(1 << 50)], dtype=torch.int64),
        "u8": torch.tensor([1, 200], dtype=torch.uint8),
        "mask": torch.tensor([[True, False, True]], dtype=torch.bool),
        "scalar": torch.tensor(-0.75),
        "empty": torch.zeros(0),
        "x.4d": torch.randn(1, 2, 3, 2, generator=g),
    }
    p = os.path.join(OUT, "py_all.safetensors")
    save_file(allt, p, metadata={"format": "pt", "note": 'ünï/"q"'})
    desc = {}
    with safe_open(p, framework="pt") as f:
        for k in f.keys():
            t = f.get_tensor(k)
            desc[k] = {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
                       "values": values(t)}
    with open(os.path.join(OUT, "py_all.json"), "w") as fh:
        json.dump(desc, fh, indent=1, sort_keys=True)

    save_file(writer_ref_tensors(), os.path.join(OUT, "py_writer_ref.safetensors"),
              metadata={"format": "pt"})

    shard1 = {"model.layers.0.w": torch.arange(6, dtype=torch.float32).reshape(2, 3),
              "model.norm": torch.ones(3, dtype=torch.bfloat16)}
    shard2 = {"lm_head.weight": torch.arange(4, dtype=torch.float16).reshape(2, 2)}
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    save_file(shard1, os.path.join(OUT, "sharded", names[0]), metadata={"format": "pt"})
    save_file(shard2, os.path.join(OUT, "sharded", names[1]), metadata={"format": "pt"})
    wm = {k: names[0] for k in shard1} | {k: names[1] for k in shard2}
    total = sum(t.numel() * t.element_size() for t in (shard1 | shard2).values())
    with open(os.path.join(OUT, "sharded", "model.safetensors.index.json"), "w") as fh:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(wm.items()))}, fh,
                  indent=2)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
