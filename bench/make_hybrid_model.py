"""Write a random-weight HF directory shaped like a real hybrid backbone, for
bench_runtime (no real weights of these are reachable offline here):

  qwen3.5-0.8b   Qwen3.5-0.8B text model: hidden 1024, 24 layers (18 Gated
                 DeltaNet + 6 gated attention, every 4th), MLP 3584, 8 q / 2 kv
                 heads x 256 (partial RoPE 0.25), DeltaNet 16 k / 16 v heads x 128,
                 conv 4, vocab 248320, tied embeddings (deg-contract.md §12.8)
  lfm2-1.2b      LFM2-1.2B: hidden 2048, 16 layers (10 short conv + 6 GQA at
                 2,5,8,10,12,14), MLP 8192, 32 q / 8 kv heads x 64, conv 3,
                 vocab 65536, tied embeddings

Weights are F16 (deg dequantizes them to f32 at load, as for a real bf16/f16
checkpoint); the tokenizer is the tests' tiny one (ids are what is timed).
--layers N keeps the first N layers (same per-layer shapes) for a smaller run.

    python bench/make_hybrid_model.py qwen3.5-0.8b OUT_DIR [--layers N]
    build/bench/bench_runtime --model OUT_DIR --prompt 256 --decode 16
(needs numpy + safetensors)
"""
import argparse
import json
import shutil
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

TOK = Path(__file__).resolve().parents[1] / "tests" / "goldens" / "tiny-lfm2"

SHAPES = {
    "qwen3.5-0.8b": dict(
        model_type="qwen3_5_text", hidden_size=1024, num_hidden_layers=24,
        intermediate_size=3584, num_attention_heads=8, num_key_value_heads=2, head_dim=256,
        linear_num_key_heads=16, linear_num_value_heads=16, linear_key_head_dim=128,
        linear_value_head_dim=128, linear_conv_kernel_dim=4, vocab_size=248320,
        rms_norm_eps=1e-6, tie_word_embeddings=True, hidden_act="silu",
        max_position_embeddings=262144,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                         "partial_rotary_factor": 0.25}),
    "lfm2-1.2b": dict(
        model_type="lfm2", hidden_size=2048, num_hidden_layers=16, intermediate_size=12288,
        block_ffn_dim_multiplier=1.0, block_multiple_of=256, block_auto_adjust_ff_dim=True,
        num_attention_heads=32, num_key_value_heads=8, conv_L_cache=3, vocab_size=65536,
        norm_eps=1e-5, tie_word_embeddings=True, max_position_embeddings=128000,
        full_attn_idxs=[2, 5, 8, 10, 12, 14],
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
}


def qwen_layers(c, n):
    types = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(n)]
    E, D, F = c["hidden_size"], c["head_dim"], c["intermediate_size"]
    H, KV = c["num_attention_heads"], c["num_key_value_heads"]
    nk, nv = c["linear_num_key_heads"], c["linear_num_value_heads"]
    dk, dv, K = c["linear_key_head_dim"], c["linear_value_head_dim"], c["linear_conv_kernel_dim"]
    cd = 2 * nk * dk + nv * dv
    for i, t in enumerate(types):
        p = f"model.layers.{i}."
        yield p + "input_layernorm.weight", (E,)
        yield p + "post_attention_layernorm.weight", (E,)
        for w, s in (("gate_proj", (F, E)), ("up_proj", (F, E)), ("down_proj", (E, F))):
            yield p + f"mlp.{w}.weight", s
        if t == "full_attention":
            a = p + "self_attn."
            yield a + "q_proj.weight", (2 * H * D, E)
            yield a + "k_proj.weight", (KV * D, E)
            yield a + "v_proj.weight", (KV * D, E)
            yield a + "o_proj.weight", (E, H * D)
            yield a + "q_norm.weight", (D,)
            yield a + "k_norm.weight", (D,)
        else:
            a = p + "linear_attn."
            yield a + "in_proj_qkv.weight", (cd, E)
            yield a + "in_proj_z.weight", (nv * dv, E)
            yield a + "in_proj_b.weight", (nv, E)
            yield a + "in_proj_a.weight", (nv, E)
            yield a + "conv1d.weight", (cd, 1, K)
            yield a + "A_log", (nv,)
            yield a + "dt_bias", (nv,)
            yield a + "norm.weight", (dv,)
            yield a + "out_proj.weight", (E, nv * dv)
    c["layer_types"] = types
    yield "model.norm.weight", (E,)


def lfm2_layers(c, n):
    attn = set(c.pop("full_attn_idxs"))
    types = ["full_attention" if i in attn else "conv" for i in range(n)]
    E, H, KV = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    D, F, K = E // H, 8192, c["conv_L_cache"]
    for i, t in enumerate(types):
        p = f"model.layers.{i}."
        yield p + "operator_norm.weight", (E,)
        yield p + "ffn_norm.weight", (E,)
        for w, s in (("w1", (F, E)), ("w3", (F, E)), ("w2", (E, F))):
            yield p + f"feed_forward.{w}.weight", s
        if t == "full_attention":
            a = p + "self_attn."
            yield a + "q_proj.weight", (H * D, E)
            yield a + "k_proj.weight", (KV * D, E)
            yield a + "v_proj.weight", (KV * D, E)
            yield a + "out_proj.weight", (E, H * D)
            yield a + "q_layernorm.weight", (D,)
            yield a + "k_layernorm.weight", (D,)
        else:
            yield p + "conv.in_proj.weight", (3 * E, E)
            yield p + "conv.conv.weight", (E, 1, K)
            yield p + "conv.out_proj.weight", (E, E)
    c["layer_types"] = types
    yield "model.embedding_norm.weight", (E,)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=0)
    a = ap.parse_args()
    c = json.loads(json.dumps(SHAPES[a.shape]))
    n = a.layers or c["num_hidden_layers"]
    c["num_hidden_layers"] = n
    rng = np.random.default_rng(0)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    gen = qwen_layers if c["model_type"] == "qwen3_5_text" else lfm2_layers
    w = {"model.embed_tokens.weight": (c["vocab_size"], c["hidden_size"])}
    w.update(dict(gen(c, n)))
    t = {}
    for k, s in w.items():
        if len(s) == 1:  # norms, A_log, dt_bias: small f32 vectors
            t[k] = (0.1 * rng.standard_normal(s)).astype(np.float32)
        else:
            fan_in = s[-1] if len(s) == 2 else s[-1]
            t[k] = (rng.standard_normal(s, dtype=np.float32) / np.sqrt(fan_in)).astype(np.float16)
    save_file(t, str(out / "model.safetensors"))
    c["bos_token_id"], c["eos_token_id"] = 1, 2
    (out / "config.json").write_text(json.dumps(c, indent=2))
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(TOK / f, out / f)
    print(f"{a.shape}: {n} layers, {sum(int(np.prod(s)) for s in w.values()) / 1e6:.0f}M params -> {out}")


if __name__ == "__main__":
    main()
