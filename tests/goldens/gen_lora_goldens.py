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
from safetensors.numpy import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_cartridge_goldens import Model  # noqa: E402

OUT = os.path.join(HERE, "lora")
MODELS = ["tiny-llama", "tiny-qwen3"]
TARGETS = ["q", "k", "v", "o", "gate", "up", "down"]
RANK, ALPHA, N_ADAPTERS = 4, 8, 2
P = 7
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
    flat = np.concatenate([rng.uniform(-0.3, 0.3, size=int(np.prod(s))) for _, s in shapes])
    flat = flat.astype(np.float32)
    leaf = torch.tensor(flat.astype(np.float64), requires_grad=True)
    views, off = {}, 0
    for key, s in shapes:
        n = int(np.prod(s))
        views[key] = leaf[off:off + n].view(*s)
        off += n
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

    starts = np.cumsum([0] + [n for n, _ in ROWS])[:-1]
    g_row = np.array([0, 0, 1, 2, 3, 2], np.int32)
    g_pos = np.array([4, 1, 2, 5, 3, 5], np.int32)  # (2, 5) twice: gradients add
    dhid = rng.normal(size=(len(g_row), m.E)).astype(np.float32)
    sel = torch.as_tensor(starts[g_row] + g_pos, dtype=torch.long)
    loss = (torch.as_tensor(dhid, dtype=torch.float64) * hidden[sel]).sum()
    loss.backward()

    out = {
        "trunk_ids": trunk_ids,
        "ids": np.concatenate([r[0] for r in rows]).astype(np.int32),
        "lens": np.array([n for n, _ in ROWS], np.int32),
        "adapters": np.array([a for _, a in ROWS], np.int32),
        "config": np.array([RANK, N_ADAPTERS, ALPHA], np.int32),
        "params": flat,
        "g_row": g_row, "g_pos": g_pos, "dhidden": dhid,
        "hidden": hidden.detach().numpy().astype(np.float32),
        "loss": np.array([loss.item()], np.float64),
        "grad": leaf.grad.numpy(),
    }
    os.makedirs(OUT, exist_ok=True)
    save_file(out, os.path.join(OUT, name + ".safetensors"))
    print(name, "loss", loss.item(), "|grad|max", leaf.grad.abs().max().item(),
          "n_params", flat.size)


if __name__ == "__main__":
    torch.manual_seed(0)
    for i, name in enumerate(MODELS):
        one(name, 4321 + i)
