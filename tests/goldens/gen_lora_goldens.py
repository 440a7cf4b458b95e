#!/usr/bin/env python3
"""LoRA fork-path goldens: one LoRA training step (forward + backward into the
adapters) in an independent PyTorch float64 implementation, on the tiny random
llama and qwen3 models.

Written from the method (LoRA, Hu et al. 2021; the project's spec
deg-contract.md §12.7 and include/lora.h), not from libdeg, and peft-free:
every projection y = W x of the layer (q, k, v, o, gate, up, down) becomes
y = W x + (alpha / r) * B (A x) with A [r, in], B [out, r]. The context trunk
is read by the base weights (no adapter: `--lora-context base`); each fork row
continues it at RoPE positions P.. with its own adapter (or none), attending
to the trunk's K/V and causally to itself. The loss is a probe on the rows'
final-norm hidden states: sum_g dhidden[g] . hidden(row g, token g), so
dLoss/dhidden = dhidden (what a head loss hands back). The transformer is
gen_cartridge_goldens.Model with a projection hook.

Output per model, tests/goldens/lora/<model>.safetensors:
  trunk_ids [P] i32; ids [T] i32 (rows concatenated); lens [R] i32;
  adapters [R] i32 (-1 = none); config [3] i32 (rank, n_adapters, alpha);
  params [n_params] f32  flat adapters (include/lora.h layout: adapter,
                         layer, target q k v o gate up down; A then B), A and
                         B random (B nonzero so the forward is exercised)
  g_row [G] i32, g_pos [G] i32, dhidden [G, E] f32   the probe
  hidden [T, E] f32      final-norm hidden states of the fork rows
  loss [1] f64
  grad [n_params] f64    dLoss/dparams (zero for adapters no row uses)

Usage: python tests/goldens/gen_lora_goldens.py  (needs torch, numpy,
safetensors; run from any directory)
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_cartridge_goldens import Model  # noqa: E402
from train_steps import (LORA_ALPHA as ALPHA, LORA_N_ADAPTERS as N_ADAPTERS,  # noqa: E402
                         LORA_P as P, LORA_RANK as RANK, LORA_TARGETS as TARGETS,
                         lora_params, lora_probe_save)

MODELS = ["tiny-llama", "tiny-qwen3"]
ROWS = [(5, 0), (3, -1), (6, 1), (4, 0)]   # (length, adapter)


def dims(m):
    E, QD, KD = m.E, m.H * m.D, m.Hkv * m.D
    F = m.w["model.layers.0.mlp.gate_proj.weight"].shape[0]
    return {"q": (E, QD), "k": (E, KD), "v": (E, KD), "o": (QD, E),
            "gate": (E, F), "up": (E, F), "down": (F, E)}  # (in, out)


def one(name, seed):
    m = Model(name)
    rng = np.random.default_rng(seed)
    dm = dims(m)
    # flat parameters in the layout order, then leaf views per (a, il, t)
    shapes = []
    for a in range(N_ADAPTERS):
        for il in range(m.L):
            for t in TARGETS:
                i, o = dm[t]
                shapes.append(((a, il, t, "A"), (RANK, i)))
                shapes.append(((a, il, t, "B"), (o, RANK)))
    flat, leaf, views = lora_params(rng, shapes)
    scale = ALPHA / RANK

    trunk_ids = rng.integers(0, m.V, size=P).astype(np.int32)
    with torch.no_grad():
        _, ks, vs = m.forward(trunk_ids, None, None, 0)  # the trunk: base weights
    rows = [(rng.integers(0, m.V, size=n).astype(np.int32), a) for n, a in ROWS]

    hid = []
    for ids, a in rows:
        def lin(x, W, il, t, a=a):
            y = x @ W.T
            if a >= 0:
                y = y + scale * ((x @ views[(a, il, t, "A")].T) @ views[(a, il, t, "B")].T)
            return y
        h, _, _ = m.forward(ids, ks, vs, P, lin)
        hid.append(h)
    hidden = torch.cat(hid, 0)

    g_pos = np.array([4, 1, 2, 5, 3, 5], np.int32)  # (2, 5) twice: gradients add
    lora_probe_save(name, rng, ROWS, rows, trunk_ids, hidden, g_pos, flat, leaf)


if __name__ == "__main__":
    torch.manual_seed(0)
    for i, name in enumerate(MODELS):
        one(name, 4321 + i)
