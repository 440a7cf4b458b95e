#!/usr/bin/env python3
"""Goldens for bytes a vocabulary has no token for (issue 19 item 5).

Hugging Face `tokenizers` (the reference) drops such a byte in its BPE model
(no unk_token: the character is skipped, its neighbours become adjacent and
may merge). This writes tests/goldens/tokenizer/dropped_bytes.json: texts with
SmolLM2's missing bytes (control bytes 0x04 0x06 0x13 0x14 0x16 0x1d, UTF-8
lead bytes 0xf1 0xf2 of 4-byte characters) and HF's ids and character
offsets for each, encoded with tokenizer/smollm2.tokenizer.json.gz, plus the
list of missing bytes. tests/c/test_tokenizer.c checks deg_tokenize_ex with
DEG_TOKENIZE_DROP_MISSING_BYTES gives the same ids. Regenerate:

    python -m venv /tmp/tok && /tmp/tok/bin/pip install tokenizers==0.23.3
    /tmp/tok/bin/python tests/goldens/gen_tokenizer_dropped.py
"""
import gzip
import json
import os

import tokenizers
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))


def byte_chars():
    """GPT-2's byte -> unicode char table (ByteLevel)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1))
          + list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


TEXTS = [
    "a\x04b", "\x04", "\x04\x04\x04", "ab\x04\x04cd", "x \x04 y",
    "Order\x1d4711\x1dACME Corp\x1d2026-03-05",       # GS-separated barcode / EDI fields
    "]C1\x1d0104012345123456\x1d17260305\x1d10ABC123",  # GS1 element string
    "h\u00e9llo\x1dw\u00f6rld", "2026\x1d05", "Total\x06: $4.02\x13\x14\x16 USD.",
    "line one\x04\nline two\x1d\n", "\x1dstart and end\x1d",
    "plane 4: \U00040000 and \U00050001 and \U0008ffff!",  # lead bytes 0xf1 / 0xf2
    "mixed \U00040000\x04\U0001f600 ok", "no odd bytes at all",
]


def main():
    tj = gzip.open(os.path.join(HERE, "tokenizer", "smollm2.tokenizer.json.gz")).read().decode()
    tok = Tokenizer.from_str(tj)
    vocab = tok.get_vocab()
    bc = byte_chars()
    missing = [b for b in range(256) if bc[b] not in vocab]
    cases = []
    for t in TEXTS:
        e = tok.encode(t, add_special_tokens=False)
        cases.append({"text": t, "ids": e.ids, "offsets": [list(o) for o in e.offsets]})
    out = {"generator": f"tokenizers {tokenizers.__version__}",
           "tokenizer": "tokenizer/smollm2.tokenizer.json.gz",
           "missing_bytes": missing, "cases": cases}
    with open(os.path.join(HERE, "tokenizer", "dropped_bytes.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=True)
        f.write("\n")
    print(f"{len(cases)} cases, missing bytes {[hex(b) for b in missing]}")


if __name__ == "__main__":
    main()
