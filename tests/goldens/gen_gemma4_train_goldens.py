#!/usr/bin/env python3
"""Training-step goldens of cartridges on the tiny Gemma 4 models, from Hugging
Face transformers 5.x itself (float64, autograd through its cache).

A Gemma 4 cartridge (doc/ARCHITECTURE.md, "Cartridges on Gemma 4") holds K/V
rows per layer that computes K/V (keys after k_norm and RoPE at positions
0..p-1, values after the scale-free v_norm), at the layer's own width; a
KV-sharing layer reads its source layer's rows. In transformers that is what
the cache holds after a prefill of the prefix (DynamicLayer /
DynamicSlidingWindowLayer keys/values [1, Hkv, p, D]; the sharing layers hold
a DummyLayer). Here those entries are replaced by leaf tensors, the tokens
behind the prefix run through the model with that cache (checked against the
model's own full-sequence forward), and the sparse distillation loss of
gen_cartridge_goldens.py is backpropagated into the leaves: through the
soft-capped logits, the per-layer inputs, layer_scalar, GeGLU, the routed
experts and their router, the sliding windows (p = 5 and 12 tokens behind it
run past windows 8 and 6), V = K, the q/k/v norms and the K/V sharing.

Output per model, tests/goldens/cartridge/<model>.safetensors:
  prefix_ids [p] i32, ids [T] i32, tgt_pos/tgt_tok [n] i32, tgt_lp [n] f32
  rows_k.<il>, rows_v.<il> [p, Hkv * D] f32   captured rows of layer il
  logits [T, V] f32, loss [1] f64             behind the captured cartridge
  grad_k.<il>, grad_v.<il> [p, Hkv * D] f64   dLoss/drows

Usage: /tmp/lora-torch/bin/python tests/goldens/gen_gemma4_train_goldens.py
(needs torch and transformers 5.x with gemma4; the tests never import them).
"""
import os

import numpy as np
import torch

from train_steps import continue_from_cache, distill_loss, hf_prefix_case, save_golden

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cartridge")
MODELS = ["tiny-gemma4", "tiny-gemma4-kvshare", "tiny-gemma4-moe"]
P, T = 5, 12


def one(name, seed):
    c = hf_prefix_case(name, seed, P, T, experts_implementation="eager")
    # Captured rows as deg stores them (f32, [p, Hkv * D]), then leaves over them.
    leaves = {}
    for il, L in enumerate(c.cache.layers):
        if getattr(L, "keys", None) is None:
            continue  # a KV-sharing layer (DummyLayer): reads its source's rows
        hkv, d = L.keys.shape[1], L.keys.shape[3]
        k = L.keys[0].permute(1, 0, 2).reshape(P, hkv * d).to(torch.float32).to(torch.float64)
        v = L.values[0].permute(1, 0, 2).reshape(P, hkv * d).to(torch.float32).to(torch.float64)
        k.requires_grad_(True)
        v.requires_grad_(True)
        leaves[il] = (k, v)
        L.keys = k.reshape(P, hkv, d).permute(1, 0, 2)[None].clone()
        L.values = v.reshape(P, hkv, d).permute(1, 0, 2)[None].clone()
    logits = continue_from_cache(name, c, "rows", 1e-5)
    loss = distill_loss(logits, c.tpos, c.ttok, c.tlp)
    loss.backward()

    out = {
        "prefix_ids": c.prefix_ids, "ids": c.ids, "tgt_pos": c.tpos, "tgt_tok": c.ttok,
        "tgt_lp": c.tlp,
        "logits": logits.detach().numpy().astype(np.float32),
        "loss": np.array([loss.item()], np.float64),
    }
    for il, (k, v) in leaves.items():
        out[f"rows_k.{il}"] = k.detach().numpy().astype(np.float32)
        out[f"rows_v.{il}"] = v.detach().numpy().astype(np.float32)
        out[f"grad_k.{il}"] = k.grad.numpy()
        out[f"grad_v.{il}"] = v.grad.numpy()
    save_golden(OUT, name, out)
    print(name, "loss", loss.item(), "|grad|max",
          max(np.abs(out[f"grad_{w}.{il}"]).max() for il in leaves for w in "kv"))


if __name__ == "__main__":
    torch.manual_seed(0)
    for i, name in enumerate(MODELS):
        one(name, 8765 + i)
