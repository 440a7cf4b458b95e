#!/usr/bin/env python3
"""Regenerate the model goldens from Hugging Face transformers (torch, CPU, f32).

Tiny random models (saved as HF directories with their golden logits):
  tests/goldens/tiny-llama/          LlamaForCausalLM, untied LM head, f32 weights
  tests/goldens/tiny-llama-tied/     LlamaForCausalLM, tied LM head, bf16 weights
  tests/goldens/tiny-qwen3/          Qwen3ForCausalLM, tied LM head, f32 weights
  tests/goldens/tiny-qwen3-untied/   Qwen3ForCausalLM, untied LM head, f16 weights
Each holds golden_f64.safetensors (f64_goldens: the same logits from the
float64 forward) and golden.safetensors with, for transformers' forward:
  prefill.<i>.ids [L] i32, prefill.<i>.logits [L, V]    full forward of a sequence
  decode.ids [L] i32, decode.logits [L, V]               one token at a time with the KV cache
  trunk.ids [T] i32, fork.<j>.ids [F] i32,
  fork.<j>.logits [F, V]                                 full forward of trunk + fork j,
                                                         rows of the fork's tokens

The same weights as llama.cpp-style GGUF files (gguf-py; llama q/k rows
permuted like llama.cpp's converter), checked against the same goldens:
  tests/goldens/tiny-gguf/tiny-llama-tied.gguf     BF16 matrices
  tests/goldens/tiny-gguf/tiny-qwen3-untied.gguf   F16 matrices

Real model (only when the GGUF is available; env DEG_MODEL or the deg cache):
  tests/goldens/smollm2/golden.safetensors: transformers from_pretrained(gguf_file=)
  (dequantized to f32) on several prompts:
    p<i>.ids [L] i32
    p<i>.full_pos [1] i32, p<i>.full_logits [1, V]      full-vocab last row (even i only)
    p<i>.sub_vocab [S] i32, p<i>.sub_logits [L, S]      a vocab subset at every position
    p<i>.greedy [64] i32                                 greedy continuation (generate)

The f32 goldens depend on torch's thread count (its reductions split by
thread): the stored ones were made with torch's default 2 threads on a
2-core machine (regenerated so, byte-identical); with 1 thread the tiny
hybrids' f32 logits move by up to 3.7e-5. golden_f64 does not move.

Usage: /tmp/venv/bin/python tests/goldens/gen_model_goldens.py [--tiny] [--smollm2]
       ... gen_model_goldens.py --f64 tiny-llama tiny-lfm2 ...  (golden_f64 only)
"""
import argparse
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = 512


def tiny_tokenizer(dst_dir):
    """Copy the shared 512-token tokenizer (written by the tokenizer goldens),
    or train a byte-level BPE of that size if it is not there."""
    shared = os.path.join(HERE, "tiny-tokenizer", "tokenizer.json")
    dst = os.path.join(dst_dir, "tokenizer.json")
    if os.path.exists(shared):
        shutil.copyfile(shared, dst)
        return
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    text = [
        "The quick brown fox jumps over the lazy dog. " * 3,
        "def f(x):\n    return x * 2 + 1\n",
        "Numbers 12345 and 67890, dates 2024-01-31.",
    ] * 50
    tok.train_from_iterator(text, trainer)
    tok.save(dst)


def tokenizer_config(dst_dir):
    import json

    cfg = {
        "bos_token": "<|im_start|>",
        "eos_token": "<|im_end|>",
        "chat_template": "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}",
    }
    with open(os.path.join(dst_dir, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=1)


def randomize(model, seed, scale=0.15, norm_scale=0.3):
    """Weights large enough that logits are far from uniform, norms not 1:
    matrices scale * N(0, 1), 1-D weights (RMSNorm) 1 + norm_scale * N(0, 1).
    The default (0.15, 0.3) is a stress test: with hidden size 64 the hybrid
    and Gemma 4 models' hidden states reach |h| ~ 50 and their f32 logits
    carry 1e-5..5e-5 of rounding; the well-conditioned "-wc" models
    (gen_hybrid_goldens.py, gen_gemma4_goldens.py) use scale 0.04..0.08 and
    norm_scale 0.1, where transformers' f32 logits are <= 3e-6 from f64."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:  # RMSNorm weights
                p.copy_(1.0 + norm_scale * torch.randn(p.shape, generator=g))
            else:
                p.copy_(scale * torch.randn(p.shape, generator=g))


def logits_of(model, ids):
    with torch.no_grad():
        out = model(torch.tensor([ids]), use_cache=False)
    return out.logits[0].float().contiguous()


def decode_logits(model, ids):
    """One token per call with transformers' KV cache."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    rows = []
    with torch.no_grad():
        for i, t in enumerate(ids):
            out = model(torch.tensor([[t]]), past_key_values=cache, use_cache=True,
                        position_ids=torch.tensor([[i]]))
            cache = out.past_key_values
            rows.append(out.logits[0, -1].float())
    return torch.stack(rows).contiguous()


def common_goldens(model, rng, lengths=(1, 7, 20, 45)):
    """prefill.<i>, decode, trunk + fork.<j> goldens (module docstring)."""
    gold = {}
    for i, L in enumerate(lengths):
        ids = rng.integers(0, VOCAB, L).tolist()
        gold[f"prefill.{i}.ids"] = torch.tensor(ids, dtype=torch.int32)
        gold[f"prefill.{i}.logits"] = logits_of(model, ids)
    ids = rng.integers(0, VOCAB, 12).tolist()
    gold["decode.ids"] = torch.tensor(ids, dtype=torch.int32)
    gold["decode.logits"] = decode_logits(model, ids)
    trunk = rng.integers(0, VOCAB, 23).tolist()
    gold["trunk.ids"] = torch.tensor(trunk, dtype=torch.int32)
    for j, F in enumerate([1, 3, 9]):
        fk = rng.integers(0, VOCAB, F).tolist()
        gold[f"fork.{j}.ids"] = torch.tensor(fk, dtype=torch.int32)
        gold[f"fork.{j}.logits"] = logits_of(model, trunk + fk)[len(trunk):].contiguous()
    return gold


def f64_goldens(out_dir):
    """golden_f64.safetensors beside golden.safetensors: the same checks from
    transformers' forward of the saved directory in float64 (the class that
    saved it, experts run eagerly), rounded to f32 (at most half an ulp: below
    1e-6 for these logits): prefill.<i>.logits, decode.logits (the full
    forward of decode.ids: the exact value of every decode step) and
    fork.<j>.logits. The tests measure deg against this reference and against
    transformers' own f32 logits (golden.safetensors), whose distance from it
    is f32 rounding alone."""
    import json

    import transformers
    from safetensors.numpy import load_file

    cfg = json.load(open(os.path.join(out_dir, "config.json")))
    cls = getattr(transformers, cfg["architectures"][0])
    kw = {"experts_implementation": "eager"} if cfg.get("enable_moe_block") else {}
    model = cls.from_pretrained(out_dir, dtype=torch.float64, **kw).eval()
    gold = load_file(os.path.join(out_dir, "golden.safetensors"))
    out = {}
    for k in sorted(gold):
        if k.startswith("prefill.") and k.endswith(".ids"):
            out[k[:-4] + ".logits"] = logits_of(model, gold[k].tolist())
    out["decode.logits"] = logits_of(model, gold["decode.ids"].tolist())
    trunk = gold["trunk.ids"].tolist()
    for j in range(3):
        fk = gold[f"fork.{j}.ids"].tolist()
        out[f"fork.{j}.logits"] = logits_of(model, trunk + fk)[len(trunk):].contiguous()
    worst = max((out[k] - torch.from_numpy(gold[k])).abs().max().item() for k in out)
    save_file(out, os.path.join(out_dir, "golden_f64.safetensors"))
    print(f"{os.path.basename(out_dir)}: wrote golden_f64.safetensors (transformers f32 vs "
          f"f64: {worst:.2e})")


def make_tiny(name, arch, tied, dtype, seed):
    from transformers import (AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM, Qwen3Config,
                              Qwen3ForCausalLM)

    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  tie_word_embeddings=tied, bos_token_id=1, eos_token_id=2)
    if arch == "llama":
        cfg = LlamaConfig(**common, rms_norm_eps=1e-5, rope_theta=50000.0)
        model = LlamaForCausalLM(cfg)
    else:
        cfg = Qwen3Config(**common, head_dim=32, rms_norm_eps=1e-6, rope_theta=1000000.0)
        model = Qwen3ForCausalLM(cfg)
    model.eval()
    randomize(model, seed)
    if tied:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    out_dir = os.path.join(HERE, name)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    model.to(dtype).save_pretrained(out_dir)
    # The goldens come from transformers loading the saved directory in f32
    # (weights upcast from the storage dtype; RoPE buffers recomputed).
    model = AutoModelForCausalLM.from_pretrained(out_dir, dtype=torch.float32)
    model.eval()
    for extra in ("generation_config.json",):
        p = os.path.join(out_dir, extra)
        if os.path.exists(p):
            os.remove(p)
    tiny_tokenizer(out_dir)
    tokenizer_config(out_dir)

    rng = np.random.default_rng(seed)
    gold = common_goldens(model, rng)
    # Sanity: the full forward agrees with transformers' own incremental decode.
    full = logits_of(model, gold["decode.ids"].tolist())
    d = (full - gold["decode.logits"]).abs().max().item()
    assert d < 1e-4, d
    save_file(gold, os.path.join(out_dir, "golden.safetensors"))
    f64_goldens(out_dir)
    print(f"{name}: wrote {out_dir}")


def permute_llama_qk(w, n_head):
    """llama.cpp convert_hf_to_gguf.py LlamaModel.permute: interleave the two
    rotate-half halves of each head's rows (what the C loader undoes)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
             .swapaxes(1, 2).reshape(w.shape))


def make_tiny_gguf(name):
    """The tiny HF model `name` written as a llama.cpp-style GGUF (gguf-py):
    same weights in their storage dtype (norms F32), llama q/k rows permuted
    as llama.cpp's converter does, GPT-2 BPE vocabulary from tokenizer.json."""
    import json

    import gguf
    from safetensors.torch import load_file

    src = os.path.join(HERE, name)
    cfg = json.load(open(os.path.join(src, "config.json")))
    arch = cfg["model_type"]
    n_head, n_kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // n_head
    theta = cfg.get("rope_theta") or cfg["rope_parameters"]["rope_theta"]
    out_dir = os.path.join(HERE, "tiny-gguf")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name + ".gguf")
    w = gguf.GGUFWriter(path, arch)
    w.add_name(name)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_freq_base(float(theta))
    w.add_layer_norm_rms_eps(float(cfg["rms_norm_eps"]))

    tj = json.load(open(os.path.join(src, "tokenizer.json")))
    vocab = tj["model"]["vocab"]
    for t in tj["added_tokens"]:
        vocab[t["content"]] = t["id"]
    special = {t["id"] for t in tj["added_tokens"] if t.get("special")}
    tokens = [None] * (max(vocab.values()) + 1)
    for k, v in vocab.items():
        tokens[v] = k
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL
                       for i in range(len(tokens))])
    w.add_token_merges(merges)
    w.add_bos_token_id(cfg["bos_token_id"])
    w.add_eos_token_id(cfg["eos_token_id"])
    tcfg = json.load(open(os.path.join(src, "tokenizer_config.json")))
    w.add_chat_template(tcfg["chat_template"])

    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    per_layer = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q",
                 "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                 "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
                 "self_attn.k_norm": "attn_k_norm", "post_attention_layernorm": "ffn_norm",
                 "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for i in range(cfg["num_hidden_layers"]):
        for h, g in per_layer.items():
            names[f"model.layers.{i}.{h}.weight"] = f"blk.{i}.{g}.weight"
    for hf, t in load_file(os.path.join(src, "model.safetensors")).items():
        if arch == "llama" and ".q_proj." in hf:
            t = permute_llama_qk(t, n_head)
        elif arch == "llama" and ".k_proj." in hf:
            t = permute_llama_qk(t, n_kv)
        if t.dim() == 1:
            w.add_tensor(names[hf], t.float().numpy())
        elif t.dtype == torch.bfloat16:
            w.add_tensor(names[hf], t.contiguous().view(torch.int16).numpy().view(np.uint16),
                         raw_shape=list(t.shape), raw_dtype=gguf.GGMLQuantizationType.BF16)
        elif t.dtype == torch.float16:
            w.add_tensor(names[hf], t.contiguous().numpy())
        else:
            w.add_tensor(names[hf], t.float().contiguous().numpy())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{name}: wrote {path}")


def default_gguf():
    p = os.environ.get("DEG_MODEL")
    if p:
        return p
    cache = os.environ.get("DEG_CACHE", os.path.expanduser("~/.cache/deg"))
    return os.path.join(cache, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


SMOL_PROMPTS = [
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "The quick brown fox jumps over the lazy dog. Once upon a time, in a small village,",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "<|im_start|>user\nList three colors of the rainbow.<|im_end|>\n<|im_start|>assistant\n",
    "Paris, Berlin, Madrid, Rome, Lisbon, Vienna, Prague, Warsaw, Budapest, Athens,"
    " Dublin, Oslo, Stockholm, Helsinki, Copenhagen, Amsterdam, Brussels, Bern,",
]


def make_smollm2():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = default_gguf()
    if not os.path.exists(path):
        print(f"smollm2: {path} absent, skipped")
        return
    d, f = os.path.split(os.path.abspath(path))
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
    model.eval()
    V = model.config.vocab_size
    rng = np.random.default_rng(7)
    sub = np.sort(rng.choice(V, 256, replace=False))
    gold = {}
    for i, text in enumerate(SMOL_PROMPTS):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        logits = logits_of(model, ids)
        L = len(ids)
        pos = [L - 1] if i % 2 == 0 else []
        # The subset also holds each position's top-5 ids (where it matters).
        top = torch.topk(logits, 5, dim=-1).indices.flatten().numpy()
        subset = np.unique(np.concatenate([sub, top])).astype(np.int32)
        gold[f"p{i}.ids"] = torch.tensor(ids, dtype=torch.int32)
        if pos:
            gold[f"p{i}.full_pos"] = torch.tensor(pos, dtype=torch.int32)
            gold[f"p{i}.full_logits"] = logits[pos].contiguous()
        gold[f"p{i}.sub_vocab"] = torch.from_numpy(subset)
        gold[f"p{i}.sub_logits"] = logits[:, torch.from_numpy(subset).long()].contiguous()
        with torch.no_grad():
            out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, L, dtype=torch.long),
                                 max_new_tokens=64, min_new_tokens=64, do_sample=False,
                                 eos_token_id=None, pad_token_id=0)
        gold[f"p{i}.greedy"] = out[0, L:].to(torch.int32).contiguous()
        print(f"smollm2 p{i}: {L} tokens, greedy: {tok.decode(out[0, L:])!r}")
    out_dir = os.path.join(HERE, "smollm2")
    os.makedirs(out_dir, exist_ok=True)
    save_file(gold, os.path.join(out_dir, "golden.safetensors"))
    print(f"smollm2: wrote {out_dir}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--smollm2", action="store_true")
    ap.add_argument("--f64", nargs="+", metavar="NAME",
                    help="only (re)write golden_f64.safetensors of these saved tiny "
                         "directories (any generator's: tiny-lfm2, tiny-gemma4, ...)")
    a = ap.parse_args()
    if a.f64:
        for name in a.f64:
            f64_goldens(os.path.join(HERE, name))
        return
    if not a.tiny and not a.smollm2:
        a.tiny = a.smollm2 = True
    torch.manual_seed(0)
    if a.tiny:
        make_tiny("tiny-llama", "llama", tied=False, dtype=torch.float32, seed=1)
        make_tiny("tiny-llama-tied", "llama", tied=True, dtype=torch.bfloat16, seed=2)
        make_tiny("tiny-qwen3", "qwen3", tied=True, dtype=torch.float32, seed=3)
        make_tiny("tiny-qwen3-untied", "qwen3", tied=False, dtype=torch.float16, seed=4)
        make_tiny_gguf("tiny-llama-tied")
        make_tiny_gguf("tiny-qwen3-untied")
    if a.smollm2:
        make_smollm2()


if __name__ == "__main__":
    sys.exit(main())
