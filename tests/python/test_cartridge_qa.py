"""`deg cartridge eval --qa` (deg.cartridge_qa) and corpus-recall self-study
(issue 13) on the tiny random qwen3 of tests/goldens; the committed Q&A sets
re-extracted from this machine's FAQs (skipped where the packages are absent)."""
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

import deg
from deg import cartridge_qa as qa
from deg import selfstudy as cs

from conftest import ROOT, needs, run_cli

pytestmark = needs("deg_tokenize", "deg_chat_format", "deg_forks_generate",
                   "deg_cartridge_init_corpus")

TINY = ROOT / "tests" / "goldens" / "tiny-qwen3"
TEXT = ("Why is the sky blue? Rayleigh scattering of sunlight by the air. "
        "What is the capital of Peru? Lima, on the Pacific coast. "
        "Who wrote the FAQ? Nobody in this project. ") * 3
ITEMS = [("Why is the sky blue?", "Rayleigh scattering of sunlight by the air."),
         ("What is the capital of Peru?", "Lima, on the Pacific coast."),
         ("Who wrote the FAQ?", "Nobody in this project.")]


@pytest.fixture(scope="module")
def tiny():
    m = deg.load_model(TINY)
    yield m
    m.close()


def _qa_file(tmp_path, items=ITEMS, source=None):
    d = {"format": "deg-qa/1", "name": "tiny", "items":
         [{"id": i, "question": q, "answer": a} for i, (q, a) in enumerate(items)]}
    if source:
        d["source"] = str(source)
    f = tmp_path / "tiny-qa.json"
    f.write_text(json.dumps(d))
    return f


def test_key_facts_rule():
    # first sentence only, stop words and the question's own words dropped
    assert qa.key_facts("Is zlib Y2K-compliant?", "Yes. zlib doesn't handle dates.") == ["yes"]
    assert qa.key_facts("Can zlib handle .zip archives?",
                        "Not by itself, no. See the directory contrib/minizip.") == \
        ["not", "no"]
    assert qa.key_facts("Where are the docs?", "It's in zlib.h .") == ["zlib.h"]
    assert qa.key_facts("How?", "The the.") == ["the"]  # fallback: every word
    assert qa.is_correct("No, it does not by itself.", ["not", "no"]) == (True, 1.0)
    assert qa.is_correct("Yes, it can.", ["not", "no"]) == (False, 0.0)
    assert qa.is_correct("nothing", ["a", "b", "c", "d"]) == (False, 0.0)
    assert qa.is_correct("A and b", ["a", "b", "c", "d"]) == (True, 0.5)  # half is enough
    assert qa.is_correct("Lima", []) == (False, 0.0)


def test_load_qa_errors(tmp_path):
    f = tmp_path / "x.json"
    f.write_text("{")
    with pytest.raises(deg.FormatError, match="not JSON"):
        qa.load_qa(f)
    f.write_text(json.dumps({"format": "other", "items": []}))
    with pytest.raises(deg.FormatError, match="deg-qa/1"):
        qa.load_qa(f)
    f.write_text(json.dumps({"format": "deg-qa/1", "items": []}))
    with pytest.raises(deg.FormatError, match="non-empty list"):
        qa.load_qa(f)
    f.write_text(json.dumps({"format": "deg-qa/1", "items": [{"question": "q", "answer": ""}]}))
    with pytest.raises(deg.FormatError, match="item 0"):
        qa.load_qa(f)
    with pytest.raises(deg.DegIOError, match="cannot read"):
        qa.load_qa(tmp_path / "missing.json")
    g = _qa_file(tmp_path, source=tmp_path / "src.txt")
    (tmp_path / "src.txt").write_text(TEXT)
    meta, items = qa.load_qa(g)
    assert [i.question for i in items] == [q for q, _ in ITEMS]
    assert qa.qa_corpus(meta) == (str(tmp_path / "src.txt"), TEXT)
    meta["source_sha256"] = "0" * 64
    with pytest.raises(deg.FormatError, match="not the text"):
        qa.qa_corpus(meta)


def _nll_prefill(model, prefix_ids, q, a):
    """NLL/token of answer a after question q behind prefix_ids, by one real
    prefill of the whole sequence (a path independent of the arms' forks)."""
    head = cs.chat_ids(model, [{"role": "user", "content": q}])
    ans = model.tokenize(a)
    seq = prefix_ids + head + ans
    t = model.trunk()
    rows = t.prefill(seq[:-1], logits="all")
    t.close()
    nv = model.info.n_vocab
    start = len(prefix_ids) + len(head) - 1
    return -cs._logprob_rows(rows[start * nv:], nv, ans), len(ans)


def test_arms_match_independent_prefills(tiny):
    """Each arm's NLL equals a real prefill of [prefix + question + answer]:
    bare (no prefix), untrained (the first p wrapped corpus tokens: the
    equivalence gate), in context (the whole corpus as a system message);
    the trained arm equals the training forward (Cartridge.eval)."""
    corpus = cs.Corpus(tiny, [("doc", TEXT)])
    items = [qa.QAItem(i, q, a, None) for i, (q, a) in enumerate(ITEMS)]
    p = 12
    trained = deg.Cartridge.from_corpus(tiny, corpus.text, p)
    convs = cs.SelfStudy(tiny, corpus, seed=2, chunk_min=24, chunk_max=40, max_q=6,
                         max_a=8).generate(2)
    cs.packed_backward(trained, convs)
    trained.adam_step(lr=1e-2)
    rep = qa.qa_evaluate(tiny, corpus, items, trained=trained, max_tokens=5, batch=2)
    wrapped = cs.chat_ids(tiny, [{"role": "system", "content": corpus.text}],
                          add_generation_prompt=False)
    ref = {"bare": [], "untrained": wrapped[:p], "in_context": wrapped}
    for arm, prefix in ref.items():
        lp = [_nll_prefill(tiny, prefix, q, a) for q, a in ITEMS]
        want = sum(x for x, _ in lp) / sum(n for _, n in lp)
        assert rep["all"]["arms"][arm]["nll"] == pytest.approx(want, rel=2e-5), arm
    tok = 0
    s = 0.0
    for q, a in ITEMS:
        head = cs.chat_ids(tiny, [{"role": "user", "content": q}])
        ans = tiny.tokenize(a)
        one_hot = [cs.DistillTarget(len(head) + j, t, 0.0) for j, t in enumerate(ans)]
        s += trained.eval(head + ans, one_hot) * len(ans)
        tok += len(ans)
    assert rep["all"]["arms"]["trained"]["nll"] == pytest.approx(s / tok, rel=2e-5)
    # the trained rows moved: its NLL is not the control's
    assert rep["all"]["arms"]["trained"]["nll"] != rep["all"]["arms"]["untrained"]["nll"]
    # KV rows: prefix + question + answer, mean over items
    n_q = [len(cs.chat_ids(tiny, [{"role": "user", "content": q}])) + len(tiny.tokenize(a))
           for q, a in ITEMS]
    assert rep["all"]["arms"]["bare"]["kv_rows"] == pytest.approx(sum(n_q) / 3)
    assert rep["all"]["arms"]["trained"]["kv_rows"] == pytest.approx(p + sum(n_q) / 3)
    b, i = rep["all"]["arms"]["bare"]["nll"], rep["all"]["arms"]["in_context"]["nll"]
    assert rep["all"]["gap_closure"]["trained"] == pytest.approx(
        (b - rep["all"]["arms"]["trained"]["nll"]) / (b - i))
    # greedy answers: the bare arm's equal deg.selfstudy.ask on the bare model
    for it, rec in zip(ITEMS, rep["items"]):
        assert rec["answers"]["bare"] == cs.ask(tiny, it[0], max_tokens=5)
        assert rec["answers"]["trained"] == trained.ask(it[0], max_tokens=5)
        assert rec["correct"]["bare"] == qa.is_correct(rec["answers"]["bare"],
                                                       rec["key_facts"])[0]
    # answer positions: where each answer starts in the wrapped corpus
    for it, rec in zip(ITEMS, rep["items"]):
        k = corpus.text.index(it[1])
        assert rec["answer_token"] == len(tiny.tokenize(corpus.text[:k])) + 3
    assert rep["beyond_init"]["n_items"] == sum(r["answer_token"] >= p for r in rep["items"])


def test_recall_conversations(tiny):
    """recall = 1: the user message is a corpus span, the answer the corpus
    tokens that follow it, teacher-forced behind the chunk (no decoding)."""
    corpus = cs.Corpus(tiny, [("doc", TEXT)])
    study = cs.SelfStudy(tiny, corpus, seed=3, chunk_min=24, chunk_max=40, max_q=6, max_a=8,
                         recall=1.0, recall_q=(4, 6))
    convs = study.generate(3)
    for v in convs:
        first, end = v.chunk_span
        assert v.seed_type == "recall"
        q = next(n for n in range(4, 7)
                 if tiny.detokenize(corpus.ids[first:first + n], errors="replace").strip()
                 == v.message and corpus.ids[first + n:first + n + len(v.answer_ids)]
                 == v.answer_ids)
        assert len(v.answer_ids) == min(8, end - first - q)
        head = cs.chat_ids(tiny, [{"role": "user", "content": v.message}])
        assert v.student_ids == head + v.answer_ids
        assert {t.position for t in v.targets} == set(range(len(head), len(v.student_ids)))
    # recall = 0 draws nothing extra: the same conversations as before the option
    a = cs.SelfStudy(tiny, corpus, seed=3, chunk_min=24, chunk_max=40, max_q=6,
                     max_a=8).generate(2)
    b = cs.SelfStudy(tiny, corpus, seed=3, chunk_min=24, chunk_max=40, max_q=6, max_a=8,
                     recall=0.0).generate(2)
    assert a == b
    with pytest.raises(deg.ArgumentError, match="recall"):
        cs.SelfStudy(tiny, corpus, recall=1.5)


def test_cli_eval_qa(tmp_path):
    src = tmp_path / "src.txt"
    src.write_text(TEXT)
    f = _qa_file(tmp_path, source=src)
    out = tmp_path / "cart.safetensors"
    run_cli("cartridge", "train", "--model", TINY, "--corpus", src, "--p", 12, "--steps", 1,
            "--accum", 2, "--chunk-min", 24, "--chunk-max", 40, "--max-q", 6, "--max-a", 8,
            "--save", out)
    js = tmp_path / "rep.json"
    r = run_cli("cartridge", "eval", "--model", TINY, "--qa", f, "--load", out,
                "--max-tokens", 4, "--json", js).stdout
    for arm in qa.ARMS:
        assert f"  {arm} " in r
    rep = json.loads(js.read_text())
    assert set(rep["all"]["arms"]) == set(qa.ARMS) and rep["p"] == 12
    assert len(rep["items"]) == 3 and all(len(x["answers"]) == 4 for x in rep["items"])
    assert all(math.isfinite(a["nll"]) for a in rep["all"]["arms"].values())
    # no cartridge: --p gives the control, the trained arm is left out
    r = run_cli("cartridge", "eval", "--model", TINY, "--qa", f, "--p", 12,
                "--max-tokens", 0).stdout
    assert "  untrained " in r and "  trained " not in r
    bad = run_cli("cartridge", "eval", "--model", TINY, "--qa", f, check=False)
    assert bad.returncode == 1 and "--load" in bad.stderr
    bad = run_cli("cartridge", "eval", "--model", TINY, "--qa", f, "--p", 12, "--json",
                  tmp_path / "no" / "x.json", check=False)
    assert bad.returncode == 1 and "does not exist" in bad.stderr


@pytest.mark.skipif(not all(Path(p).exists() for p in (
    "/usr/share/doc/procps/FAQ.gz", "/usr/share/doc/xz-utils/faq.txt.gz",
    "/usr/share/doc/zlib1g-dev/FAQ.gz", "/usr/share/doc/xz-utils/history.txt.gz")),
    reason="the FAQs' Debian packages are not installed")
def test_committed_qa_sets_reextract():
    """bench/qa/*.json are what extract_qa.py makes from the FAQs and the
    hand-written questions (same package versions: the source sha256 is
    pinned in each file)."""
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "qa" / "extract_qa.py"),
                        "--check"], capture_output=True, text=True)
    if "DIFFERENT" in r.stdout:
        for f in ("procps-faq", "xz-faq", "zlib-faq"):
            meta, _ = qa.load_qa(ROOT / "bench" / "qa" / f"{f}.json")
            try:
                qa.qa_corpus(meta)
            except deg.FormatError:
                pytest.skip(f"{meta['source']} is another version than the set's")
    assert r.returncode == 0, r.stdout + r.stderr
    for f in ("procps-faq", "xz-faq", "zlib-faq", "procps-faq-para", "xz-faq-para",
              "zlib-faq-para", "xz-history"):
        meta, items = qa.load_qa(ROOT / "bench" / "qa" / f"{f}.json")
        assert len(items) >= 10
        qa.qa_corpus(meta)  # the pinned source text


def _words(s):
    return re.findall(r"[a-z0-9]+", s.lower())


def test_paraphrased_sets_do_not_copy_the_headings():
    """The -para sets ask the FAQ's facts in other words: no question equals
    its FAQ heading or shares a run of 4 words with it (the headings are in
    the corpus, and bot A copies them into training questions), and the
    answers are the extracted set's."""
    for f in ("procps-faq", "xz-faq", "zlib-faq"):
        _, orig = qa.load_qa(ROOT / "bench" / "qa" / f"{f}.json")
        by_id = {it.id: it for it in orig}
        d = json.loads((ROOT / "bench" / "qa" / f"{f}-para.json").read_text())
        assert len(d["items"]) >= 10
        for it in d["items"]:
            o = by_id[it["id"]]
            assert it["faq_question"] == o.question and it["answer"] == o.answer
            assert it["offset"] == o.offset
            q, h = _words(it["question"]), _words(o.question)
            runs = {tuple(h[i:i + 4]) for i in range(len(h) - 3)}
            shared = [q[i:i + 4] for i in range(len(q) - 3) if tuple(q[i:i + 4]) in runs]
            assert q != h and not shared, (f, it["id"], it["question"], shared)


def test_cli_train_budget(tiny, tmp_path):
    """--budget picks the steps from the corpus length (budget_steps) and the
    recipe's settings for every option not given."""
    src = tmp_path / "src.txt"
    src.write_text(TEXT)
    n = len(cs.load_corpus(tiny, [src]))
    steps = cs.budget_steps(n, 0.5, 24, 40, 2)
    mean = min(32, n)  # the mean chunk: (24 + 40) / 2, at most the corpus
    assert steps == math.ceil(math.ceil(0.5 * n / mean) / 2) and 1 <= steps <= 3
    out = tmp_path / "b.safetensors"
    r = run_cli("cartridge", "train", "--model", TINY, "--corpus", src, "--p", 12,
                "--budget", 0.5, "--max-a", 8, "--accum", 2, "--epochs", 1, "--chunk-min", 24,
                "--chunk-max", 40, "--max-q", 6, "--save", out)
    assert (f"budget 0.5: {steps} steps x 2 conversations, 1 passes, "
            f"lr {cs.RECIPE['lr']:g}, recall {cs.RECIPE['recall']:g}") in r.stderr
    assert f"x mean chunk {mean:g} / {n} corpus tokens" in r.stderr
    assert deg.Cartridge.load(tiny, out).steps == steps
    # --budget alone: the recipe's coverage (RECIPE_BUDGET) and its placement
    out2 = tmp_path / "r.safetensors"
    r = run_cli("cartridge", "train", "--model", TINY, "--corpus", src, "--p", 12, "--budget",
                "--max-a", 8, "--epochs", 1, "--chunk-min", 24, "--chunk-max", 40, "--max-q", 6,
                "--save", out2)
    steps = cs.budget_steps(n, cs.RECIPE_BUDGET, 24, 40, cs.RECIPE["accum"])
    assert (f"budget {cs.RECIPE_BUDGET:g}: {steps} steps x {cs.RECIPE['accum']} conversations, "
            f"1 passes, lr {cs.RECIPE['lr']:g}, recall 1, passage-qa 0, placement cover, "
            f"answers <= 8;") in r.stderr
    assert deg.Cartridge.load(tiny, out2).steps == steps
    assert cs.RECIPE["placement"] == "cover" and cs.RECIPE_BUDGET == 4
    bad = run_cli("cartridge", "train", "--model", TINY, "--corpus", src, "--p", 12,
                  "--budget", 0.1, "--steps", 2, check=False)
    assert bad.returncode == 1 and "give one of them" in bad.stderr
    with pytest.raises(deg.ArgumentError, match="budget"):
        cs.budget_steps(100, 0, 8, 16, 2)
    with pytest.raises(deg.ArgumentError, match="chunk_max >= chunk_min"):
        cs.budget_plan(100, 1, 16, 8, 2, 8)


def test_budget_plan_is_the_spec_coverage():
    """coverage = conversations x mean chunk / corpus tokens (spec
    cartridges.md): the procps FAQ (1,190 tokens) at coverage 20 with the
    recipe's 128-256-token chunks needs 124 conversations; a corpus shorter
    than the mean chunk is covered once per conversation."""
    b = cs.budget_plan(1190, 20, 128, 256, 4, 96)
    assert (b.conversations, b.steps, b.mean_chunk) == (124, 31, 192)
    assert 20 <= b.coverage < 20 + 192 / 1190
    assert b.supervised_per_token == pytest.approx(124 * 96 / 1190)
    short = cs.budget_plan(100, 3, 128, 256, 4, 96)
    assert (short.conversations, short.mean_chunk, short.coverage) == (3, 100, 3)


PARAS = ("Why does the tool warn about a dash?\n\n"
         "\tAccording to the standards the command asks for all processes with a\n"
         "\tterminal plus those of a user named x, so the tool warns about it.\n\n"
         "Short line here.\n\n"
         "What systems are supported?\n\n"
         "\tLinux kernels two and three are commonly tested and expected to work well\n"
         "\ton machines with many processors, and clusters need a shared filesystem.\n")


def _chunk_system(corpus, first, end, text):
    """The chunk's system message, as include/cartridge.h states the rule."""
    src = corpus.sources(first, end)
    where = (f" from {', '.join(src)}" if len(corpus.documents) > 1 else "")
    return (f"The following is an excerpt{where} of a larger text. "
            f"Use it to answer.\n\n<excerpt>\n{text}\n</excerpt>")


def test_passage_spans(tiny):
    """Paragraphs of >= 12 words that are not questions, as the token spans
    of their bytes; a long paragraph is cut into pieces of max_tokens."""
    ids = tiny.tokenize(PARAS)
    spans = cs.passage_spans(tiny, ids, 1000)
    got = [" ".join(tiny.detokenize(ids[a:b]).split()) for a, b in spans]
    assert got == [" ".join(PARAS.split("\n\n")[1].split()),
                   " ".join(PARAS.split("\n\n")[4].split())]
    cut = cs.passage_spans(tiny, ids, 5)
    assert all(4 <= b - a <= 5 for a, b in cut)  # the fewest equal pieces
    assert sorted(t for a, b in cut for t in range(a, b)) == \
        sorted(t for a, b in spans for t in range(a, b))  # the same tokens, in pieces
    assert cs.passage_spans(tiny, tiny.tokenize("Too short.\n\nAlso short?"), 96) == []


def test_passage_qa_conversations(tiny):
    """passage_qa = 1: the answer is a passage's own words (whitespace-
    normalised), the chunk holds the passage, the user message is bot A's
    question, and the targets are the teacher's top-k with the chunk and
    the question in context (recomputed here independently)."""
    corpus = cs.Corpus(tiny, [("doc", PARAS * 2)])
    study = cs.SelfStudy(tiny, corpus, seed=4, chunk_min=24, chunk_max=40, max_q=6, max_a=12,
                         passage_qa=1.0)
    spans = cs.passage_spans(tiny, corpus.ids, 12)
    texts = [(" ".join(tiny.detokenize(corpus.ids[a:b]).split()), a, b) for a, b in spans]
    convs = study.generate(4)
    for v in convs:
        assert v.seed_type == "passage_qa" and v.message and v.answer_ids
        first, end = v.chunk_span
        assert end - first >= 24
        # the answer is the words of a passage that lies inside the chunk
        assert any(tiny.tokenize(t)[:12] == v.answer_ids and first <= a and b <= end
                   for t, a, b in texts)
        head = cs.chat_ids(tiny, [{"role": "user", "content": v.message}])
        assert v.student_ids == head + v.answer_ids
        chunk = tiny.detokenize(corpus.ids[first:end], errors="replace")
        sys_msg = _chunk_system(corpus, first, end, chunk)
        t = tiny.trunk()
        rows = t.prefill(cs.chat_ids(tiny, [{"role": "system", "content": sys_msg},
                                            {"role": "user", "content": v.message}])
                         + v.answer_ids[:-1], logits="all")
        t.close()
        nv, k = tiny.info.n_vocab, len(v.answer_ids)
        want = []
        for j in range(k):
            want += deg.cartridge.targets_from_logits(
                tiny, rows[len(rows) - (k - j) * nv:len(rows) - (k - j - 1) * nv], len(head) + j)
        assert [(w.position, w.token) for w in want] == \
            [(g.position, g.token) for g in v.targets]
        assert max(abs(w.logprob - g.logprob) for w, g in zip(want, v.targets)) < 1e-4
    # a mix: one uniform draw per conversation decides the kind
    mix = cs.SelfStudy(tiny, corpus, seed=4, chunk_min=24, chunk_max=40, max_q=6, max_a=12,
                       recall=0.5, passage_qa=0.5).generate(8)
    assert {v.seed_type for v in mix} == {"recall", "passage_qa"}
    with pytest.raises(deg.ArgumentError, match="recall \\+ passage_qa <= 1"):
        cs.SelfStudy(tiny, corpus, recall=0.6, passage_qa=0.5)
    with pytest.raises(deg.ArgumentError, match="passage_qa is a fraction"):
        cs.SelfStudy(tiny, corpus, passage_qa=-0.1)
    # a corpus without passages gets recall conversations
    short = cs.Corpus(tiny, [("doc", "Short line one.\n\nShort line two?\n\n" * 6)])
    assert {v.seed_type for v in cs.SelfStudy(tiny, short, seed=1, chunk_min=8, chunk_max=12,
                                              max_q=4, max_a=6, passage_qa=1.0).generate(2)} \
        == {"recall"}


def test_train_passage_qa_settings_in_state(tiny, tmp_path):
    """passage_qa is one of the run's settings: a --state of another fraction
    is refused; the CLI option reaches the conversations."""
    src = tmp_path / "doc.txt"
    src.write_text(PARAS * 2)
    kw = dict(p=12, steps=2, accum=1, seed=3, chunk_min=24, chunk_max=40, max_q=6, max_a=8)
    st = tmp_path / "state"
    cs.train(tiny, [src], state=st, passage_qa=0.5, **kw)
    with pytest.raises(deg.ArgumentError, match="passage_qa"):
        cs.train(tiny, [src], state=st, passage_qa=1.0, **kw)
    run_cli("cartridge", "train", "--model", TINY, "--corpus", src, "--p", 12, "--steps", 2,
            "--accum", 1, "--chunk-min", 24, "--chunk-max", 40, "--max-q", 6, "--max-a", 8,
            "--passage-qa", 1, "--state", tmp_path / "st2", "--quiet")
    kinds = {json.loads(x)["seed_type"] for x in
             (tmp_path / "st2" / "conversations.jsonl").read_text().splitlines()}
    assert kinds == {"passage_qa"}


def test_format_table_explains_an_empty_beyond_init_part():
    from deg.cartridge_qa import format_table
    arms = {a: {"nll": 2.0, "kv_rows": 10.0} for a in ("bare", "untrained", "trained", "in_context")}
    part = {"n_items": 2, "n_tokens": 9, "arms": arms, "gap_closure": {"trained": 0.5}}
    empty = {"n_items": 0, "n_tokens": 0,
             "arms": {a: {"nll": float("nan"), "kv_rows": float("nan")} for a in arms}}
    out = format_table({"p": 64, "all": part, "beyond_init": empty})
    assert "all items: 2 items, 9 reference tokens" in out and "0.500" in out
    assert "answers beyond the first 64 tokens: 0 items" in out
    assert "quote the document" in out and "nan" not in out.split("first 64 tokens")[1]
