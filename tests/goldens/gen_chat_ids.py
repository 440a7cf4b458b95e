#!/usr/bin/env python3
"""Goldens for deg_chat_tokenize: the token ids of each conversation of
chat_goldens.json (the text transformers' apply_chat_template renders) as
Hugging Face `tokenizers` encodes it (Tokenizer.encode(text,
add_special_tokens=False), which is what apply_chat_template(...,
tokenize=True) returns).

- "chatml" cases: SmolLM2-135M-Instruct's tokenizer.json
  (tests/goldens/tokenizer/smollm2.tokenizer.json.gz).
- "qwen3" cases: the tiny Qwen3 test model's tokenizer.json
  (tests/goldens/tiny-qwen3/tokenizer.json).
- "lfm2" cases: the tiny test tokenizer with LFM2's BOS "<|startoftext|>"
  added as a special token (written here to tests/goldens/tokenizer/
  lfm2-chat.tokenizer.json), so the ids show the BOS parsed as one token.

Usage: python tests/goldens/gen_chat_ids.py (needs `pip install tokenizers`).
Writes tests/goldens/chat_ids.json.
"""
import gzip
import json
import os

from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    with gzip.open(os.path.join(HERE, "tokenizer", "smollm2.tokenizer.json.gz"), "rt",
                   encoding="utf-8") as f:
        smol = Tokenizer.from_str(f.read())
    qwen3 = Tokenizer.from_file(os.path.join(HERE, "tiny-qwen3", "tokenizer.json"))
    lfm2 = Tokenizer.from_file(os.path.join(HERE, "tiny-tokenizer", "tokenizer.json"))
    lfm2.add_special_tokens(["<|startoftext|>"])
    lfm2.save(os.path.join(HERE, "tokenizer", "lfm2-chat.tokenizer.json"))
    toks = {"chatml": smol, "qwen3": qwen3, "lfm2": lfm2}
    with open(os.path.join(HERE, "chat_goldens.json"), encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    out = []
    for c in cases:
        tok = toks[c["layout"]]
        out.append({"layout": c["layout"], "name": c["name"],
                    "add_generation_prompt": c["add_generation_prompt"],
                    "ids": tok.encode(c["text"], add_special_tokens=False).ids})
    doc = {"source": "tokenizers %s encode of chat_goldens.json texts; see gen_chat_ids.py"
           % __import__("tokenizers").__version__,
           "tokenizers": {"chatml": "tokenizer/smollm2.tokenizer.json.gz",
                          "qwen3": "tiny-qwen3/tokenizer.json",
                          "lfm2": "tokenizer/lfm2-chat.tokenizer.json"},
           "cases": out}
    with open(os.path.join(HERE, "chat_ids.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(out)} cases")


if __name__ == "__main__":
    main()
