"""Composition (deg.cartridge.compose_*) and fleets (deg.Fleet) through Python
on the tiny random models of tests/goldens: a split capture composes to the
real prefill bitwise, one backward reaches every part, fleet creation,
training rounds with rotation, evict/reload identity, serving trunks, errors."""
from pathlib import Path

import pytest

import deg
from deg.cartridge import compose_backward, compose_eval, compose_len, compose_trunk
from conftest import needs

ROOT = Path(__file__).resolve().parents[2]
pytestmark = needs("deg_trunk_from_cartridges", "deg_fleet_open")

DOCS = [
    ("keeper.txt", "The lighthouse keeper logs the weather every evening at six."),
    ("bread.txt", "Sourdough needs a starter fed with flour and water each day."),
    ("search.txt", "A binary search halves the interval at every comparison it makes."),
    ("ice.txt", "Glaciers carve valleys shaped like the letter U over millennia."),
]
IDS = [5, 77, 300, 12, 9, 41]
TARGETS = [(1, 40, -0.5), (3, 7, -0.1), (5, 2, -0.2)]


@pytest.fixture(scope="module")
def tiny():
    m = deg.load_model(ROOT / "tests" / "goldens" / "tiny-qwen3")
    yield m
    m.close()


def _slice(model, src, first, n):
    c = deg.Cartridge.random_vectors(model, n)
    row = model.info.n_head_kv * model.info.head_dim
    for il in range(model.info.n_layer):
        k, v = src.rows(il)
        c.set_rows(il, k[first * row:(first + n) * row], v[first * row:(first + n) * row])
    return c


def test_split_capture_composes_to_the_real_prefill(tiny):
    prefix, suffix = [3, 14, 15, 92, 65, 35, 8, 97], [89, 79, 32, 38]
    whole = deg.Cartridge.from_tokens(tiny, prefix)
    a, b = _slice(tiny, whole, 0, 3), _slice(tiny, whole, 3, 5)
    assert compose_len([a, b]) == 8
    ref = tiny.trunk().prefill(prefix + suffix, logits="all")
    nv = tiny.info.n_vocab
    _, behind = compose_eval([a, b], suffix, logits=True)
    assert behind.tobytes() == ref[len(prefix) * nv:].tobytes()
    t = compose_trunk([a, b])
    assert len(t) == 8
    assert t.fork().feed(suffix, logits="all").tobytes() == behind.tobytes()
    # one part is the cartridge itself
    assert compose_eval([whole], suffix, TARGETS[:1]) == whole.eval(suffix, TARGETS[:1])


def test_one_backward_reaches_every_part(tiny):
    whole = deg.Cartridge.random_vectors(tiny, 9, seed=4)
    parts = [_slice(tiny, whole, 0, 4), _slice(tiny, whole, 4, 5)]
    lw = whole.backward(IDS, TARGETS)
    lc = compose_backward(parts, IDS, TARGETS)
    assert lw == lc
    row = tiny.info.n_head_kv * tiny.info.head_dim
    gk, gv = whole.grads(0)
    assert parts[0].grads(0)[0].tobytes() == gk[:4 * row].tobytes()
    assert parts[1].grads(0)[1].tobytes() == gv[4 * row:].tobytes()
    assert any(x != 0 for x in parts[1].grads(0)[0])
    sink = parts[1].rows(0)[0][:row]
    parts[1].adam_step()
    assert parts[1].rows(0)[0][:row] == sink           # the sink stays frozen


def test_compose_errors(tiny):
    other = deg.load_model(ROOT / "tests" / "goldens" / "tiny-llama")
    a = deg.Cartridge.random_vectors(tiny, 2)
    b = deg.Cartridge.random_vectors(other, 2)
    with pytest.raises(deg.MismatchError, match="part 1"):
        compose_trunk([a, b])
    with pytest.raises(deg.ArgumentError):
        compose_trunk([])
    other.close()


def test_fleet_train_rotate_reload_and_serve(tiny, tmp_path):
    d = tmp_path / "fleet"
    deg.Fleet.init(tiny, d, DOCS, p=4)
    with pytest.raises(deg.StateError, match="already holds a fleet"):
        deg.Fleet.init(tiny, d, DOCS, p=4)
    with deg.Fleet.open(tiny, d, budget=2, rotate_every=2, warmup_steps=0) as f:
        assert len(f) == 4 and f.p == 4
        assert f.residents() == [0, 1]
        assert f.text(2) == DOCS[2][1] and f.doc(2).name == "search.txt"
        for _ in range(8):
            res = f.residents()
            assert len(res) == 2
            compose_backward([f.cartridge(i) for i in res], IDS, TARGETS)
            f.step(res)
        steps = [doc.steps for doc in f.docs()]
        assert steps == [4, 4, 4, 4]          # rotation gives uniform coverage
        f.save()
        # a borrowed cartridge dies with the rotation that may move it
        c = f.cartridge(f.residents()[0])
        f.rotate()
        with pytest.raises(deg.StateError):
            len(c)
        trunk = f.trunk([3, 0, 2])
        assert len(trunk) == 12
    # reloads give back the saved state; serving equals composing by hand
    with deg.Fleet.open(tiny, d, budget=1) as f:
        assert [doc.steps for doc in f.docs()] == [4, 4, 4, 4]
        assert f.rounds == 8
        parts = [deg.Cartridge.load(tiny, f.doc(i).cartridge_path) for i in (3, 0)]
        a = f.trunk([3, 0]).fork().feed(IDS, logits="all")
        b = compose_trunk(parts).fork().feed(IDS, logits="all")
        assert a.tobytes() == b.tobytes()
        with pytest.raises(deg.StateError, match="not resident"):
            f.cartridge(3)


def test_fleet_errors(tiny, tmp_path):
    with pytest.raises(deg.DegIOError, match="fleet.json"):
        deg.Fleet.open(tiny, tmp_path)
    with pytest.raises(deg.RangeError, match="tiny.txt"):
        deg.Fleet.init(tiny, tmp_path / "f", [("big.txt", DOCS[0][1] * 4), ("tiny.txt", "")],
                       p=40)
    with pytest.raises(deg.ArgumentError):
        deg.Fleet.init(tiny, tmp_path / "g", [], p=4)


# --------------------------------------------------------------------------
# Fleet workflows (deg.fleets) and the CLI on the tiny model
# --------------------------------------------------------------------------

SMALL = dict(chunk_min=8, chunk_max=16, max_q=4, max_a=6)
LONG_DOCS = [(name, (text + " ") * 6) for name, text in DOCS]


def _fleet_dir(tiny, tmp_path):
    d = tmp_path / "fleet"
    deg.Fleet.init(tiny, d, LONG_DOCS, p=4)
    return d


def test_mixed_visibility_training_steps_every_part(tiny, tmp_path):
    from deg import fleets
    d = _fleet_dir(tiny, tmp_path)
    with deg.Fleet.open(tiny, d, budget=3, rotate_every=3, warmup_steps=2) as f:
        infos = fleets.train(f, 9, accum=2, p_iso=0.5, distract_max=2, seed=3, **SMALL)
        assert len(infos) == 9 and f.rounds == 9
        assert any(len(i.parts) > 1 for i in infos)       # co-loaded rounds happened
        assert any(len(i.parts) == 1 for i in infos)      # isolated rounds too
        total = sum(len(i.parts) for i in infos)
        assert sum(doc.steps for doc in f.docs()) == total  # every co-loaded part stepped
        assert all(i.loss > 0 for i in infos)
        steps1 = [doc.steps for doc in f.docs()]
    # the same seed gives the same fleet artifact bytes
    d2 = tmp_path / "again"
    deg.Fleet.init(tiny, d2, LONG_DOCS, p=4)
    with deg.Fleet.open(tiny, d2, budget=3, rotate_every=3, warmup_steps=2) as f:
        fleets.train(f, 9, accum=2, p_iso=0.5, distract_max=2, seed=3, **SMALL)
        assert [doc.steps for doc in f.docs()] == steps1
    for i in range(len(LONG_DOCS)):
        a = (d / "docs" / f"{i:04d}.safetensors").read_bytes()
        b = (d2 / "docs" / f"{i:04d}.safetensors").read_bytes()
        assert a == b


def test_training_resumes_bit_identically(tiny, tmp_path):
    """A round's draws derive from the seed and the fleet's round number:
    6 rounds in one call give the same artifact bytes as 2 + 4 with the
    fleet closed and reopened in between (a killed run resumed from its
    last save), across rotations and co-loaded rounds."""
    from deg import fleets
    params = dict(budget=3, rotate_every=2, warmup_steps=2)
    kw = dict(accum=1, p_iso=0.5, distract_max=2, seed=9, schedule="uniform", **SMALL)
    one, two = tmp_path / "one", tmp_path / "two"
    for d in (one, two):
        deg.Fleet.init(tiny, d, LONG_DOCS, p=4)
    with deg.Fleet.open(tiny, one, **params) as f:
        infos = fleets.train(f, 6, **kw)
    with deg.Fleet.open(tiny, two, **params) as f:
        first = fleets.train(f, 2, **kw)
    with deg.Fleet.open(tiny, two, **params) as f:
        assert f.rounds == 2
        rest = fleets.train(f, 4, **kw)
    assert [(i.target, i.parts) for i in infos] == [(i.target, i.parts) for i in first + rest]
    assert [i.loss for i in infos] == [i.loss for i in first + rest]
    assert any(len(i.parts) > 1 for i in infos)
    assert (one / "fleet.json").read_bytes() == (two / "fleet.json").read_bytes()
    for i in range(len(LONG_DOCS)):
        name = f"docs/{i:04d}.safetensors"
        assert (one / name).read_bytes() == (two / name).read_bytes()


def test_uniform_schedule_keeps_step_counts_within_one(tiny, tmp_path):
    """schedule="uniform": with rotation every round, every document's step
    count ends within +-1 of the others (the issue's fleet target), with
    co-loaded rounds still stepping every part; the spec's length sampler on
    the same fleet and seed drifts further apart (seed 2: length [2, 3, 4, 1];
    over seeds 0-11 the length sampler spreads 2-3 for seeds 2, 4 and 10: the
    library's draws, deg 0.4)."""
    from deg import fleets
    got = {}
    for schedule in ("uniform", "length"):
        d = tmp_path / schedule
        deg.Fleet.init(tiny, d, LONG_DOCS, p=4)
        with deg.Fleet.open(tiny, d, budget=3, rotate_every=1, warmup_steps=1) as f:
            infos = fleets.train(f, 8, accum=1, p_iso=0.5, distract_max=2, seed=2,
                                 schedule=schedule, **SMALL)
            got[schedule] = [doc.steps for doc in f.docs()]
            assert sum(got[schedule]) == sum(len(i.parts) for i in infos)
            assert any(len(i.parts) > 1 for i in infos)
    assert max(got["uniform"]) - min(got["uniform"]) <= 1, got
    assert max(got["length"]) - min(got["length"]) > 1, got
    with deg.Fleet.open(tiny, tmp_path / "uniform", budget=2) as f:
        with pytest.raises(deg.ArgumentError, match="schedule"):
            fleets.train(f, 1, schedule="round-robin")


# (budget, rotate_every, evict_fraction, p_iso, distract_max, rounds) over LONG_DOCS' 4
# documents: session 9's uniform draw left these 2 apart (budget 3 of 4, R = 2) or could
# never reach an absentee (R = 0); the rule (include/cartridge.h) holds in each.
UNIFORM_SETTINGS = [(3, 2, 0.5, 0.3, 2, 9), (2, 0, 0.5, 0.5, 1, 7), (1, 3, 1.0, 0.0, 2, 6),
                    (3, 1, 0.34, 0.0, 3, 8), (0, 2, 0.5, 0.5, 2, 6), (2, 5, 0.75, 1.0, 0, 7)]


@pytest.mark.parametrize("budget,rotate,phi,p_iso,dmax,rounds", UNIFORM_SETTINGS)
def test_uniform_rule_after_every_round(tiny, tmp_path, budget, rotate, phi, p_iso, dmax,
                                        rounds):
    """The uniform schedule through deg.fleets.train (the C rounds): after
    EVERY round the step counts are within 1 of each other, every part of a
    round sat at the fleet's fewest steps before it, and the residents stay
    within the budget; a setting where every least-trained document is on disk
    rotates before the round (tests/c/test_fleet_train.c checks 200 settings
    without conversations)."""
    from deg import fleets
    deg.Fleet.init(tiny, tmp_path / "f", LONG_DOCS, p=4)
    with deg.Fleet.open(tiny, tmp_path / "f", budget=budget, rotate_every=rotate,
                        evict_fraction=phi, warmup_steps=1) as f:
        cap = budget or len(LONG_DOCS)
        before = [0] * len(LONG_DOCS)
        seen = []

        def check(info):
            steps = [d.steps for d in f.docs()]
            low = min(before)
            assert all(before[i] == low for i in info.parts), (before, info)
            assert max(steps) - min(steps) <= 1, steps
            assert sum(d.resident for d in f.docs()) <= cap
            before[:] = steps
            seen.append(info)

        fleets.train(f, rounds, accum=1, p_iso=p_iso, distract_max=dmax, seed=budget + rotate,
                     schedule="uniform", progress=check, **SMALL)
        assert len(seen) == rounds and f.rounds == rounds


def test_index_select_and_ask(tiny, tmp_path):
    from deg import fleets
    d = _fleet_dir(tiny, tmp_path)
    with deg.Fleet.open(tiny, d, budget=1) as f:
        with pytest.raises(deg.DegIOError, match="deg fleet index"):
            fleets.select(f, "bread")
        n = fleets.build_index(f, chunk=16)
        idx = fleets.load_index(f)
        assert idx.rows.shape[0] == n == len(idx.doc) and sorted(set(idx.doc)) == [0, 1, 2, 3]
        norms = (idx.rows ** 2).sum(axis=1)
        assert abs(norms - 1).max() < 1e-5
        # the recipe: the mean of the final-norm hidden states of each chunk's
        # tokens, L2-normalised, centred on the chunks' centroid, re-normalised;
        # the chunk texts kept for the lexical half
        import numpy as np
        raw, texts = [], []
        for i in range(len(LONG_DOCS)):
            ids = tiny.tokenize(f.text(i))
            for s in range(0, len(ids), 16):
                fk = tiny.trunk().fork()
                fk.feed(ids[s:s + 16])
                k = len(ids[s:s + 16])
                h = np.frombuffer(fk.hidden(0, k), dtype=np.float32).reshape(k, -1)
                v = h.astype(np.float64).mean(axis=0)
                raw.append(v / np.linalg.norm(v))
                texts.append(tiny.detokenize(ids[s:s + 16]))
        raw = np.array(raw)
        assert np.abs(idx.centroid - raw.mean(axis=0)).max() < 1e-6
        centred = raw - raw.mean(axis=0)
        centred /= np.linalg.norm(centred, axis=1, keepdims=True)
        assert np.abs(idx.rows - centred).max() < 1e-5

        def query_vec(text):   # queries are centred on the index's centroid too
            v = fleets.embed_ids(tiny, tiny.tokenize(text)).astype(np.float64) - idx.centroid
            return v / np.linalg.norm(v)
        assert idx.texts == texts and "".join(texts[:3]).startswith(LONG_DOCS[0][1][:20])
        # the score: the best chunk's centred cosine + LEXICAL_WEIGHT x the best chunk's
        # BM25 over the query's best (deg.bm25 over the chunk texts)
        from deg.bm25 import BM25
        query = "Which flour does the sourdough starter need?"
        cos = idx.rows.astype(np.float64) @ query_vec(query)
        lex = np.array(BM25(texts).scores(query))
        want = [max(cos[j] for j in range(n) if idx.doc[j] == d) + fleets.LEXICAL_WEIGHT *
                max(lex[j] for j in range(n) if idx.doc[j] == d) / lex.max() for d in range(4)]
        got = fleets.doc_scores(f, query, idx)
        assert np.abs(got - np.array(want)).max() < 1e-5
        assert lex.max() > 0 and [s for s, _ in fleets.select(f, query, k=4, index=idx)] == \
            list(np.argsort(-np.array(want), kind="stable"))
        # a query sharing no word with any chunk is scored by the cosine alone
        cos = idx.rows.astype(np.float64) @ query_vec("zzz qqq")
        assert np.abs(fleets.doc_scores(f, "zzz qqq", idx) - [
            max(c for c, dd in zip(cos, idx.doc) if dd == d) for d in range(4)]).max() < 1e-5
        # an index of another recipe (session 6's mean-pooled cosine) is refused
        z = dict(np.load(Path(d) / "index.npz"))
        z["recipe"] = np.array("mean-final-norm/1")
        with open(Path(d) / "index.npz", "wb") as fh:
            np.savez(fh, **z)
        with pytest.raises(deg.FormatError, match="stale"):
            fleets.load_index(f)
        fleets.build_index(f, chunk=16)
        sel, answer = fleets.ask(f, "What does the keeper log?", k=2, max_tokens=4)
        assert len(sel) == 2 and isinstance(answer, str)
        sel, _ = fleets.ask(f, "x", oracle="ice.txt", max_tokens=2)
        assert sel == [(3, None)]
        with pytest.raises(deg.ArgumentError, match="no such document"):
            fleets.ask(f, "x", oracle="nope.txt")
    assert not list(Path(d).glob("*.tmp.*"))


def test_cli_fleet(tiny, tmp_path):
    import json
    from conftest import run_cli
    docs = []
    for name, text in LONG_DOCS:
        p = tmp_path / name
        p.write_text(text)
        docs.append(p)
    model = ROOT / "tests" / "goldens" / "tiny-qwen3"
    d = tmp_path / "fl"
    run_cli("fleet", "init", d, "--model", model, "--docs", *docs, "--p", 4)
    r = run_cli("fleet", "init", d, "--model", model, "--docs", *docs, "--p", 4, check=False)
    assert r.returncode != 0 and "already holds a fleet" in r.stderr
    run_cli("fleet", "train", d, "--model", model, "--rounds", 4, "--accum", 1, "--budget", 2,
            "--rotate-every", 2, "--chunk-min", 8, "--chunk-max", 16, "--max-q", 4,
            "--max-a", 4, "--quiet")
    out = run_cli("fleet", "status", d, "--model", model).stdout
    assert "4 rounds" in out and str(docs[0]) in out
    # R = resident when the fleet was saved (the manifest), not in the status process
    saved = [x["resident"] for x in json.loads((d / "fleet.json").read_text())["documents"]]
    shown = [ln.split("]")[1].strip().startswith("R") for ln in out.splitlines()[1:]]
    assert shown == saved and sum(saved) == 2
    run_cli("fleet", "index", d, "--model", model, "--embed-chunk", 16, "--quiet")
    out = run_cli("fleet", "ask", d, "--model", model, "--ask", "flour and water", "--json",
                  "--max-tokens", 3).stdout
    obj = json.loads(out.strip().splitlines()[-1])
    assert len(obj["selected"]) == 1 and obj["selected"][0] in map(str, docs)
    assert isinstance(obj["answer"], str)
    out = run_cli("fleet", "equiv", "--model", model, "--docs", *docs[:2], "--p", 8,
                  "--suffix-max", 6).stdout
    assert "max |delta logit| = 0," in out and "greedy agreement 6/6" in out
    r = run_cli("fleet", "ask", tmp_path / "missing", "--model", model, "--ask", "x",
                check=False)
    assert r.returncode != 0 and "fleet.json" in r.stderr
    # deg cartridge compose: two saved cartridges answer together
    with deg.Fleet.open(tiny, d, budget=1) as f:
        paths = [f.doc(i).cartridge_path for i in (0, 1)]
    out = run_cli("cartridge", "compose", "--model", model, "--load", *paths, "--ask", "hi",
                  "--max-tokens", 2).stdout
    assert "2 cartridges composed, 8 rows" in out


def test_cli_draft_refs_added_to_a_fleet(tiny, tmp_path):
    """`deg fleet draft-ref DIR` (deg.Fleet.set_draft_refs) gives a fleet made
    without --draft-ref the cartridges `init --draft-ref` writes, byte for
    byte; a second run rewrites nothing; ask --spec-serve then drafts from
    them; --remove takes them out again."""
    from conftest import run_cli
    model = ROOT / "tests" / "goldens" / "tiny-qwen3"
    docs = []
    for name, text in LONG_DOCS:
        p = tmp_path / name
        p.write_text(text)
        docs.append(p)
    later, born = tmp_path / "later", tmp_path / "born"
    run_cli("fleet", "init", later, "--model", model, "--docs", *docs, "--p", 4)
    run_cli("fleet", "init", born, "--model", model, "--docs", *docs, "--p", 4, "--draft-ref")
    with deg.Fleet.open(tiny, later, budget=1) as f:
        assert f.draft_ref([0, 1]) is None
    out = run_cli("fleet", "draft-ref", later, "--model", model).stdout
    assert "stored in 4 of 4 cartridges" in out, out
    for i in range(len(docs)):
        name = f"docs/{i:04d}.safetensors"
        assert (later / name).read_bytes() == (born / name).read_bytes(), name
    out = run_cli("fleet", "draft-ref", later, "--model", model).stdout
    assert "stored in 0 of 4 cartridges (4 already with them)" in out, out
    with deg.Fleet.open(tiny, later, budget=1) as f, deg.Fleet.open(tiny, born, budget=1) as g:
        ids = f.draft_ref([2, 0]).ids()
        assert ids == g.draft_ref([2, 0]).ids() and len(ids) > 20
    r = run_cli("fleet", "ask", later, "--model", model, "--ask", "flour and water",
                "--oracle", "1", "--spec-serve", "--max-tokens", 6)
    assert "drafted tokens accepted" in r.stderr
    out = run_cli("fleet", "draft-ref", later, "--model", model, "--remove").stdout
    assert "removed from 4 of 4 cartridges" in out, out
    with deg.Fleet.open(tiny, later, budget=2) as f:
        assert f.draft_ref([0, 1, 2, 3]) is None
        assert f.set_draft_refs() == 4 and f.set_draft_refs(on=True) == 0
    with deg.Fleet.open(tiny, later, budget=2) as f, deg.Fleet.open(tiny, born, budget=1) as g:
        assert f.draft_ref([1]).ids() == g.draft_ref([1]).ids()
