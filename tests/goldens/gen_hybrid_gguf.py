#!/usr/bin/env python3
"""Convert the tiny hybrid and Gemma 4 HF goldens to GGUF with llama.cpp's own
converter (convert_hf_to_gguf.py), so deg's GGUF loader is checked against the
names, metadata and tensor transforms llama.cpp really writes:

  tests/goldens/tiny-gguf/tiny-lfm2.gguf            tiny-lfm2 (LFM2Model), f32
  tests/goldens/tiny-gguf/tiny-qwen3_5.gguf         tiny-qwen3_5 (Qwen3_5TextModel:
      general.architecture qwen35; 1 + w norms, A = -exp(A_log), value heads
      reordered from grouped to tiled since it has 2 key and 4 value heads), f32
  tests/goldens/tiny-gguf/tiny-qwen3_5.q8_0.gguf    the same, --outtype q8_0
  tests/goldens/tiny-gguf/tiny-gemma4.gguf          tiny-gemma4 (Gemma4Model: per-layer
      K/V heads, key_length_swa, rope_freqs for the proportional RoPE, V = K), f32
  tests/goldens/tiny-gguf/tiny-gemma4.q8_0.gguf     the same, --outtype q8_0
  tests/goldens/tiny-gguf/tiny-gemma4-kvshare.gguf  shared_kv_layers, double-wide MLPs
  tests/goldens/tiny-gguf/tiny-gemma4-moe.gguf      experts, router scales

The C tests (tests/c/test_model.c, tiny_gguf_matches_hf_dir and
quantized_gguf_matches_transformers) load them beside the HF directories and
check the logits against transformers' goldens of the HF directory. For each
quantized file the script also writes <file>.golden.safetensors: transformers'
prefill logits (on the HF golden's prefill.3.ids) of the HF model whose
quantized matrices (and the f16 ones the converter writes where rows do not
split into Q8_0 blocks) are replaced by the file's values dequantized with gguf-py
(each mapped back to its HF tensor through gguf-py's tensor name map, the
value-head reorder undone by the inverse of the converter's own permutation);
every other tensor of the file is f32 and bitwise the HF one (the f32 files
show it).

The converter's tokenizer steps are pinned for these test tokenizers (the
vocabulary and merges are still written by the converter; deg's tokenizer is
not what is tested here):
- the tiny test tokenizer's pre-tokenizer is not in llama.cpp's list of known
  tokenizer hashes, so get_vocab_base_pre is pinned to "default";
- Gemma4Model.set_vocab reads a Gemma (SentencePiece-style byte-fallback BPE)
  tokenizer and writes tokenizer.ggml.model "gemma4"; the tiny Gemma 4 models
  carry the byte-level BPE test tokenizer, so their vocabulary is written as
  the converter writes any byte-level BPE ("gpt2", _set_vocab_gpt2). A real
  Gemma 4 GGUF's "gemma4" tokenizer is refused by deg's tokenizer loader
  (only "gpt2" is read) with a message naming tokenizer.ggml.model.
- Qwen3.5 is converted with --no-mtp (the tiny checkpoint has no MTP layers;
  the converter otherwise asserts it finds some).

Usage: /tmp/lora-torch/bin/python tests/goldens/gen_hybrid_gguf.py [NAME[:OUTTYPE] ...]
(needs torch, transformers and a llama.cpp source tree: $LLAMA_CPP_DIR, default
the one vendored in the llama-cpp-python 0.3.36 sdist under /work/llamacpp).
The converter's output is deterministic: rerunning rewrites the same bytes.
"""
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LLAMA_CPP = os.environ.get(
    "LLAMA_CPP_DIR", "/work/llamacpp/llama_cpp_python-0.3.36/vendor/llama.cpp")

DEFAULT = ["tiny-lfm2", "tiny-qwen3_5", "tiny-qwen3_5:q8_0", "tiny-gemma4", "tiny-gemma4:q8_0",
           "tiny-gemma4-kvshare", "tiny-gemma4-moe"]


def convert(src, out, outtype):
    sys.path.insert(0, LLAMA_CPP)
    sys.path.insert(1, os.path.join(LLAMA_CPP, "gguf-py"))
    import conversion.base as base
    import conversion.gemma as gemma

    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "default"
    gemma.Gemma4Model.set_vocab = lambda self: self._set_vocab_gpt2()
    argv = sys.argv
    sys.argv = ["convert_hf_to_gguf.py", src, "--outfile", out, "--outtype", outtype]
    if "qwen3_5" in os.path.basename(src):
        sys.argv.append("--no-mtp")
    try:
        runpy.run_path(os.path.join(LLAMA_CPP, "convert_hf_to_gguf.py"), run_name="__main__")
    finally:
        sys.argv = argv


def quantized_golden(name, gguf_path):
    """transformers' logits of the dequantized quantized file (see above)."""
    import numpy as np
    import torch
    import gguf
    from safetensors.numpy import load_file, save_file
    from transformers import AutoModelForCausalLM

    src = os.path.join(HERE, name)
    model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32).eval()
    cfg = model.config
    arch = {"qwen3_5_text": gguf.MODEL_ARCH.QWEN35,
            "gemma4_text": gguf.MODEL_ARCH.GEMMA4}[cfg.model_type]
    tmap = gguf.get_tensor_name_map(arch, cfg.num_hidden_layers)
    sd = model.state_dict()
    by_gguf = {}
    for k in sd:
        g = tmap.get_name(k, try_suffixes=(".weight", ".bias"))
        if g is not None:
            by_gguf.setdefault(g, []).append(k)
    nk = getattr(cfg, "linear_num_key_heads", 0)
    nv = getattr(cfg, "linear_num_value_heads", 0)

    def untile(t, dim, head_dim):
        # inverse of the converter's _reorder_v_heads (grouped -> tiled)
        if not nk or nk == nv:
            return t
        shape = list(t.shape)
        r = nv // nk
        t = t.reshape(*shape[:dim], r, nk, head_dim, *shape[dim + 1:])
        t = t.transpose(dim, dim + 1)
        return t.reshape(*shape)

    reader = gguf.GGUFReader(gguf_path)
    n_q = 0
    for t in reader.tensors:
        if t.tensor_type == gguf.GGMLQuantizationType.F32:
            continue
        keys = by_gguf.get(t.name)
        if not keys:
            raise SystemExit(f"{gguf_path}: quantized tensor {t.name} maps to no HF tensor")
        w = torch.from_numpy(np.array(gguf.quants.dequantize(t.data, t.tensor_type)))
        for which in keys:
            v = w.reshape(sd[which].shape).clone()
            if which.endswith(("in_proj_z.weight", "in_proj_a.weight", "in_proj_b.weight")):
                hd = cfg.linear_value_head_dim if "in_proj_z" in which else 1
                v = untile(v, 0, hd)
            elif which.endswith("in_proj_qkv.weight"):
                qk = 2 * nk * cfg.linear_key_head_dim
                v = torch.cat([v[:qk], untile(v[qk:], 0, cfg.linear_value_head_dim)])
            elif which.endswith("linear_attn.out_proj.weight"):
                v = untile(v, 1, cfg.linear_value_head_dim)
            sd[which].copy_(v)
            n_q += 1
    g = load_file(os.path.join(src, "golden.safetensors"))
    ids = g["prefill.3.ids"].astype(np.int64)
    with torch.no_grad():
        logits = model(torch.from_numpy(ids)[None]).logits[0].float().numpy()
    out = gguf_path[:-len(".gguf")] + ".golden.safetensors"
    save_file({"ids": g["prefill.3.ids"], "logits": np.ascontiguousarray(logits)}, out)
    print(f"{name}: {n_q} dequantized tensors, wrote {out}")


def main():
    out_dir = os.path.join(HERE, "tiny-gguf")
    os.makedirs(out_dir, exist_ok=True)
    for spec in sys.argv[1:] or DEFAULT:
        name, _, outtype = spec.partition(":")
        outtype = outtype or "f32"
        fname = name + ("" if outtype == "f32" else "." + outtype) + ".gguf"
        convert(os.path.join(HERE, name), os.path.join(out_dir, fname), outtype)
        print(f"{name}: wrote {os.path.join(out_dir, fname)}")
        if outtype not in ("f32", "f16", "bf16"):
            quantized_golden(name, os.path.join(out_dir, fname))


if __name__ == "__main__":
    main()
