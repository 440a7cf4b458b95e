"""Cartridge evaluation on held-out questions with human-written reference answers.

`deg cartridge eval --qa FILE` (issue 13). A Q&A file (format "deg-qa/1",
bench/qa/extract_qa.py) holds questions and reference answers written by
people (e.g. an FAQ's own entries), never by a model, so the score cannot
flatter a cartridge distilled from the model's own answers. Four arms, each
a prefix the question is asked behind:

  bare        no prefix
  untrained   the corpus-init cartridge of the same p (the control: the
              first p tokens' own K/V; what training must beat)
  trained     the cartridge under test
  in_context  the whole corpus as a system message (ICL)

Per arm: NLL per token of the reference answers (teacher-forced after the
question in the chat layout, answer tokens only, the end-of-turn token not
scored), KV rows (prefix rows + the question's and answer's rows, mean over
items), and answer correctness of the greedy answer (max_tokens) by the
key-fact rule (key_facts / is_correct). Gap closure of an arm =
(NLL_bare - NLL_arm) / (NLL_bare - NLL_in_context).
"""
import gzip
import hashlib
import json
import math
import re
from collections import namedtuple
from pathlib import Path

from .errors import ArgumentError, DegIOError, FormatError

__all__ = ["QAItem", "load_qa", "qa_corpus", "key_facts", "is_correct", "qa_evaluate",
           "ARMS", "format_table"]

QAItem = namedtuple("QAItem", "id question answer offset")
ARMS = ("bare", "untrained", "trained", "in_context")

# ---------------------------------------------------------------------------
# Q&A files
# ---------------------------------------------------------------------------


def load_qa(path):
    """Read a deg-qa/1 file: returns (meta dict, [QAItem]). FormatError names
    the file and the item for anything malformed."""
    try:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise DegIOError(f"qa: cannot read {str(path)!r}: {e.strerror or e}") from None
    except ValueError as e:
        raise FormatError(f"qa: {str(path)!r} is not JSON: {e}") from None
    if not isinstance(d, dict) or d.get("format") != "deg-qa/1":
        raise FormatError(f"qa: {str(path)!r}: expected an object with format 'deg-qa/1'")
    items = d.get("items")
    if not isinstance(items, list) or not items:
        raise FormatError(f"qa: {str(path)!r}: 'items' must be a non-empty list")
    out = []
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            raise FormatError(f"qa: {str(path)!r} item {i}: not an object")
        q, a = it.get("question"), it.get("answer")
        if not isinstance(q, str) or not q.strip() or not isinstance(a, str) or not a.strip():
            raise FormatError(f"qa: {str(path)!r} item {i}: 'question' and 'answer' must be "
                              "non-empty strings")
        off = it.get("offset")
        if off is not None and (not isinstance(off, int) or isinstance(off, bool) or off < 0):
            raise FormatError(f"qa: {str(path)!r} item {i}: 'offset' must be a non-negative "
                              "integer")
        out.append(QAItem(it.get("id", i), q.strip(), a.strip(), off))
    meta = {k: v for k, v in d.items() if k != "items"}
    return meta, out


def qa_corpus(meta):
    """(name, text) of a Q&A file's source document (gzip read if .gz);
    FormatError if its sha256 differs from the one the set was made from."""
    src = meta.get("source")
    if not isinstance(src, str):
        raise FormatError("qa: the file names no 'source'; give --corpus")
    try:
        data = Path(src).read_bytes()
    except OSError as e:
        raise DegIOError(f"qa: cannot read the source {src!r}: {e.strerror or e}") from None
    if src.endswith(".gz"):
        data = gzip.decompress(data)
    text = data.decode("utf-8")
    want = meta.get("source_sha256")
    if want and hashlib.sha256(text.encode()).hexdigest() != want:
        raise FormatError(f"qa: {src!r} is not the text the set was extracted from "
                          f"(sha256 {want[:12]}...)")
    return src, text


# ---------------------------------------------------------------------------
# Correctness: the key-fact rule
# ---------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9](?:[a-z0-9_.+/@:-]*[a-z0-9])?")
_STOP = frozenset("""
a about above after again all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers him his how i if in into is it its itself just me more
most my of off on once only or other our out over own same she should so some such than that
the their them then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours see use used
using get got may might must shall one two make makes made
""".split())


def _words(text):
    return _WORD.findall(text.lower())


def key_facts(question, answer):
    """The reference's key facts: the distinct content words (lower-case
    alphanumeric runs, '.', '/', '_', '-', '+', '@', ':' inside; stop words
    and single letters dropped) of its FIRST sentence that the question does not already
    contain. Falls back to the first sentence's content words, then to all
    its words, when that leaves nothing (e.g. 'Yes.' keeps 'yes')."""
    first = re.split(r"(?<=[.!?])\s+", answer.strip(), maxsplit=1)[0]
    qw = set(_words(question))
    words = _words(first)
    content = [w for w in words if w not in _STOP and (len(w) > 1 or w.isdigit())]
    for cand in ([w for w in content if w not in qw], content, words):
        if cand:
            return list(dict.fromkeys(cand))
    return []


def is_correct(text, keys):
    """An answer is correct when it contains at least half of the key facts
    (as whole words, case-insensitive). Returns (correct, recall)."""
    if not keys:
        return False, 0.0
    have = set(_words(text))
    hits = sum(k in have for k in keys)
    return 2 * hits >= len(keys), hits / len(keys)


# ---------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------

def _arm_prefixes(model, corpus, arms):
    """{arm: (trunk factory, tail builder)}: the tail of an item's ids after
    the arm's prefix (the in-context arm's system message lives in its trunk)."""
    from .selfstudy import chat_ids
    sys_ids = chat_ids(model, [{"role": "system", "content": corpus.text}],
                       add_generation_prompt=False)

    def plain(q):
        return chat_ids(model, [{"role": "user", "content": q}])

    def icl(q):
        full = chat_ids(model, [{"role": "system", "content": corpus.text},
                                {"role": "user", "content": q}])
        if full[:len(sys_ids)] != sys_ids:
            raise FormatError("corpus system message is not a prefix of the chat layout")
        return full[len(sys_ids):]

    out = {}
    for arm, cart in arms.items():
        if arm == "in_context":
            out[arm] = (lambda: model.trunk(sys_ids), icl, len(sys_ids))
        elif cart is None:
            out[arm] = (model.trunk, plain, 0)
        else:
            out[arm] = (cart.trunk, plain, len(cart))
    return out


def _score_arm(model, make_trunk, tail, items, ref_ids, batch, max_tokens, stops):
    """Per item: (sum logprob of the reference, greedy answer text, KV rows
    beyond the prefix). One trunk; forks fed `batch` at a time."""
    from .selfstudy import _logprob_rows
    from .model import feed_forks, generate_forks
    nv = model.info.n_vocab
    lps, texts, rows = [], [], []
    trunk = make_trunk()
    try:
        for s in range(0, len(items), batch):
            part = range(s, min(s + batch, len(items)))
            prompts = [tail(items[i].question) for i in part]
            forks = [trunk.fork() for _ in part]
            seqs = [pr + ref_ids[i][:-1] for pr, i in zip(prompts, part)]
            out = feed_forks(forks, seqs, logits="all")
            for pr, i, r in zip(prompts, part, out):
                lps.append(_logprob_rows(r[(len(pr) - 1) * nv:], nv, ref_ids[i]))
                rows.append(len(pr) + len(ref_ids[i]))
            for f in forks:
                f.close()
            if max_tokens:
                forks = [trunk.fork() for _ in part]
                feed_forks(forks, prompts)
                gens = generate_forks(forks, max_tokens, 0.0, stop_ids=stops)
                for f in forks:
                    f.close()
                texts += [model.detokenize([t for t in g.ids if t not in stops],
                                           errors="replace").strip() for g in gens]
    finally:
        trunk.close()
    return lps, texts, rows


def qa_evaluate(model, corpus, items, trained=None, p=None, max_tokens=64, batch=8,
                arms=ARMS, progress=None):
    """Score items (QAItems) under the four arms. trained: the Cartridge
    under test (None: the trained arm is skipped, p gives the control's
    rows). Returns a dict (JSON-ready): per-arm aggregates, per-item NLL,
    answers and correctness, gap closures, and the same aggregates over
    the items whose answer starts beyond the first p corpus tokens
    (`beyond_init`: the untrained control holds the first p tokens
    verbatim, so items inside them test recall of the init, not training)."""
    from .cartridge import Cartridge
    from .selfstudy import chat_ids
    import time
    if trained is not None:
        p = len(trained)
    if p is None or p < 2:
        raise ArgumentError("qa_evaluate needs a trained cartridge or p >= 2")
    arms = [a for a in arms if a in ARMS and (a != "trained" or trained is not None)]
    if not items:
        raise ArgumentError("qa_evaluate: no items")
    stops = model.stop_ids()
    ref_ids = [model.tokenize(it.answer) for it in items]
    n_ref = [len(r) for r in ref_ids]
    control = Cartridge.from_corpus(model, corpus.text, p) if "untrained" in arms else None
    carts = {"bare": None, "untrained": control, "trained": trained, "in_context": None}
    prefixes = _arm_prefixes(model, corpus, {a: carts[a] for a in arms})
    res = {}
    try:
        for arm in arms:
            make, tail, n_prefix = prefixes[arm]
            t0 = time.process_time()
            lps, texts, rows = _score_arm(model, make, tail, items, ref_ids, batch,
                                          max_tokens, stops)
            res[arm] = (lps, texts, [n_prefix + r for r in rows], time.process_time() - t0)
            if progress:
                progress(arm)
    finally:
        if control is not None:
            control.close()
    return _report(model, corpus, items, p, arms, res, n_ref, max_tokens)


def _init_position(model, corpus, it):
    """Token index in the wrapped corpus (after "<|im_start|>system\n")
    where the item's answer text starts (its first words, any whitespace,
    after the question), or None when the corpus does not contain it."""
    def pat(text, n):
        return r"\s+".join(re.escape(w) for w in text.split()[:n])
    q = re.search(pat(it.question, 8), corpus.text)
    m = re.search(pat(it.answer, 6), corpus.text[q.end() if q else 0:])
    if m is None:
        return None
    k = (q.end() if q else 0) + m.start()
    return len(model.tokenize(corpus.text[:k])) + 3


def _aggregate(idx, arms, res, n_ref, keys, max_tokens):
    n_tok = sum(n_ref[i] for i in idx)
    agg = {}
    for arm in arms:
        lps, texts, rows, cpu = res[arm]
        a = {"nll": -sum(lps[i] for i in idx) / n_tok if n_tok else float("nan"),
             "kv_rows": sum(rows[i] for i in idx) / len(idx) if idx else float("nan")}
        if max_tokens and idx:
            sc = [is_correct(texts[i], keys[i]) for i in idx]
            a["correct"] = sum(c for c, _ in sc)
            a["key_recall"] = sum(r for _, r in sc) / len(sc)
        agg[arm] = a
    out = {"n_items": len(idx), "n_tokens": n_tok, "arms": agg}
    if "in_context" in agg and "bare" in agg:
        gap = agg["bare"]["nll"] - agg["in_context"]["nll"]
        out["gap_closure"] = {a: ((agg["bare"]["nll"] - agg[a]["nll"]) / gap
                                  if gap else float("nan"))
                              for a in arms if a in ("untrained", "trained")}
    return out


def _report(model, corpus, items, p, arms, res, n_ref, max_tokens):
    keys = [key_facts(it.question, it.answer) for it in items]
    pos = [_init_position(model, corpus, it) for it in items]
    all_idx = list(range(len(items)))
    beyond = [i for i in all_idx if pos[i] is not None and pos[i] >= p]
    out = {"p": p, "corpus_tokens": len(corpus), "max_tokens": max_tokens,
           "all": _aggregate(all_idx, arms, res, n_ref, keys, max_tokens),
           "beyond_init": _aggregate(beyond, arms, res, n_ref, keys, max_tokens),
           "cpu_seconds": {a: res[a][3] for a in arms}, "items": []}
    for i, it in enumerate(items):
        rec = {"id": it.id, "question": it.question, "reference": it.answer,
               "key_facts": keys[i], "answer_token": pos[i], "tokens": n_ref[i],
               "nll": {a: -res[a][0][i] / n_ref[i] for a in arms}}
        if max_tokens:
            rec["answers"] = {a: res[a][1][i] for a in arms}
            rec["correct"] = {a: is_correct(res[a][1][i], keys[i])[0] for a in arms}
        out["items"].append(rec)
    return out


def format_table(rep, title=""):
    """The report's aggregates as a text table (all items, then beyond_init)."""
    lines = [title] if title else []
    for part, name in (("all", "all items"), ("beyond_init", f"answers beyond the first "
                                                             f"{rep['p']} tokens")):
        r = rep[part]
        lines.append(f"{name}: {r['n_items']} items, {r['n_tokens']} reference tokens")
        if part == "beyond_init" and not r["n_items"]:
            # _init_position finds an answer by its first words in the corpus: answers in
            # other words than the document's have no position (and no row here)
            lines.append("  (no item placed: an answer counts here when its first words are "
                         "found in the corpus after its question; quote the document to use it)")
            continue
        lines.append(f"  {'arm':<11} {'NLL/token':>9} {'KV rows':>8} {'gap closure':>11} "
                     f"{'correct':>8} {'key recall':>10}")
        for arm, a in r["arms"].items():
            g = r.get("gap_closure", {}).get(arm)
            gs = f"{g:11.3f}" if g is not None and not math.isnan(g) else f"{'':>11}"
            c = (f"{a['correct']:>4}/{r['n_items']:<3} {a['key_recall']:10.3f}"
                 if "correct" in a else "")
            lines.append(f"  {arm:<11} {a['nll']:9.4f} {a['kv_rows']:8.0f} {gs} {c}")
    return "\n".join(lines)
