"""deg serve --fleet on the real SmolLM2: a three-document fleet built here (corpus-init
cartridges, the retrieval index through the model), driven by the official openai
client: retrieval per new conversation, conversation-sticky selection (identity =
the first user message), follow-ups reusing the composed prefix's K/V (cached_tokens),
interleaved conversations, --rag-adaptive's decisive-margin switch, answers equal
to greedy decoding behind the same composition in-process (spec cartridges.md,
"HTTP serving (lmserve --fleet)")."""
import subprocess
import sys
import threading
import time

import pytest

import deg
from deg import fleets
from conftest import needs
from serving import reference_chat, running

pytestmark = needs("deg_ckpt_open", "deg_fleet_trunk", "deg_forks_generate")
openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("numpy")

DOCS = [
    ("bread.txt",
     "Baking sourdough bread. Mix flour, water and salt with an active sourdough starter. "
     "Knead the dough until it is smooth and elastic, then let it rise in a warm kitchen "
     "for four to six hours until it has doubled. Shape the loaf, proof it overnight in "
     "the fridge, and bake it in a hot Dutch oven at 250 degrees Celsius for forty minutes. "
     "A good crust is dark brown and crackles as the bread cools on a rack."),
    ("volcano.txt",
     "Volcanoes form where molten rock called magma rises through the crust of the Earth. "
     "When pressure builds up in the magma chamber, the volcano erupts lava, ash and "
     "volcanic gases. Shield volcanoes such as Mauna Loa in Hawaii have gentle slopes and "
     "runny basalt lava, while stratovolcanoes like Mount Fuji are steep cones built from "
     "layers of ash and thick lava. Geologists watch earthquakes and gas to predict eruptions."),
    ("chess.txt",
     "Chess is a board game for two players on a board of sixty-four squares. Each player "
     "starts with sixteen pieces: a king, a queen, two rooks, two bishops, two knights and "
     "eight pawns. The knight moves in an L shape and can jump over other pieces. The goal "
     "is checkmate: the opponent's king is attacked and has no legal move to escape. "
     "Castling moves the king two squares toward a rook in a single turn."),
]
P = 16
Q_BREAD = "How long should sourdough bread dough rise before baking?"
Q_VOLCANO = "What comes out of a volcano when it erupts?"


@pytest.fixture(scope="module")
def fleet_dir(model_path, tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet") / "docs"
    with deg.load_model(model_path) as m:
        deg.Fleet.init(m, d, DOCS, p=P)
        with deg.Fleet.open(m, d, budget=1) as f:
            assert fleets.build_index(f, chunk=48) >= len(DOCS)
    return d


@pytest.fixture(scope="module")
def server(model_path, fleet_dir):
    from deg.server import Server
    srv = Server(model_path=model_path, fleets=[str(fleet_dir)], rag_docs=1)
    with running(srv) as srv:
        yield srv


@pytest.fixture(scope="module")
def oa(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def ref_fleet(server, fleet_dir):
    """The same fleet opened again in-process over the server's model."""
    with deg.Fleet.open(server.model, fleet_dir, budget=1) as f:
        yield f


def _ask(oa, messages, max_tokens=10, **kw):
    return oa.chat.completions.create(model="docs", messages=messages, max_tokens=max_tokens,
                                      temperature=0, **kw)


def _want(server, ref_fleet, messages, docs, max_tokens):
    t = ref_fleet.trunk(docs)
    try:
        return reference_chat(server.model, messages, max_tokens, t)
    finally:
        t.close()


def test_retrieval_sticky_followups_and_cached_tokens(oa, server, ref_fleet):
    ft = server._fleets["docs"]
    want_doc = [i for i, (n, _) in enumerate(DOCS) if n == "bread.txt"]
    assert [d for d, _ in fleets.select(ref_fleet, Q_BREAD)] == want_doc
    m1 = [{"role": "user", "content": Q_BREAD}]
    r1 = _ask(oa, m1)
    assert r1.model_extra["fleet"] == {"selected": ["bread.txt"], "selection": "retrieved"}
    assert r1.choices[0].message.content == _want(server, ref_fleet, m1, want_doc, 10)
    assert r1.usage.prompt_tokens_details.cached_tokens == 0
    # follow-up on another topic: the conversation keeps its documents (sticky, no
    # retrieval) and continues its K/V
    before = dict(ft.stats)
    m2 = m1 + [{"role": "assistant", "content": r1.choices[0].message.content},
               {"role": "user", "content": Q_VOLCANO}]
    r2 = _ask(oa, m2, max_tokens=8)
    assert r2.model_extra["fleet"] == {"selected": ["bread.txt"], "selection": "sticky"}
    assert ft.stats["retrievals"] == before["retrievals"]
    assert r2.usage.prompt_tokens_details.cached_tokens >= r1.usage.prompt_tokens
    assert r2.choices[0].message.content == _want(server, ref_fleet, m2, want_doc, 8)
    # the same question as a NEW conversation retrieves the volcano document
    r3 = _ask(oa, [{"role": "user", "content": Q_VOLCANO}], max_tokens=8)
    assert r3.model_extra["fleet"] == {"selected": ["volcano.txt"], "selection": "retrieved"}
    assert r3.choices[0].message.content == _want(server, ref_fleet, r3_msgs := [
        {"role": "user", "content": Q_VOLCANO}], [1], 8)
    assert r3_msgs


def test_interleaved_conversations_keep_their_selections(oa, server, ref_fleet):
    qa = "Which piece in chess moves in an L shape?"
    qb = "Which volcano in Hawaii has gentle slopes?"
    ra = _ask(oa, [{"role": "user", "content": qa}], max_tokens=6)
    rb = _ask(oa, [{"role": "user", "content": qb}], max_tokens=6)
    assert ra.model_extra["fleet"]["selected"] == ["chess.txt"]
    assert rb.model_extra["fleet"]["selected"] == ["volcano.txt"]
    fa = [{"role": "user", "content": qa}, {"role": "assistant",
                                            "content": ra.choices[0].message.content},
          {"role": "user", "content": "Thanks! Say that again."}]
    fb = [{"role": "user", "content": qb}, {"role": "assistant",
                                            "content": rb.choices[0].message.content},
          {"role": "user", "content": "Thanks! Say that again."}]
    out = {}

    def run(key, msgs):
        out[key] = _ask(oa, msgs, max_tokens=6)
    ths = [threading.Thread(target=run, args=("a", fa)),
           threading.Thread(target=run, args=("b", fb))]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert out["a"].model_extra["fleet"] == {"selected": ["chess.txt"], "selection": "sticky"}
    assert out["b"].model_extra["fleet"] == {"selected": ["volcano.txt"],
                                             "selection": "sticky"}
    for k, msgs, doc in (("a", fa, 2), ("b", fb, 1)):
        assert out[k].usage.prompt_tokens_details.cached_tokens > 0
        assert out[k].choices[0].message.content == _want(server, ref_fleet, msgs, [doc], 6)


def test_streaming_reports_the_selection(oa, server):
    chunks = list(_ask(oa, [{"role": "user", "content": "Which chess piece moves in an L shape?"}],
                       max_tokens=6, stream=True))
    assert chunks[0].model_extra["fleet"] == {"selected": ["chess.txt"],
                                              "selection": "retrieved"}
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")


def test_rag_adaptive_switches_only_on_a_decisive_margin(oa, server, ref_fleet):
    ft = server._fleets["docs"]
    ft.adaptive = True
    try:
        q = "Tell me about baking bread with a sourdough starter."
        m = [{"role": "user", "content": q}]
        r = _ask(oa, m, max_tokens=6)
        assert r.model_extra["fleet"]["selected"] == ["bread.txt"]
        m += [{"role": "assistant", "content": r.choices[0].message.content}]
        # a phatic turn: the bread document still leads under all user messages
        phatic = m + [{"role": "user", "content": "Thanks, that helps."}]
        s = fleets.doc_scores(ref_fleet, q + "\n" + "Thanks, that helps.", ft.index)
        assert s[0] >= max(s[1:]) - ft.margin, s
        r2 = _ask(oa, phatic, max_tokens=6)
        assert r2.model_extra["fleet"] == {"selected": ["bread.txt"], "selection": "sticky"}
        assert r2.usage.prompt_tokens_details.cached_tokens > 0
        # a clear pivot: another document beats bread by more than the margin
        pivot_q = DOCS[1][1]
        pivot = m + [{"role": "user", "content": pivot_q}]
        s = fleets.doc_scores(ref_fleet, q + "\n" + pivot_q, ft.index)
        assert s[1] > s[0] + ft.margin, s
        before = ft.stats["switches"]
        r3 = _ask(oa, pivot, max_tokens=6)
        assert r3.model_extra["fleet"] == {"selected": ["volcano.txt"],
                                           "selection": "switched"}
        assert ft.stats["switches"] == before + 1
        assert r3.usage.prompt_tokens_details.cached_tokens == 0, "a new prefix: no reuse"
        assert r3.choices[0].message.content == _want(server, ref_fleet, pivot, [1], 6)
        # the conversation now continues behind the new selection
        nxt = pivot + [{"role": "assistant", "content": r3.choices[0].message.content},
                       {"role": "user", "content": "Thanks, that helps."}]
        r4 = _ask(oa, nxt, max_tokens=6)
        assert r4.model_extra["fleet"]["selected"] == ["volcano.txt"]
        assert r4.usage.prompt_tokens_details.cached_tokens > 0
    finally:
        ft.adaptive = False


def test_models_health_and_errors(server, fleet_dir, model_path, tmp_path):
    c = deg.Client(server.url)
    ids = {m["id"]: m for m in c.models()}
    assert ids["docs"]["routes"] == ["chat"]
    h = c.health()["batcher"]["fleets"]["docs"]
    assert h["retrievals"] >= 1 and set(h) == {"retrievals", "sticky", "switches"}
    from deg.server import Server
    empty = tmp_path / "noindex"
    with deg.load_model(model_path) as m:
        deg.Fleet.init(m, empty, DOCS[:2], p=P)
    with pytest.raises(deg.DegIOError, match="deg fleet index"):
        Server(model_path=model_path, fleets=[str(empty)])
    with pytest.raises(deg.ArgumentError, match="already served"):
        Server(model_path=model_path, fleets=[f"deg-latest={fleet_dir}"])
    r = subprocess.run([sys.executable, "-m", "deg.server", "--model", str(model_path),
                        "--fleet", str(tmp_path / "nope")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "deg serve: error:" in r.stderr and "nope" in r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "deg.server", "--rag-docs", "0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "--rag-docs must be >= 1" in r.stderr


def test_rag_docs_two_compose_in_score_order(oa, server, ref_fleet):
    ft = server._fleets["docs"]
    ft.k = 2
    try:
        q = "Which volcano has runny basalt lava, and how hot is the oven for bread?"
        want = [d for d, _ in fleets.select(ref_fleet, q, k=2)]
        m = [{"role": "user", "content": q}]
        r = _ask(oa, m, max_tokens=8)
        assert r.model_extra["fleet"] == {"selected": [DOCS[d][0] for d in want],
                                          "selection": "retrieved"}
        assert r.choices[0].message.content == _want(server, ref_fleet, m, want, 8)
        m2 = m + [{"role": "assistant", "content": r.choices[0].message.content},
                  {"role": "user", "content": "Say it shorter."}]
        r2 = _ask(oa, m2, max_tokens=6)
        assert r2.model_extra["fleet"]["selection"] == "sticky"
        assert r2.usage.prompt_tokens_details.cached_tokens >= r.usage.prompt_tokens
        assert r2.choices[0].message.content == _want(server, ref_fleet, m2, want, 6)
    finally:
        ft.k = 1
