#!/usr/bin/env python3
"""Regenerate the hybrid-backbone goldens from Hugging Face transformers 5.x
(torch, CPU, f32): tiny random models with recurrent layers, saved as HF
directories with their golden logits.

  tests/goldens/tiny-lfm2/     Lfm2ForCausalLM: conv, attention, conv, conv, attention
                               layers (gated short conv, 3 taps), tied LM head, f32
  tests/goldens/tiny-qwen3_5/  Qwen3_5ForCausalLM (model_type qwen3_5_text): 3 Gated
                               DeltaNet layers + 1 gated attention layer, f32
  tests/goldens/tiny-qwen3_5-vl/  Qwen3_5ForConditionalGeneration (model_type qwen3_5)
                               as the real Qwen3.5 checkpoints are saved: the language
                               model's config nested in text_config, its tensors under
                               model.language_model., a (tiny) vision tower beside it,
                               tied LM head, multimodal RoPE keys; goldens of the text
                               forward (2 DeltaNet + 2 attention layers)

Well-conditioned twins (same configs and seeds, smaller weights): the models above
are stress tests (randomize's std 0.15, norms 1 + 0.3 N: hidden states reach
|h| ~ 50 and transformers' own f32 logits are 1.3e-5..4.5e-5 from its f64 ones),
where these keep f32 rounding below ~3e-6 so that 1e-5 is a meaningful bound:
  tests/goldens/tiny-lfm2-wc/     tiny-lfm2's config, weights 0.05 N, norms 1 + 0.1 N, an
                                  untied LM head (tied, the small layers leave each token's
                                  own embedding on top: greedy repeats one token)
  tests/goldens/tiny-qwen3_5-wc/  tiny-qwen3_5's config, weights 0.04 N, norms 1 + 0.1 N
                                  drawn as Qwen3.5 stores them (the RMSNorms scale by
                                  1 + w: w = 0.1 N; the DeltaNet output norm by w)

Each golden.safetensors holds, for transformers' forward:
  prefill.<i>.ids [L] i32, prefill.<i>.logits [L, V]  full forward (L up to 300: deg's
                                                      passes hold 256 tokens, so the
                                                      longest crosses a pass boundary)
  decode.ids [L] i32, decode.logits [L, V]            one token at a time with the cache
                                                      (recurrent state + K/V)
  trunk.ids [T] i32, fork.<j>.ids [F] i32,
  fork.<j>.logits [F, V]                              full forward of trunk + fork j,
                                                      rows of the fork's tokens
  greedy.ids [P] i32, greedy.out [N] i32              model.generate greedy continuation
and golden_f64.safetensors the same logits from transformers' float64 forward
(gen_model_goldens.f64_goldens).

Usage: /tmp/lora-torch/bin/python tests/goldens/gen_hybrid_goldens.py [lfm2 qwen3_5 qwen3_5_vl
       lfm2_wc qwen3_5_wc]  (default: all)
(needs torch and transformers 5.x; the tests never import them; torch's
default 2 threads, as the stored goldens: see gen_model_goldens.py).
"""
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_model_goldens import (HERE, VOCAB, common_goldens, f64_goldens, logits_of,  # noqa: E402
                               randomize, tiny_tokenizer, tokenizer_config)


def lfm2_model(tied=True):
    from transformers import Lfm2Config, Lfm2ForCausalLM

    cfg = Lfm2Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=144,
                     num_hidden_layers=5, num_attention_heads=4, num_key_value_heads=2,
                     max_position_embeddings=512, norm_eps=1e-5, conv_L_cache=3,
                     block_multiple_of=32, block_ffn_dim_multiplier=1.0,
                     layer_types=["conv", "full_attention", "conv", "conv", "full_attention"],
                     rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                     tie_word_embeddings=tied, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return Lfm2ForCausalLM(cfg)


def qwen3_5_model():
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    cfg = Qwen3_5TextConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
        linear_value_head_dim=16, linear_conv_kernel_dim=4,
        layer_types=["linear_attention", "linear_attention", "full_attention",
                     "linear_attention"],
        max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                         "partial_rotary_factor": 0.25},
        bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return Qwen3_5ForCausalLM(cfg)


def qwen3_5_vl_model():
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    text = dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
        linear_value_head_dim=16, linear_conv_kernel_dim=4,
        layer_types=["linear_attention", "full_attention", "linear_attention",
                     "full_attention"],
        max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                         "partial_rotary_factor": 0.25, "mrope_section": [2, 1, 1],
                         "mrope_interleaved": True},
        bos_token_id=1, eos_token_id=2, pad_token_id=0)
    vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                  out_hidden_size=64, patch_size=4, num_position_embeddings=16)
    cfg = Qwen3_5Config(text_config=text, vision_config=vision, tie_word_embeddings=True,
                        image_token_id=VOCAB - 4, video_token_id=VOCAB - 3,
                        vision_start_token_id=VOCAB - 2, vision_end_token_id=VOCAB - 1)
    return Qwen3_5ForConditionalGeneration(cfg)


def slow_decay(model, seed):
    """DeltaNet decay close to 1 (exp(g) ~ 0.7..0.97 per token), so the
    recurrent state carries far and a lost or doubled state shows."""
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("A_log"):
                p.copy_(torch.log(torch.empty(p.shape).uniform_(0.05, 0.3, generator=g)))
            elif name.endswith("dt_bias"):
                p.copy_(-1.0 + 0.5 * torch.randn(p.shape, generator=g))


def centered_norms(model, seed):
    """Qwen3.5's RMSNorm (modeling_qwen3_5 Qwen3_5RMSNorm) scales by 1 + w:
    its weights drawn as 1 + s N would scale by 2 + s N; shift them to s N
    (not the gated DeltaNet output norm, which scales by w)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and name.endswith("norm.weight") and ".linear_attn.norm." not in name:
                p.sub_(1.0)


def make(name, build, seed, post=None, scale=0.15, norm_scale=0.3):
    """Build, randomize (gen_model_goldens.randomize with scale, norm_scale),
    post(model, seed), save tests/goldens/<name>/ and its goldens."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = build()
    model.eval()
    randomize(model, seed, scale, norm_scale)
    if post:
        post(model, seed)
    out_dir = os.path.join(HERE, name)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    model.save_pretrained(out_dir)
    # the class that saved it (a ConditionalGeneration model reloads as itself)
    cls = type(model) if "ConditionalGeneration" in type(model).__name__ else AutoModelForCausalLM
    model = cls.from_pretrained(out_dir, dtype=torch.float32)
    model.eval()
    p = os.path.join(out_dir, "generation_config.json")
    if os.path.exists(p):
        os.remove(p)
    tiny_tokenizer(out_dir)
    tokenizer_config(out_dir)

    rng = np.random.default_rng(seed)
    gold = common_goldens(model, rng, lengths=(1, 7, 20, 45, 300))
    prompt = rng.integers(0, VOCAB, 10).tolist()
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, 10, dtype=torch.long),
                             max_new_tokens=24, min_new_tokens=24, do_sample=False,
                             eos_token_id=None, pad_token_id=0)
    gold["greedy.ids"] = torch.tensor(prompt, dtype=torch.int32)
    gold["greedy.out"] = out[0, 10:].to(torch.int32).contiguous()
    # Sanity: the full forward agrees with transformers' own incremental decode.
    full = logits_of(model, gold["decode.ids"].tolist())
    d = (full - gold["decode.logits"]).abs().max().item()
    assert d < 1e-4, d
    save_file(gold, os.path.join(out_dir, "golden.safetensors"))
    f64_goldens(out_dir)
    print(f"{name}: wrote {out_dir} (decode vs full {d:.2e})")


def main():
    which = sys.argv[1:] or ["lfm2", "qwen3_5", "qwen3_5_vl", "lfm2_wc", "qwen3_5_wc"]
    if "lfm2" in which:
        make("tiny-lfm2", lfm2_model, seed=11)
    if "qwen3_5" in which:
        make("tiny-qwen3_5", qwen3_5_model, seed=12, post=slow_decay)
    if "qwen3_5_vl" in which:
        make("tiny-qwen3_5-vl", qwen3_5_vl_model, seed=13, post=slow_decay)
    if "lfm2_wc" in which:
        make("tiny-lfm2-wc", lambda: lfm2_model(tied=False), seed=11, scale=0.05, norm_scale=0.1)
    if "qwen3_5_wc" in which:
        make("tiny-qwen3_5-wc", qwen3_5_model, seed=12, scale=0.04, norm_scale=0.1,
             post=lambda m, s: (centered_norms(m, s), slow_decay(m, s)))


if __name__ == "__main__":
    main()
