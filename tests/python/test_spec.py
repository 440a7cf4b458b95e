"""Speculative greedy decoding from Python (deg.spec) and its cartridge uses:
byte-identical to plain greedy decoding (tiny random models, and the real
SmolLM2 briefly: a corpus-grounded answer behind a cartridge whose artifact
carries the corpus ids), Fork.truncate, the draft reference through save /
load, --spec-b self-study conversations equal to plain ones, and the CLI
flags (train --draft-ref --spec-b, ask --spec-serve)."""
import pytest

import deg
from deg import selfstudy as cs
from deg.spec import DraftRef, answer, composed_reference, generate_forks_spec

from conftest import ROOT, needs, run_cli

pytestmark = needs("deg_forks_generate_spec", "deg_cartridge_set_draft_ref")

TINY = ROOT / "tests" / "goldens" / "tiny-qwen3"
TEXT = ("The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor "
        "jugs. How vexingly quick daft zebras jump! Sphinx of black quartz, judge my vow. "
        "The five boxing wizards jump quickly. ") * 4
SMALL = dict(chunk_min=24, chunk_max=48, max_q=6, max_a=24)


@pytest.fixture(scope="module")
def tiny():
    m = deg.load_model(TINY)
    yield m
    m.close()


def _forks(model, prompt, n):
    t = model.trunk(prompt)
    return t, [t.fork() for _ in range(n)]


def test_identical_to_generate_forks(tiny):
    prompt = tiny.tokenize("Sphinx of black quartz, judge my vow. The quick brown fox")
    t, plain = _forks(tiny, prompt, 3)
    extra = [[], [5, 6], [7]]
    for f, e in zip(plain, extra):
        if e:
            f.feed(e)
    want = deg.generate_forks(plain, 60, 0.0)
    t2, sf = _forks(tiny, prompt, 3)
    for f, e in zip(sf, extra):
        if e:
            f.feed(e)
    oracle = [DraftRef(tiny, g.ids) for g in want]
    got, st = generate_forks_spec(sf, 60, [prompt + e for e in extra], oracle, min_match=1)
    assert [g.ids for g in got] == [g.ids for g in want]
    assert [g.text for g in got] == [g.text for g in want]
    assert [g.stats.stopped for g in got] == [g.stats.stopped for g in want]
    for a, b in zip(plain, sf):  # same fork state afterwards, bitwise
        assert len(a) == len(b) and a.logits() == b.logits()
    assert all(s.drafted > 0 and s.accepted == s.drafted for s in st)
    # random reference: rejections and rewinds, still the same ids
    t3, rf = _forks(tiny, prompt, 3)
    for f, e in zip(rf, extra):
        if e:
            f.feed(e)
    rnd = DraftRef(tiny, [(i * 7919) % tiny.info.n_vocab for i in range(400)])
    got, st = generate_forks_spec(rf, 60, [prompt + e for e in extra], rnd, min_match=1,
                                  gate=False)
    assert [g.ids for g in got] == [g.ids for g in want]
    assert sum(s.drafted - s.accepted for s in st) > 0
    for x in (t, t2, t3):
        x.close()


def test_spec_step_with_plain_rows(tiny):
    """deg.spec.spec_step(plain=...) (deg_forks_spec_step_ex): plain rows fed
    in the speculative round's weight pass end with the logits they get fed
    alone, and the speculative stream emits plain greedy decoding's ids."""
    from deg.spec import SpecState, spec_step
    prompt = tiny.tokenize("Sphinx of black quartz, judge my vow. The quick brown fox")
    t, (a, s, b, c, b2, c2) = _forks(tiny, prompt, 6)
    want = deg.generate_forks([a], 24, 0.0)[0].ids
    first = s.generate(1, 0.0).ids[0]
    st = SpecState(tiny, prompt + [first], ref=DraftRef(tiny, want), min_match=1)
    got, rider = [first], [9, 4, 27, 3, 81, 5, 66, 2]
    for k in range(len(rider)):
        if len(got) >= len(want) or st.done:
            break
        got += spec_step([s], [st], [len(want) - len(got)],
                         plain=[(b, [rider[k]]), (c, rider[k:k + 2])])[0]
        deg.feed_forks([b2, c2], [[rider[k]], rider[k:k + 2]])
        for x, y in ((b, b2), (c, c2)):
            assert len(x) == len(y) and x.logits() == y.logits()
    assert got == want and st.stats.accepted > 0
    # plain rows alone (no speculative stream): just fed
    n = len(b)
    assert spec_step([], [], [], plain=[(b, [1, 2])]) == [] and len(b) == n + 2
    with pytest.raises(deg.ArgumentError, match="also speculative"):
        spec_step([s], [st], [4], plain=[(s, [1])])
    t.close()


def test_truncate_and_errors(tiny):
    t = tiny.trunk([1, 2, 3])
    f, g = t.fork(), t.fork()
    f.feed([4, 5, 6, 7])
    f.truncate(1)
    g.feed([4])
    assert len(f) == 1 and f.logits() == g.logits()
    with pytest.raises(deg.RangeError):
        f.truncate(2)
    with pytest.raises(deg.ArgumentError, match="seed id lists"):
        generate_forks_spec([f], 4, [])
    with pytest.raises(deg.RangeError):
        DraftRef(tiny, [tiny.info.n_vocab])
    with pytest.raises(deg.ArgumentError, match="draft_max"):
        generate_forks_spec([f], 4, [[1]], draft_max=0)
    t.close()


def test_draft_reference_roundtrip(tiny, tmp_path):
    cart = deg.Cartridge.from_tokens(tiny, [1, 17, 300, 45])
    assert cart.draft_reference is None
    old = tmp_path / "old.safetensors"
    cart.save(old)
    ids = tiny.tokenize(TEXT)
    cart.set_draft_reference(ids)
    assert cart.draft_reference.ids() == ids and len(cart.draft_reference) == len(ids)
    new = tmp_path / "new.safetensors"
    cart.save(new)
    back = deg.Cartridge.load(tiny, new)
    assert back.draft_reference.ids() == ids
    assert deg.Cartridge.load(tiny, old).draft_reference is None
    # 8 bytes a token more than the file without it (plus its header entry)
    assert new.stat().st_size - old.stat().st_size >= 8 * len(ids)
    cart.set_draft_reference(None)
    assert cart.draft_reference is None
    # serving from it: the same answer as plain decoding
    q = cs.chat_ids(tiny, [{"role": "user", "content": "The quick brown fox"}])
    t = back.trunk()
    plain = cs.ask(tiny, "The quick brown fox", cartridge=back, max_tokens=40)
    sst = []
    spec = cs.ask(tiny, "The quick brown fox", cartridge=back, max_tokens=40, spec=True,
                  draft_ref=back.draft_reference, spec_stats=sst)
    assert spec == plain and len(sst) == 1
    gen, st = answer(t, q, back.draft_reference, max_tokens=40, stop_ids=tiny.stop_ids())
    stops = tiny.stop_ids()
    assert tiny.detokenize([i for i in gen.ids if i not in stops], errors="replace").strip() == plain
    t.close()


def test_composed_reference(tiny, tmp_path):
    """A composition drafts from its parts' references concatenated in part
    order, indexed by the library (deg_cartridge_compose_draft_ref: a new
    reference the caller owns, also when one part has one; None for none),
    and answers the same as plain decoding behind the composition."""
    ids_a = tiny.tokenize(TEXT[:120])
    ids_b = tiny.tokenize(TEXT[120:260])
    a = deg.Cartridge.from_tokens(tiny, ids_a[:6])
    b = deg.Cartridge.from_tokens(tiny, ids_b[:5])
    c = deg.Cartridge.from_tokens(tiny, [3, 4, 5])
    assert composed_reference([a, c]) is None
    a.set_draft_reference(ids_a)
    only = composed_reference([c, a])
    assert only is not a.draft_reference and only.ids() == ids_a
    only.close()  # the caller's copy: the part keeps its own
    assert a.draft_reference.ids() == ids_a
    b.set_draft_reference(ids_b)
    both = composed_reference([b, c, a])
    assert both.ids() == ids_b + ids_a and len(both) == len(ids_a) + len(ids_b)
    q = "The quick brown fox"
    plain = cs.ask(tiny, q, cartridge=[b, c, a], max_tokens=40)
    sst = []
    assert cs.ask(tiny, q, cartridge=[b, c, a], max_tokens=40, spec=True, draft_ref=both,
                  spec_stats=sst) == plain
    assert sst[0].drafted > 0
    # the CLI: deg cartridge compose --spec-serve prints the same answer
    paths = []
    for name, cart in (("b", b), ("c", c), ("a", a)):
        paths.append(tmp_path / f"{name}.safetensors")
        cart.save(paths[-1])
    args = ["cartridge", "compose", "--model", TINY, "--load", *paths, "--ask", q,
            "--max-tokens", 30]
    plain = run_cli(*args)
    spec = run_cli(*args, "--spec-serve")
    assert spec.stdout == plain.stdout
    assert f"drafts from the parts' draft_references ({len(ids_a) + len(ids_b)} ids)" in \
        spec.stderr
    for x in (a, b, c):
        x.close()


def test_spec_b_conversations_identical(tiny, tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text(TEXT)
    c = cs.load_corpus(tiny, [doc])
    plain = cs.SelfStudy(tiny, c, seed=3, **SMALL).generate(3)
    st = cs.SelfStudy(tiny, c, seed=3, spec_b=True, **SMALL)
    spec = st.generate(3)
    assert spec == plain
    assert st.spec_counts["drafted"] > 0


def test_cli_draft_ref_spec_b_spec_serve(tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text(TEXT)
    out = tmp_path / "c.safetensors"
    run_cli("cartridge", "train", "--model", TINY, "--corpus", doc, "--p", 8, "--steps", 1,
            "--accum", 2, "--chunk-min", 24, "--chunk-max", 48, "--max-q", 6, "--max-a", 8,
            "--save", out, "--quiet", "--spec-b", "--draft-ref")
    m = deg.load_model(TINY)
    c = deg.Cartridge.load(m, out)
    assert c.draft_reference.ids() == cs.load_corpus(m, [doc]).ids
    c.close()
    m.close()
    plain = run_cli("cartridge", "ask", "--model", TINY, "--load", out, "--ask", "fox",
                    "--max-tokens", 30)
    spec = run_cli("cartridge", "ask", "--model", TINY, "--load", out, "--ask", "fox",
                   "--max-tokens", 30, "--spec-serve")
    assert spec.stdout == plain.stdout
    assert "drafts from the artifact's draft_reference" in spec.stderr


def test_real_model_corpus_grounded_answer(model):
    """SmolLM2: a corpus-init cartridge whose artifact stores the corpus ids
    answers identically with and without speculation, and drafts get kept."""
    text = ("Debian is a free operating system developed by volunteers. The Debian project "
            "was founded by Ian Murdock in 1993. Debian packages use the .deb format and are "
            "installed with apt. Stable releases are named after Toy Story characters.")
    cart = deg.Cartridge.from_corpus(model, text, 32)
    cart.set_draft_reference(model.tokenize(text))
    for q in ("Who founded the Debian project, and when?",
              "Repeat this sentence: Debian packages use the .deb format and are installed "
              "with apt."):
        plain = cs.ask(model, q, corpus=text, max_tokens=48)
        sst = []
        spec = cs.ask(model, q, corpus=text, max_tokens=48, spec=True,
                      draft_ref=cart.draft_reference, spec_stats=sst)
        assert spec == plain
        behind = cs.ask(model, q, cartridge=cart, max_tokens=48)
        assert cs.ask(model, q, cartridge=cart, max_tokens=48, spec=True,
                      draft_ref=cart.draft_reference) == behind
    assert sst[0].accepted > 0, sst
