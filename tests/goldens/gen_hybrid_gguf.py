#!/usr/bin/env python3
"""Convert the tiny hybrid HF goldens to GGUF with llama.cpp's own converter
(convert_hf_to_gguf.py), so deg's GGUF loader is checked against the names,
metadata and tensor transforms llama.cpp really writes:

  tests/goldens/tiny-gguf/tiny-lfm2.gguf   tests/goldens/tiny-lfm2 (LFM2Model), f32

The C test (tests/c/test_model.c, hybrid_gguf_matches_hf_dir) loads both and
asserts bitwise-equal logits (so the transformers goldens of the HF
directory hold for the GGUF too).

The tiny test tokenizer's pre-tokenizer is not in llama.cpp's list of known
tokenizer hashes, so get_vocab_base_pre is pinned to "default" (the vocabulary
and merges are still written by the converter; deg's tokenizer is not what is
tested here).

Usage: /tmp/lora-torch/bin/python tests/goldens/gen_hybrid_gguf.py
(needs torch, transformers and a llama.cpp source tree: $LLAMA_CPP_DIR, default
the one vendored in the llama-cpp-python 0.3.36 sdist under /work/llamacpp).
"""
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LLAMA_CPP = os.environ.get(
    "LLAMA_CPP_DIR", "/work/llamacpp/llama_cpp_python-0.3.36/vendor/llama.cpp")


def convert(src, out):
    sys.path.insert(0, LLAMA_CPP)
    sys.path.insert(1, os.path.join(LLAMA_CPP, "gguf-py"))
    import conversion.base as base

    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "default"
    argv = sys.argv
    sys.argv = ["convert_hf_to_gguf.py", src, "--outfile", out, "--outtype", "f32"]
    try:
        runpy.run_path(os.path.join(LLAMA_CPP, "convert_hf_to_gguf.py"), run_name="__main__")
    finally:
        sys.argv = argv


def main():
    out_dir = os.path.join(HERE, "tiny-gguf")
    os.makedirs(out_dir, exist_ok=True)
    for name in sys.argv[1:] or ["tiny-lfm2"]:
        convert(os.path.join(HERE, name), os.path.join(out_dir, name + ".gguf"))
        print(f"{name}: wrote {os.path.join(out_dir, name + '.gguf')}")


if __name__ == "__main__":
    main()
