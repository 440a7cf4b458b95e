#!/usr/bin/env python3
"""LoRA fork-path goldens on the tiny Gemma 4 models, from Hugging Face
transformers 5.x's own Gemma4ForCausalLM (float64, autograd), peft-free: every
adapted projection of a layer (q_proj, k_proj, v_proj, o_proj, mlp.gate_proj,
up_proj, down_proj) gets a forward hook adding (alpha / r) * B (A x), with A
[r, in], B [out, r] at that layer's own shapes. A layer lacking a projection
has no adapter for it: KV-sharing layers (they read an earlier layer's K/V)
have none on k/v, full layers with attention_k_eq_v none on v (V is the raw
k_proj output, adapter included). The routed experts, the router and the
per-layer-input projections are not adapted (deg adapts q/k/v/o and the dense
MLP).

The context trunk is prefilled with the base weights; each fork row continues
a copy of its cache at positions P.. with its own adapter (or none). The loss
is the probe of gen_lora_goldens.py on the rows' final-norm hidden states:
sum_g dhidden[g] . hidden(row g, token g). Same output tensors as
gen_lora_goldens.py (tests/goldens/lora/<model>.safetensors), read by
tests/c/test_lora.c's check_golden.

Usage: /tmp/lora-torch/bin/python tests/goldens/gen_gemma4_lora_goldens.py
(needs torch and transformers 5.x with gemma4; the tests never import them).
"""
import copy

import numpy as np
import torch

from train_steps import (LORA_ALPHA as ALPHA, LORA_N_ADAPTERS as N_ADAPTERS, LORA_P as P,
                         LORA_RANK as RANK, frozen_hf_model, lora_params, lora_probe_save)

MODELS = ["tiny-gemma4", "tiny-gemma4-kvshare", "tiny-gemma4-moe"]
ROWS = [(5, 0), (3, -1), (9, 1), (4, 0)]   # (length, adapter): row 2 runs past window 8


def projections(layer):
    """The layer's adapted projections in target order (None: not adapted)."""
    at, mlp = layer.self_attn, layer.mlp
    shared = at.is_kv_shared_layer
    return {"q": at.q_proj, "k": None if shared else at.k_proj,
            "v": None if shared or at.v_proj is None else at.v_proj, "o": at.o_proj,
            "gate": mlp.gate_proj, "up": mlp.up_proj, "down": mlp.down_proj}


def one(name, seed):
    m = frozen_hf_model(name, experts_implementation="eager")
    rng = np.random.default_rng(seed)
    V, E = m.config.vocab_size, m.config.hidden_size
    layers = m.model.layers
    shapes = []
    for a in range(N_ADAPTERS):
        for il, layer in enumerate(layers):
            for t, mod in projections(layer).items():
                if mod is None:
                    continue
                shapes.append(((a, il, t, "A"), (RANK, mod.in_features)))
                shapes.append(((a, il, t, "B"), (mod.out_features, RANK)))
    flat, leaf, views = lora_params(rng, shapes)
    scale = ALPHA / RANK
    cur = {"a": -1}

    def hook(il, t):
        def f(mod, inp, out):
            a = cur["a"]
            if a < 0:
                return out
            x = inp[0]
            return out + scale * ((x @ views[(a, il, t, "A")].T) @ views[(a, il, t, "B")].T)
        return f

    for il, layer in enumerate(layers):
        for t, mod in projections(layer).items():
            if mod is not None:
                mod.register_forward_hook(hook(il, t))

    trunk_ids = rng.integers(0, V, size=P).astype(np.int32)
    with torch.no_grad():
        cache = m(torch.as_tensor(trunk_ids, dtype=torch.long)[None], use_cache=True).past_key_values
    rows = [(rng.integers(0, V, size=n).astype(np.int32), a) for n, a in ROWS]
    hid = []
    for ids, a in rows:
        cur["a"] = a
        out = m.model(torch.as_tensor(ids, dtype=torch.long)[None],
                      past_key_values=copy.deepcopy(cache), use_cache=True)
        hid.append(out.last_hidden_state[0])
    cur["a"] = -1
    hidden = torch.cat(hid, 0)

    g_pos = np.array([4, 1, 2, 8, 3, 8], np.int32)  # (2, 8) twice: gradients add
    lora_probe_save(name, rng, ROWS, rows, trunk_ids, hidden, g_pos, flat, leaf)


if __name__ == "__main__":
    torch.manual_seed(0)
    for i, name in enumerate(MODELS):
        one(name, 6543 + i)
