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
from safetensors.numpy import save_file
from transformers import AutoModelForCausalLM

from gen_cartridge_goldens import make_targets

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cartridge")
MODELS = ["tiny-gemma4", "tiny-gemma4-kvshare", "tiny-gemma4-moe"]
P, T = 5, 12


def one(name, seed):
    m = AutoModelForCausalLM.from_pretrained(os.path.join(HERE, name), dtype=torch.float64,
                                             experts_implementation="eager").eval()
    for prm in m.parameters():
        prm.requires_grad_(False)
    V = m.config.vocab_size
    rng = np.random.default_rng(seed)
    prefix_ids = rng.integers(0, V, size=P).astype(np.int32)
    ids = rng.integers(0, V, size=T).astype(np.int32)
    tpos, ttok, tlp = make_targets(rng, V)
    all_ids = torch.as_tensor(np.concatenate([prefix_ids, ids]), dtype=torch.long)[None]

    with torch.no_grad():
        full = m(all_ids).logits[0, P:]
        cache = m(all_ids[:, :P], use_cache=True).past_key_values
    # Captured rows as deg stores them (f32, [p, Hkv * D]), then leaves over them.
    leaves = {}
    for il, L in enumerate(cache.layers):
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
    logits = m(torch.as_tensor(ids, dtype=torch.long)[None], past_key_values=cache,
               use_cache=True).logits[0]
    with torch.no_grad():
        diff = (logits - full).abs().max().item()
        print(name, "continuation vs full forward: max |diff|", diff,
              "(captured rows rounded to f32)")
        assert diff < 1e-5, diff
    logq = torch.log_softmax(logits, -1)
    tp = torch.as_tensor(tpos, dtype=torch.long)
    tt = torch.as_tensor(ttok, dtype=torch.long)
    pt = torch.exp(torch.as_tensor(tlp, dtype=torch.float64))
    loss = -(pt * logq[tp - 1, tt]).sum() / len(set(tpos.tolist()))
    loss.backward()

    out = {
        "prefix_ids": prefix_ids, "ids": ids, "tgt_pos": tpos, "tgt_tok": ttok, "tgt_lp": tlp,
        "logits": logits.detach().numpy().astype(np.float32),
        "loss": np.array([loss.item()], np.float64),
    }
    for il, (k, v) in leaves.items():
        out[f"rows_k.{il}"] = k.detach().numpy().astype(np.float32)
        out[f"rows_v.{il}"] = v.detach().numpy().astype(np.float32)
        out[f"grad_k.{il}"] = k.grad.numpy()
        out[f"grad_v.{il}"] = v.grad.numpy()
    os.makedirs(OUT, exist_ok=True)
    save_file(out, os.path.join(OUT, name + ".safetensors"))
    print(name, "loss", loss.item(), "|grad|max",
          max(np.abs(out[f"grad_{w}.{il}"]).max() for il in leaves for w in "kv"))


if __name__ == "__main__":
    torch.manual_seed(0)
    for i, name in enumerate(MODELS):
        one(name, 8765 + i)
