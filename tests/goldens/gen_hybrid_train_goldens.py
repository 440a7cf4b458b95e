#!/usr/bin/env python3
"""Training-step goldens of cartridges on the hybrid tiny models, from Hugging
Face transformers 5.x itself (float64, autograd through its cache).

deg's hybrid cartridge (doc/ARCHITECTURE.md "Cartridges on hybrids"): K/V rows
on the attention layers (keys after q/k norm and RoPE at positions 0..p-1) and,
per recurrent layer, the state its layer starts the following tokens from. In
transformers that is exactly what the cache holds after a prefill of the
prefix: DynamicLayer keys/values [1, Hkv, p, D], a LinearAttentionLayer's
conv_states [1, C, K] (the last K inputs of the convolution; the oldest is
never read again, deg keeps the last K-1) and, for Gated DeltaNet,
recurrent_states [1, nv, dk, dv]. Here those cache entries are replaced by
leaf tensors, the tokens behind the prefix run through the model with that
cache (one multi-token continuation, checked against the model's own
full-sequence forward), and the sparse distillation loss of
gen_cartridge_goldens.py is backpropagated into the leaves.

Output per model, tests/goldens/cartridge/<model>.safetensors:
  prefix_ids [p] i32, ids [T] i32, tgt_pos/tgt_tok [n] i32, tgt_lp [n] f32
  rows_k, rows_v [n_attn, p, Hkv, D] f32    captured rows of the attention layers
  state.<il> [n] f32                        captured state of recurrent layer il in
                                            deg's layout (DeltaNet: S [nv, dk, dv],
                                            then the conv tail [K-1, C], oldest first)
  logits [T, V] f32, loss [1] f64           behind the captured cartridge
  grad_k, grad_v [n_attn, p, Hkv, D] f64    dLoss/drows
  grad_state.<il> [n] f64                   dLoss/dstate

Usage: /tmp/lora-torch/bin/python tests/goldens/gen_hybrid_train_goldens.py
(needs torch and transformers 5.x; the tests never import them).
"""
import os

import numpy as np
import torch

from train_steps import continue_from_cache, distill_loss, hf_prefix_case, save_golden

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cartridge")
MODELS = ["tiny-lfm2", "tiny-qwen3_5"]
P, T = 6, 12


def one(name, seed):
    c = hf_prefix_case(name, seed, P, T)
    # Captured values as deg stores them (f32), then leaves over them.
    attn_k, attn_v, rec = [], [], {}
    for il, L in enumerate(c.cache.layers):
        if hasattr(L, "keys"):
            k = L.keys[0].permute(1, 0, 2).to(torch.float32).to(torch.float64)  # [p, Hkv, D]
            v = L.values[0].permute(1, 0, 2).to(torch.float32).to(torch.float64)
            k.requires_grad_(True)
            v.requires_grad_(True)
            attn_k.append(k)
            attn_v.append(v)
            L.keys = k.permute(1, 0, 2)[None].clone()
            L.values = v.permute(1, 0, 2)[None].clone()
        else:
            cs = L.conv_states[0]  # [1, C, K]
            oldest = cs[:, :, :1].clone()
            tail = cs[0, :, 1:].T.to(torch.float32).to(torch.float64).requires_grad_(True)
            L.conv_states[0] = torch.cat([oldest, tail.T[None]], -1)
            parts = [tail]
            if getattr(L, "recurrent_states", None) and L.recurrent_states.get(0) is not None:
                S = L.recurrent_states[0][0].to(torch.float32).to(torch.float64).requires_grad_(True)
                L.recurrent_states[0] = S[None].clone()
                parts = [S, tail]
            rec[il] = parts
    logits = continue_from_cache(name, c, "state", 1e-4)
    loss = distill_loss(logits, c.tpos, c.ttok, c.tlp)
    loss.backward()

    def flat(ts, grad):
        return torch.cat([(t.grad if grad else t.detach()).reshape(-1) for t in ts]).numpy()

    out = {
        "prefix_ids": c.prefix_ids, "ids": c.ids, "tgt_pos": c.tpos, "tgt_tok": c.ttok,
        "tgt_lp": c.tlp,
        "rows_k": torch.stack(attn_k).detach().numpy().astype(np.float32),
        "rows_v": torch.stack(attn_v).detach().numpy().astype(np.float32),
        "logits": logits.detach().numpy().astype(np.float32),
        "loss": np.array([loss.item()], np.float64),
        "grad_k": torch.stack([k.grad for k in attn_k]).numpy(),
        "grad_v": torch.stack([v.grad for v in attn_v]).numpy(),
    }
    for il, parts in rec.items():
        out[f"state.{il}"] = flat(parts, False).astype(np.float32)
        out[f"grad_state.{il}"] = flat(parts, True)
    save_golden(OUT, name, out)
    print(name, "loss", loss.item(), "|grad_k|max", out["grad_k"].__abs__().max(),
          "|grad_state|max", max(np.abs(out[f"grad_state.{il}"]).max() for il in rec))


if __name__ == "__main__":
    torch.manual_seed(0)
    for i, name in enumerate(MODELS):
        one(name, 4321 + i)
