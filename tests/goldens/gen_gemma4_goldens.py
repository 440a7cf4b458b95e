#!/usr/bin/env python3
"""Regenerate the Gemma 4 text goldens from Hugging Face transformers 5.x (torch,
CPU, f32): tiny random Gemma4ForCausalLM models (model_type gemma4_text), saved as
HF directories with their golden logits.

  tests/goldens/tiny-gemma4/          5 layers: sliding, sliding, full, sliding, full;
                                      sliding window 8 (the longer sequences and the
                                      forks run past it); per-layer K/V geometry (sliding
                                      layers 2 KV heads x 16 dims, full layers 1 KV head x
                                      32 dims with attention_k_eq_v: V = the raw K
                                      projection); proportional RoPE on the full layers
                                      (partial_rotary_factor 0.25, theta 1e6), default
                                      RoPE (theta 1e4) on the sliding ones; per-layer input
                                      embeddings (hidden_size_per_layer_input 8); final
                                      logit soft-capping 30; layer_scalar != 1; tied LM head
  tests/goldens/tiny-gemma4-kvshare/  4 layers: sliding, full, sliding, full; the last 2
                                      reuse the K/V of the last earlier layer of their
                                      type (num_kv_shared_layers 2) with double-wide MLPs;
                                      sliding window 6; per-layer inputs of 8; no
                                      soft-capping; untied LM head (transformers 5.24's
                                      generate fails on KV sharing without per-layer
                                      inputs: _maybe_slice_kv_shared_inputs slices None)
  tests/goldens/tiny-gemma4-moe/      3 layers (sliding, full, full) with the MoE block
                                      (enable_moe_block: 4 experts, top 2, width 32) beside
                                      each MLP; no per-layer inputs; soft-capping 30
  tests/goldens/tiny-gemma4-wc/       well conditioned: tiny-gemma4-moe's config and
                                      seed (sliding + full layers, MoE) with weights
                                      0.08 N, norms 1 + 0.1 N, q/k norms halved (the
                                      attention scale is 1: q.k of normed heads is ~
                                      sqrt(head_dim) otherwise), untied LM head (tied,
                                      greedy repeats one token): transformers' f32 logits
                                      are <= 3e-6 from f64, where the stress models
                                      above (weights 0.15 N, norms 1 + 0.3 N) carry
                                      1.7e-5..4.5e-5 of f32 rounding

Each golden.safetensors (and golden_f64.safetensors) holds what gen_hybrid_goldens.py's do (prefill.<i>, decode,
trunk + fork.<j>, greedy), from transformers' forward. Randomized so that logits are
far from uniform (gen_model_goldens.randomize; layer_scalar drawn in [0.6, 1.4]).

Usage: /tmp/lora-torch/bin/python tests/goldens/gen_gemma4_goldens.py [gemma4 gemma4_kvshare
       gemma4_moe gemma4_wc]  (default: all)
(needs torch and transformers 5.x with gemma4; the tests never import them).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_hybrid_goldens import make  # noqa: E402
from gen_model_goldens import HERE, VOCAB  # noqa: E402


def gemma4_model():
    from transformers import Gemma4ForCausalLM, Gemma4TextConfig

    cfg = Gemma4TextConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=5,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
        num_global_key_value_heads=1, attention_k_eq_v=True,
        layer_types=["sliding_attention", "sliding_attention", "full_attention",
                     "sliding_attention", "full_attention"],
        sliding_window=8, max_position_embeddings=1024, rms_norm_eps=1e-6,
        hidden_activation="gelu_pytorch_tanh",
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                               "rope_theta": 1000000.0}},
        hidden_size_per_layer_input=8, vocab_size_per_layer_input=VOCAB,
        final_logit_softcapping=30.0, tie_word_embeddings=True,
        bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return Gemma4ForCausalLM(cfg)


def gemma4_kvshare_model():
    from transformers import Gemma4ForCausalLM, Gemma4TextConfig

    cfg = Gemma4TextConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=64, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
        layer_types=["sliding_attention", "full_attention", "sliding_attention",
                     "full_attention"],
        sliding_window=6, max_position_embeddings=1024, rms_norm_eps=1e-6,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.5,
                               "rope_theta": 1000000.0}},
        hidden_size_per_layer_input=8, vocab_size_per_layer_input=VOCAB,
        num_kv_shared_layers=2, use_double_wide_mlp=True,
        final_logit_softcapping=None, tie_word_embeddings=False,
        bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return Gemma4ForCausalLM(cfg)


def gemma4_moe_model(tied=True):
    from transformers import Gemma4ForCausalLM, Gemma4TextConfig

    cfg = Gemma4TextConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
        layer_types=["sliding_attention", "full_attention", "full_attention"],
        sliding_window=8, max_position_embeddings=1024, rms_norm_eps=1e-6,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                               "rope_theta": 1000000.0}},
        hidden_size_per_layer_input=0, enable_moe_block=True, num_experts=4, top_k_experts=2,
        moe_intermediate_size=32, final_logit_softcapping=30.0, tie_word_embeddings=tied,
        bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return Gemma4ForCausalLM(cfg)


def layer_scalars(model, seed):
    g = torch.Generator().manual_seed(seed + 200)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.layer_scalar.copy_(0.6 + 0.8 * torch.rand(1, generator=g))


def wc_post(model, seed):
    """tiny-gemma4-wc: layer scalars as the others, q/k RMSNorm weights halved."""
    layer_scalars(model, seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("q_norm.weight") or name.endswith("k_norm.weight"):
                p.mul_(0.5)


def conditioning(name, bound=6e-5):
    """transformers' own f32 logits vs its f64 forward on the saved weights: the
    goldens are compared at 1e-4, so the model's f32 rounding noise must stay
    well below that (per-layer inputs of 4 dims, RMS-normed, gave 2e-4)."""
    from safetensors.numpy import load_file
    from transformers import AutoModelForCausalLM

    d = os.path.join(HERE, name)
    gold = load_file(os.path.join(d, "golden.safetensors"))
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64,
                                                 experts_implementation="eager").eval()
    worst = 0.0
    for i in range(5):
        ids = torch.tensor(gold[f"prefill.{i}.ids"]).long()[None]
        with torch.no_grad():
            ref = model(ids, use_cache=False).logits[0]
        worst = max(worst, (ref - torch.tensor(gold[f"prefill.{i}.logits"]).double()).abs().max().item())
    print(f"{name}: transformers f32 vs f64 logits {worst:.2e}")
    assert worst < bound, worst


def main():
    which = sys.argv[1:] or ["gemma4", "gemma4_kvshare", "gemma4_moe", "gemma4_wc"]
    if "gemma4" in which:
        make("tiny-gemma4", gemma4_model, seed=21, post=layer_scalars)
        conditioning("tiny-gemma4")
    if "gemma4_kvshare" in which:
        make("tiny-gemma4-kvshare", gemma4_kvshare_model, seed=22, post=layer_scalars)
        conditioning("tiny-gemma4-kvshare")
    if "gemma4_moe" in which:
        make("tiny-gemma4-moe", gemma4_moe_model, seed=23, post=layer_scalars)
        conditioning("tiny-gemma4-moe")
    if "gemma4_wc" in which:
        make("tiny-gemma4-wc", lambda: gemma4_moe_model(tied=False), seed=23, post=wc_post,
             scale=0.08, norm_scale=0.1)
        conditioning("tiny-gemma4-wc", bound=3.5e-6)


if __name__ == "__main__":
    main()
