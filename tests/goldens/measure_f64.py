#!/usr/bin/env python3
"""Measure where deg's logits on the tiny goldens differ from transformers':
deg (tests/goldens/probe_layers.c), transformers f32 (the saved goldens) and
transformers f64 (model.double(), the reference), per check and per layer.

Usage: /tmp/lora-torch/bin/python tests/goldens/measure_f64.py PROBE [model ...]
(PROBE: build-tests/tests/probe_layers, built with the C tests; needs torch and
transformers 5.x). Prints, per model, each prefill sequence and the max over
each check (prefill, chunked prefill = one shot, decode, forks) of |deg -
transformers f32|, |deg - transformers f64|, |transformers f32 - f64|, then
the hidden states after each layer on the sequence where deg is farthest from
f64 (transformers' hidden_states against the probe's rows).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
ALL = ["tiny-llama", "tiny-llama-tied", "tiny-qwen3", "tiny-qwen3-untied", "tiny-lfm2",
       "tiny-qwen3_5", "tiny-qwen3_5-vl", "tiny-gemma4", "tiny-gemma4-kvshare",
       "tiny-gemma4-moe", "tiny-lfm2-wc", "tiny-qwen3_5-wc", "tiny-gemma4-wc"]


def hf_model(d, dtype):
    from transformers import AutoModelForCausalLM, AutoConfig

    cfg = AutoConfig.from_pretrained(d)
    kw = {}
    if getattr(cfg, "enable_moe_block", False):  # grouped_mm has no f64
        kw["experts_implementation"] = "eager"
    if cfg.model_type == "qwen3_5":  # ConditionalGeneration checkpoint: its own class
        from transformers import Qwen3_5ForConditionalGeneration as cls
    else:
        cls = AutoModelForCausalLM
    return cls.from_pretrained(d, dtype=dtype, **kw).eval()


def hf_forward(model, ids, hidden=False):
    with torch.no_grad():
        out = model(torch.tensor([ids]), use_cache=False, output_hidden_states=hidden)
    lg = out.logits[0].double().numpy()
    hs = [h[0].double().numpy() for h in out.hidden_states] if hidden else None
    return lg, hs


def probe(bin_, d, mode, ids, n=None, tmp=None):
    p = os.path.join(tmp, "ids.bin")
    np.asarray(ids, dtype=np.int32).tofile(p)
    out = os.path.join(tmp, "out")
    args = [bin_, d, mode, p, out] + ([str(n)] if n is not None else [])
    subprocess.run(args, check=True, env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    lg = np.fromfile(out + ".logits", dtype=np.float32).astype(np.float64)
    ly = np.fromfile(out + ".layers", dtype=np.float32).astype(np.float64) \
        if mode == "prefill" else None
    return lg, ly


def mx(a, b):
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


def measure(bin_, name, tmp):
    d = os.path.join(HERE, name)
    g = load_file(os.path.join(d, "golden.safetensors"))
    m32, m64 = hf_model(d, torch.float32), hf_model(d, torch.float64)
    V = g["prefill.0.logits"].shape[-1]
    rows = {}

    def add(check, deg, t32, t64):
        r = rows.setdefault(check, [0.0, 0.0, 0.0, 0.0])
        r[0] = max(r[0], mx(deg, t32))
        r[1] = max(r[1], mx(deg, t64))
        r[2] = max(r[2], mx(t32, t64))
        r[3] = max(r[3], float(np.abs(t64).max()))

    worst = (0.0, None)
    for i in range(5):
        k = f"prefill.{i}.ids"
        if k not in g:
            break
        ids = g[k].tolist()
        t32 = g[f"prefill.{i}.logits"].reshape(len(ids), V)
        t64, _ = hf_forward(m64, ids)
        deg, _ = probe(bin_, d, "prefill", ids, None, tmp)
        deg = deg.reshape(len(ids), V)
        add("prefill", deg, t32, t64)
        print(f"  prefill.{i} ({len(ids)} tokens): deg-hf32 {mx(deg, t32):.2e} deg-hf64 "
              f"{mx(deg, t64):.2e} hf32-hf64 {mx(t32, t64):.2e}")
        if mx(deg, t64) > worst[0]:
            worst = (mx(deg, t64), ids)
        if len(ids) > 20:
            ch, _ = probe(bin_, d, "chunked", ids, 7, tmp)
            rows.setdefault("chunked7=oneshot", [mx(ch.reshape(len(ids), V), deg)])
    ids = g["decode.ids"].tolist()
    t64, _ = hf_forward(m64, ids)
    deg, _ = probe(bin_, d, "decode", ids, None, tmp)
    add("decode", deg.reshape(len(ids), V), g["decode.logits"], t64)
    trunk = g["trunk.ids"].tolist()
    for j in range(3):
        fk = g[f"fork.{j}.ids"].tolist()
        t64, _ = hf_forward(m64, trunk + fk)
        deg, _ = probe(bin_, d, "fork", trunk + fk, len(trunk), tmp)
        add("fork", deg.reshape(len(fk), V), g[f"fork.{j}.logits"], t64[len(trunk):])
    print(f"== {name}  (max |logit| {rows['prefill'][3]:.2f})")
    print(f"  {'check':18s} {'deg-hf32':>10s} {'deg-hf64':>10s} {'hf32-hf64':>10s}")
    for c, r in rows.items():
        if len(r) == 1:
            print(f"  {c:18s} {r[0]:10.2e}")
        else:
            print(f"  {c:18s} {r[0]:10.2e} {r[1]:10.2e} {r[2]:10.2e}")
    # per layer, on the prefill sequence where deg is farthest from f64
    ids = worst[1]
    _, h64 = hf_forward(m64, ids, hidden=True)
    _, h32 = hf_forward(m32, ids, hidden=True)
    _, ly = probe(bin_, d, "prefill", ids, None, tmp)
    E = h64[0].shape[-1]
    ly = ly.reshape(-1, len(ids), E)
    nl = ly.shape[0] - 2
    print(f"  per layer (prefill of {len(ids)} tokens): hidden state max |diff|, max |h|")
    # transformers' hidden_states[i] = input of layer i (i < n_layer), the last
    # one = after the final norm; deg's ly[0] = embeddings, ly[il + 1] = after layer il
    for i in range(nl + 1):
        dl = ly[i] if i < nl else ly[nl + 1]
        tag = "embed" if i == 0 else (f"layer {i - 1}" if i < nl else "final norm")
        print(f"    {tag:11s} deg-hf64 {mx(dl, h64[i]):9.2e}  hf32-hf64 {mx(h32[i], h64[i]):9.2e}"
              f"  |h| {np.abs(h64[i]).max():8.2f}")


def main():
    bin_ = sys.argv[1]
    names = sys.argv[2:] or ALL
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            measure(bin_, n, tmp)


if __name__ == "__main__":
    main()
