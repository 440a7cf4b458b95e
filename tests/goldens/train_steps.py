"""Steps the training and LoRA golden generators share (targets, loss, prefix cache, adapters, probe).

Sparse distillation targets and loss, a frozen transformers model with its
prefix cache, flat LoRA adapter parameters and the hidden-state probe.

Used by gen_cartridge_goldens.py, gen_hybrid_train_goldens.py,
gen_gemma4_train_goldens.py (targets, loss, prefix cache), gen_lora_goldens.py
and gen_gemma4_lora_goldens.py (adapters, probe). Each step draws from the
caller's numpy Generator in the order the scripts always drew, so the goldens
are the same bytes as before the steps were shared. transformers is imported
only by the steps that load a transformers model.
"""
import os
from types import SimpleNamespace

import numpy as np
import torch
from safetensors.numpy import save_file

HERE = os.path.dirname(os.path.abspath(__file__))

# LoRA goldens (include/lora.h layout): rank, alpha, adapters, trunk length
LORA_RANK, LORA_ALPHA, LORA_N_ADAPTERS = 4, 8, 2
LORA_P = 7
LORA_TARGETS = ["q", "k", "v", "o", "gate", "up", "down"]


def make_targets(rng, V):
    """Top-k style sparse targets, with several entries per position."""
    pos, tok, lp = [], [], []
    for t in [2, 3, 5, 8, 9, 11]:
        z = rng.normal(size=V) * 3.0
        logp = z - np.log(np.exp(z - z.max()).sum()) - z.max()
        order = np.argsort(-logp, kind="stable")
        mass = 0.0
        for j in order[:4]:  # top-4, tail dropped, not renormalised
            pos.append(t); tok.append(int(j)); lp.append(float(logp[j]))
            mass += np.exp(logp[j])
            if mass >= 0.99:
                break
    # an exact duplicate entry (same position and token twice) is legal too
    pos.append(pos[0]); tok.append(tok[0]); lp.append(lp[0])
    return (np.array(pos, np.int32), np.array(tok, np.int32), np.array(lp, np.float32))


def distill_loss(logits, tpos, ttok, tlp):
    """The cartridge distillation loss (spec cartridges.md): mean over supervised
    positions of sum_k -exp(teacher_logprob_k) * log_softmax(logits[pos - 1])[token_k]."""
    logq = torch.log_softmax(logits, -1)
    tp = torch.as_tensor(tpos, dtype=torch.long)
    tt = torch.as_tensor(ttok, dtype=torch.long)
    pt = torch.exp(torch.as_tensor(tlp, dtype=torch.float64))
    n_pos = len(set(tpos.tolist()))
    return -(pt * logq[tp - 1, tt]).sum() / n_pos


def frozen_hf_model(name, **load_kw):
    """tests/goldens/<name> as a float64 transformers causal LM in eval mode with
    every weight frozen (load_kw go to from_pretrained)."""
    from transformers import AutoModelForCausalLM
    m = AutoModelForCausalLM.from_pretrained(os.path.join(HERE, name), dtype=torch.float64,
                                             **load_kw).eval()
    for prm in m.parameters():
        prm.requires_grad_(False)
    return m


def hf_prefix_case(name, seed, P, T, **load_kw):
    """A cartridge training case on a transformers model: P prefix ids, T ids behind
    them and sparse targets drawn from seed; the full-sequence logits behind the
    prefix and the cache after prefilling the prefix (both without autograd)."""
    m = frozen_hf_model(name, **load_kw)
    V = m.config.vocab_size
    rng = np.random.default_rng(seed)
    prefix_ids = rng.integers(0, V, size=P).astype(np.int32)
    ids = rng.integers(0, V, size=T).astype(np.int32)
    tpos, ttok, tlp = make_targets(rng, V)
    all_ids = torch.as_tensor(np.concatenate([prefix_ids, ids]), dtype=torch.long)[None]
    with torch.no_grad():
        full = m(all_ids).logits[0, P:]
        cache = m(all_ids[:, :P], use_cache=True).past_key_values
    return SimpleNamespace(m=m, prefix_ids=prefix_ids, ids=ids, tpos=tpos, ttok=ttok, tlp=tlp,
                           full=full, cache=cache)


def continue_from_cache(name, c, what, tol):
    """Logits of c.ids run behind c.cache (its entries replaced by the caller's leaves),
    checked against the full-sequence forward: max |diff| printed, at most tol."""
    logits = c.m(torch.as_tensor(c.ids, dtype=torch.long)[None], past_key_values=c.cache,
                 use_cache=True).logits[0]
    with torch.no_grad():
        diff = (logits - c.full).abs().max().item()
        print(name, "continuation vs full forward: max |diff|", diff,
              f"(captured {what} rounded to f32)")
        assert diff < tol, diff
    return logits


def lora_params(rng, shapes):
    """Flat LoRA parameters for shapes [(key, shape)] in order, uniform in [-0.3, 0.3)
    and rounded to f32: (flat f32 array, its float64 autograd leaf, {key: view})."""
    flat = np.concatenate([rng.uniform(-0.3, 0.3, size=int(np.prod(s))) for _, s in shapes])
    flat = flat.astype(np.float32)
    leaf = torch.tensor(flat.astype(np.float64), requires_grad=True)
    views, off = {}, 0
    for key, s in shapes:
        n = int(np.prod(s))
        views[key] = leaf[off:off + n].view(*s)
        off += n
    return flat, leaf, views


def lora_probe_save(name, rng, rows_spec, rows, trunk_ids, hidden, g_pos, flat, leaf):
    """The LoRA probe and its golden file: loss = sum_g dhidden[g] . hidden(row g_row[g],
    token g_pos[g]) with dhidden drawn from rng, backpropagated into leaf; written to
    tests/goldens/lora/<name>.safetensors (tensors listed in gen_lora_goldens.py)."""
    starts = np.cumsum([0] + [n for n, _ in rows_spec])[:-1]
    g_row = np.array([0, 0, 1, 2, 3, 2], np.int32)
    dhid = rng.normal(size=(len(g_row), hidden.shape[1])).astype(np.float32)
    sel = torch.as_tensor(starts[g_row] + g_pos, dtype=torch.long)
    loss = (torch.as_tensor(dhid, dtype=torch.float64) * hidden[sel]).sum()
    loss.backward()
    out = {
        "trunk_ids": trunk_ids,
        "ids": np.concatenate([r[0] for r in rows]).astype(np.int32),
        "lens": np.array([n for n, _ in rows_spec], np.int32),
        "adapters": np.array([a for _, a in rows_spec], np.int32),
        "config": np.array([LORA_RANK, LORA_N_ADAPTERS, LORA_ALPHA], np.int32),
        "params": flat,
        "g_row": g_row, "g_pos": g_pos, "dhidden": dhid,
        "hidden": hidden.detach().numpy().astype(np.float32),
        "loss": np.array([loss.item()], np.float64),
        "grad": leaf.grad.numpy(),
    }
    save_golden(os.path.join(HERE, "lora"), name, out)
    print(name, "loss", loss.item(), "|grad|max", leaf.grad.abs().max().item(),
          "n_params", flat.size)


def save_golden(out_dir, name, tensors):
    """tensors to out_dir/<name>.safetensors, readable by all (0644)."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name + ".safetensors")
    save_file(tensors, path)
    os.chmod(path, 0o644)
