#!/usr/bin/env python3
"""Cartridge mechanism goldens: an independent PyTorch (float64, autograd)
implementation of a cartridge on the tiny random llama and qwen3 models.

Written from the method's description (spec cartridges.md "Semantics"), not
from libdeg: per layer a [p, n_kv_heads, head_dim] K and V block in KV-cache
space (keys after q/k norm and RoPE at positions 0..p-1), row 0 a frozen
constant (attention-sink freeze), rows 1..p-1 leaf tensors; real tokens at
RoPE positions p..p+T-1; attention over concat(prefix, own) with the
end-aligned causal mask (every query sees the whole prefix), GQA by
repeating kv heads; loss = mean over supervised positions of
sum_k -exp(teacher_logprob_k) * log_softmax(logits[pos - 1])[token_k]
(top-k, not renormalised, duplicate positions = several entries).

The rows are the capture of `prefix_ids` (the model's own K/V, computed here
too), so the C test also checks capture. Output per model,
tests/goldens/cartridge/<model>.safetensors:
  prefix_ids [p] i32            captured tokens
  ids [T] i32                   tokens behind the cartridge
  tgt_pos [n] i32, tgt_tok [n] i32, tgt_lp [n] f32   sparse targets
  rows_k, rows_v [L, p, Hkv, D] f32   captured rows (f64 -> f32)
  logits [T, V] f32             student logits behind the cartridge
  loss [1] f64
  grad_k, grad_v [L, p, Hkv, D] f64   dLoss/drows (row 0: zeros, frozen)
  adam_k, adam_v [L, p, Hkv, D] f32   rows after one torch.optim.Adam step
                                      (lr 1e-2, betas (0.9, 0.999), eps 1e-8)
                                      on the f32-rounded rows

Usage: /tmp/venv/bin/python tests/goldens/gen_cartridge_goldens.py
"""
import json
import os

import numpy as np
import torch
from safetensors.torch import load_file

from train_steps import distill_loss, make_targets, save_golden

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cartridge")
MODELS = ["tiny-llama", "tiny-qwen3"]
P, T = 6, 12
LR = 1e-2


class Model:
    def __init__(self, name):
        d = os.path.join(HERE, name)
        cfg = json.load(open(os.path.join(d, "config.json")))
        w = {k: v.to(torch.float64) for k, v in load_file(os.path.join(d, "model.safetensors")).items()}
        self.w = w
        self.E = cfg["hidden_size"]
        self.L = cfg["num_hidden_layers"]
        self.H = cfg["num_attention_heads"]
        self.Hkv = cfg["num_key_value_heads"]
        self.D = cfg.get("head_dim", self.E // self.H)
        self.eps = cfg["rms_norm_eps"]
        rp = cfg.get("rope_parameters") or {}
        self.theta = rp.get("rope_theta", cfg.get("rope_theta", 10000.0))
        self.V = cfg["vocab_size"]
        self.qk_norm = cfg["model_type"] == "qwen3"
        self.lm_head = w.get("lm_head.weight", w["model.embed_tokens.weight"])

    def rms(self, x, wt):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps) * wt

    def rope(self, x, pos):
        # x: [n, heads, D], rotate-half with angle pos * theta^(-2j/D)
        half = self.D // 2
        inv = 1.0 / (self.theta ** (torch.arange(half, dtype=torch.float64) * 2 / self.D))
        ang = pos.to(torch.float64)[:, None] * inv[None, :]
        c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
        a, b = x[..., :half], x[..., half:]
        return torch.cat([a * c - b * s, b * c + a * s], -1)

    def forward(self, ids, pk, pv, p0, lin=None):
        """ids [n]; pk/pv: per layer [P, Hkv, D] prefix rows (or None);
        p0: RoPE position of ids[0]; lin(x, W, il, target): a projection
        x @ W.T (default; gen_lora_goldens.py adds its adapters here; target
        in q k v o gate up down). Returns final hidden [n, E] and the
        per-layer own K (post norm+RoPE) and V."""
        w, n = self.w, len(ids)
        lin = lin or (lambda x, W, il, t: x @ W.T)
        x = w["model.embed_tokens.weight"][torch.as_tensor(ids, dtype=torch.long)]
        pos = torch.arange(p0, p0 + n)
        ks, vs = [], []
        for il in range(self.L):
            pre = f"model.layers.{il}."
            h = self.rms(x, w[pre + "input_layernorm.weight"])
            q = lin(h, w[pre + "self_attn.q_proj.weight"], il, "q").view(n, self.H, self.D)
            k = lin(h, w[pre + "self_attn.k_proj.weight"], il, "k").view(n, self.Hkv, self.D)
            v = lin(h, w[pre + "self_attn.v_proj.weight"], il, "v").view(n, self.Hkv, self.D)
            if self.qk_norm:
                q = self.rms(q, w[pre + "self_attn.q_norm.weight"])
                k = self.rms(k, w[pre + "self_attn.k_norm.weight"])
            q, k = self.rope(q, pos), self.rope(k, pos)
            ks.append(k)
            vs.append(v)
            K = k if pk is None else torch.cat([pk[il], k], 0)
            Vv = v if pv is None else torch.cat([pv[il], v], 0)
            S = K.shape[0]
            # end-aligned causal mask: query i sees key j iff j <= i + (S - n)
            mask = torch.arange(S)[None, :] <= (torch.arange(n)[:, None] + (S - n))
            rep = self.H // self.Hkv
            Kh = K.repeat_interleave(rep, dim=1)  # [S, H, D]
            Vh = Vv.repeat_interleave(rep, dim=1)
            sc = torch.einsum("ihd,jhd->hij", q, Kh) / np.sqrt(self.D)
            sc = sc.masked_fill(~mask[None], float("-inf"))
            att = torch.einsum("hij,jhd->ihd", torch.softmax(sc, -1), Vh).reshape(n, -1)
            x = x + lin(att, w[pre + "self_attn.o_proj.weight"], il, "o")
            h = self.rms(x, w[pre + "post_attention_layernorm.weight"])
            g = lin(h, w[pre + "mlp.gate_proj.weight"], il, "gate")
            u = lin(h, w[pre + "mlp.up_proj.weight"], il, "up")
            x = x + lin(torch.nn.functional.silu(g) * u, w[pre + "mlp.down_proj.weight"], il, "down")
        return self.rms(x, w["model.norm.weight"]), ks, vs


def one(name, seed):
    m = Model(name)
    rng = np.random.default_rng(seed)
    prefix_ids = rng.integers(0, m.V, size=P).astype(np.int32)
    ids = rng.integers(0, m.V, size=T).astype(np.int32)
    tpos, ttok, tlp = make_targets(rng, m.V)

    with torch.no_grad():
        _, ks, vs = m.forward(prefix_ids, None, None, 0)  # capture
    rows_k = torch.stack(ks).to(torch.float32).to(torch.float64)  # f32-rounded, as stored
    rows_v = torch.stack(vs).to(torch.float32).to(torch.float64)

    sink_k = [rows_k[il, :1].clone() for il in range(m.L)]  # frozen constants
    sink_v = [rows_v[il, :1].clone() for il in range(m.L)]
    tr_k = [rows_k[il, 1:].clone().requires_grad_(True) for il in range(m.L)]
    tr_v = [rows_v[il, 1:].clone().requires_grad_(True) for il in range(m.L)]

    def loss_fn():
        pk = [torch.cat([sink_k[il], tr_k[il]], 0) for il in range(m.L)]
        pv = [torch.cat([sink_v[il], tr_v[il]], 0) for il in range(m.L)]
        hn, _, _ = m.forward(ids, pk, pv, P)
        logits = hn @ m.lm_head.T
        return distill_loss(logits, tpos, ttok, tlp), logits

    loss, logits = loss_fn()
    loss.backward()
    zeros = torch.zeros(1, m.Hkv, m.D, dtype=torch.float64)
    grad_k = torch.stack([torch.cat([zeros, tr_k[il].grad], 0) for il in range(m.L)])
    grad_v = torch.stack([torch.cat([zeros, tr_v[il].grad], 0) for il in range(m.L)])

    # one Adam step (torch's reference optimizer) on the trainable rows
    params = [t.detach().clone().requires_grad_(True) for t in tr_k + tr_v]
    for prm, src in zip(params, tr_k + tr_v):
        prm.grad = src.grad.clone()
    opt = torch.optim.Adam(params, lr=LR, betas=(0.9, 0.999), eps=1e-8)
    opt.step()
    adam_k = torch.stack([torch.cat([sink_k[il], params[il].detach()], 0) for il in range(m.L)])
    adam_v = torch.stack([torch.cat([sink_v[il], params[m.L + il].detach()], 0) for il in range(m.L)])

    out = {
        "prefix_ids": prefix_ids, "ids": ids,
        "tgt_pos": tpos, "tgt_tok": ttok, "tgt_lp": tlp,
        "rows_k": rows_k.numpy().astype(np.float32), "rows_v": rows_v.numpy().astype(np.float32),
        "logits": logits.detach().numpy().astype(np.float32),
        "loss": np.array([loss.item()], np.float64),
        "grad_k": grad_k.numpy(), "grad_v": grad_v.numpy(),
        "adam_k": adam_k.numpy().astype(np.float32), "adam_v": adam_v.numpy().astype(np.float32),
    }
    save_golden(OUT, name, out)
    print(name, "loss", loss.item(), "|grad_k|max", grad_k.abs().max().item(),
          "|grad_v|max", grad_v.abs().max().item())


if __name__ == "__main__":
    torch.manual_seed(0)
    for i, name in enumerate(MODELS):
        one(name, 1234 + i)
