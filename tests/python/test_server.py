"""deg serve on the real SmolLM2 with the shipped checkpoint, driven over loopback by
the official openai package (unmodified, base_url), httpx and deg.Client:
decisions of every question type, systemone, chat (plain and behind a cartridge,
streaming and not, follow-up turns reuse K/V), every route's error shapes (§9,
§9.1), 401/403/413/429, client disconnects, determinism (HTTP fill == in-process
deg.fill, alone and batched), and SIGTERM on a `deg serve` subprocess."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import deg
from conftest import needs
from serving import free_port, raw_post, reference_chat, running, wait_up

pytestmark = needs("deg_ckpt_open", "deg_fill_many", "deg_forks_generate")
openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")

CORPUS = ("The Zorblat 9 is a pocket synthesizer made by Quillon Instruments in 2031. "
          "It has four voices, a ribbon keyboard and runs for eleven hours on one charge.")
DOC = ("Ticket 4711 from ann@example.com, opened 5 March 2026: my payouts have failed for "
       "three days and I am furious. Please refund the $12.50 fee.")
SCHEMA = {"type": "object", "properties": {
    "email": {"type": ["string", "null"], "format": "email"},
    "opened": {"type": ["string", "null"], "format": "date"},
    "fee": {"type": ["number", "null"]},
    "urgent": {"type": "boolean"},
    "team": {"enum": ["billing", "tech", "sales"]},
    "anger": {"type": "integer", "minimum": 0, "maximum": 4}}}


@pytest.fixture(scope="module")
def server(model_path, tmp_path_factory):
    from deg.server import Server
    d = tmp_path_factory.mktemp("serve")
    with deg.load_model(model_path) as m:  # a tiny capture cartridge (untrained: p rows)
        deg.Cartridge.from_corpus(m, CORPUS, p=24).save(d / "zorblat.cartridge.safetensors")
    srv = Server(model_path=model_path, cartridges=[str(d / "zorblat.cartridge.safetensors")],
                 batch_window_ms=5)
    with running(srv) as srv:
        yield srv


@pytest.fixture(scope="module")
def oa(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def inproc(server):
    """An in-process checkpoint over the server's own model (one copy of the weights)."""
    with deg.load(model=server.model) as ck:
        yield ck


# ----------------------------------------------------------------- fill

def test_fill_over_http_equals_in_process_alone_and_batched(server, inproc):
    c = deg.Client(server.url)
    alone = c.fill(DOC, SCHEMA)
    other = {"context": "Order 9 from bob@example.org, 1 June 2025.",
             "schema": {"type": "object", "properties": {
                 "email": {"type": ["string", "null"], "format": "email"},
                 "when": {"type": ["string", "null"], "format": "date"}}}}
    eng = server.engine
    eng.window = 0.5      # a wide window: the four requests below form one batch
    try:
        before = eng.health()["fill_batches"]
        batched = c.fill_many([{"context": DOC, "schema": SCHEMA}, other, other,
                               {"context": DOC, "schema": SCHEMA}])
        h = eng.health()
    finally:
        eng.window = 0.005
    assert h["fill_batches"] - before < 4, "concurrent fills were batched"
    assert h["mean_batch_size"] > 1
    want = deg.fill(DOC, SCHEMA, model=inproc)
    want_other = deg.fill(other["context"], other["schema"], model=inproc)
    for r in (alone, batched[0], batched[3]):
        assert r["value"] == want["value"] and r["meta"] == want["meta"]
        assert r["usage"] == want["usage"] and r["plan"] == want["plan"]
        assert r["model"] == server.names.id
    for r in batched[1:3]:
        assert r["value"] == want_other["value"] and r["meta"] == want_other["meta"]
    # bitwise: the JSON texts of value and meta are identical
    assert json.dumps(alone["meta"]) == json.dumps(want["meta"])


def test_fill_errors(server, inproc):
    c = deg.Client(server.url)
    bad = {"type": "object", "properties": {"a": {"type": "strin"}, "b": {"allOf": []}}}
    with pytest.raises(deg.SchemaError) as e:
        c.fill(DOC, bad)
    locs = [x["loc"] for x in e.value.errors]
    assert "/schema/properties/a/type" in locs and any("/properties/b" in x for x in locs)
    with pytest.raises(deg.SchemaError) as e2:
        deg.fill(DOC, bad, model=inproc)
    assert e2.value.errors == e.value.errors, "the same {loc, msg} list as in-process"
    # loc: a pointer into the document the caller passed, the request for fill and the
    # schema for compile_schema (one checker: the same problems, /schema-prefixed)
    with pytest.raises(deg.SchemaError) as e3:
        deg.compile_schema(bad)
    assert ["/schema" + x["loc"] for x in e3.value.errors] == locs
    assert [x["msg"] for x in e3.value.errors] == [x["msg"] for x in e.value.errors]
    with pytest.raises(deg.RequestError) as e:
        c.fill(DOC, SCHEMA, options={"bogus": 1})
    assert e.value.errors[0]["loc"] == "/options/bogus"
    r = httpx.post(server.url + "/v1/fill", json={"context": DOC, "schema": SCHEMA, "x": 1})
    assert r.status_code == 422 and r.json()["error"]["errors"][0]["loc"] == "/x"
    r = httpx.post(server.url + "/v1/fill", json={"schema": SCHEMA})
    assert r.status_code == 422 and "context" in r.json()["error"]["errors"][0]["msg"]
    r = httpx.post(server.url + "/v1/fill", json={"context": DOC, "schema": SCHEMA,
                                                  "model": "gpt-6-luna"})
    assert r.status_code == 422 and r.json()["error"]["errors"][0]["loc"] == "/model"
    r = httpx.post(server.url + "/v1/fill", content=b"{not json")
    assert r.status_code == 422 and r.json()["error"]["deg_error"] == "RequestError"
    with pytest.raises(deg.FillError):
        c.fill("nothing here", {"type": "object", "required": ["id"], "properties": {
            "id": {"type": "string", "format": "uuid"}}})
    # text that is not UTF-8 (a lone surrogate escape): 422 in each route's shape
    bad = b'"a\\ud800b"'
    r = httpx.post(server.url + "/v1/fill", content=b'{"context": ' + bad + b', "schema": ' +
                   json.dumps(SCHEMA).encode() + b"}")
    assert r.status_code == 422 and r.json()["error"]["deg_error"] == "RequestError"
    r = httpx.post(server.url + "/v1/systemone", content=b'{"state": ' + bad + b', "model": '
                   b'"jev-latest", "questions": {"u": {"type": "noul", "instructions": "?"}}}')
    assert r.status_code == 422 and "UTF-8" in r.json()["detail"][0]["msg"]
    with pytest.raises(deg.RequestError):
        c.fill("a\ud800b", SCHEMA)


# ------------------------------------------------------------ decisions

def test_openai_decisions_every_question_type(oa, server, inproc):
    d = oa.decisions.create(
        model="gpt-6-luna", input=DOC,
        questions=[
            {"type": "predicate", "name": "urgent", "instructions": "Is this urgent?"},
            {"type": "choice", "name": "team", "instructions": "Which team should handle it?",
             "choices": [{"value": "billing", "description": "payments and refunds"},
                         {"value": "tech"}, {"value": True}]},
            {"type": "choice", "instructions": "Sentiment?",
             "choices": [{"value": "positive"}, {"value": "negative"}]},
            {"type": "score", "name": "anger", "instructions": "How angry is the customer?",
             "levels": [{"label": "calm"}, {"label": "annoyed", "description": "mild"},
                        {"label": "furious"}]},
            {"type": "choice", "name": "single", "instructions": "x",
             "choices": [{"value": "only"}]},
        ])
    assert d.model == server.names.id
    a = d.answers
    assert [x.type for x in a] == ["predicate", "choice", "choice", "score", "choice"]
    assert a[0].name == "urgent" and 0 <= a[0].probability <= 1
    assert a[1].choice in ("billing", "tech", True)
    assert [p.value for p in a[1].probabilities] == ["billing", "tech", True]
    assert abs(sum(p.probability for p in a[1].probabilities) - 1) < 1e-9
    assert a[2].name is None
    assert [p.label for p in a[3].probabilities] == ["calm", "annoyed", "furious"]
    assert 0 <= a[3].score <= 2
    assert abs(a[3].score - sum(p.value * p.probability for p in a[3].probabilities)) < 1e-9
    assert a[4].choice == "only" and a[4].probabilities[0].probability == 1.0
    assert d.usage.input_tokens > 0 and d.usage.output_tokens == 0
    assert d.usage.total_tokens == d.usage.input_tokens
    # the same answers as deg.api.decisions in-process and as one deg.fill of the schema
    c = deg.Client(server.url)
    body = {"input": DOC, "questions": [
        {"type": "predicate", "name": "urgent", "instructions": "Is this urgent?"},
        {"type": "extract", "name": "email", "instructions": "Customer e-mail",
         "value_type": "email"}]}
    over_http = c.decisions(**body)
    assert over_http == deg.api.decisions({"model": "gpt-6-luna", **body}, inproc)
    assert over_http["answers"][1]["value"] == "ann@example.com"
    assert over_http["answers"][0]["probability"] == a[0].probability, \
        "a question's answer does not depend on the other questions (§7.2)"


def test_openai_decisions_errors(oa):
    with pytest.raises(openai.BadRequestError) as e:
        oa.decisions.create(model="gpt-9", input="x",
                            questions=[{"type": "predicate", "instructions": "?"}])
    err = e.value.body
    assert err["type"] == "invalid_request_error" and err["code"] == "model_not_found"
    assert err["param"] == "model"
    with pytest.raises(openai.BadRequestError) as e:
        oa.decisions.create(model="gpt-6-luna", input=[{"role": "user", "content": [
            {"type": "input_image", "image_url": "https://example.org/a.png"}]}],
            questions=[{"type": "predicate", "instructions": "?"}])
    assert "text only" in e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:
        oa.decisions.create(model="gpt-6-luna", input="x", questions=[
            {"type": "predicate", "name": "a", "instructions": "?"},
            {"type": "predicate", "name": "a", "instructions": "?"}])
    assert e.value.body["param"] == "questions[1].name"
    with pytest.raises(openai.BadRequestError) as e:
        oa.decisions.create(model="gpt-6-luna", input="x", questions=[],
                            extra_body={"temperature": 1})
    assert e.value.body["param"] == "temperature"
    with pytest.raises(openai.BadRequestError) as e:
        oa.decisions.create(model="gpt-6-luna", input="x", questions=[
            {"type": "choice", "instructions": "?", "choices": [{"value": "a"}, {"value": "a"}]}])
    assert "not unique" in e.value.body["message"]


def test_systemone(server, inproc):
    c = deg.Client(server.url)
    questions = {
        "is_urgent": {"type": "noul", "instructions": "Does this convey urgency?",
                      "criteria": {"true": "needs action today", "false": "can wait"}},
        "dept": {"type": "choice", "instructions": "Which team?",
                 "criteria": {"billing": "payments", "tech": None}},
        "sev": {"type": "score", "instructions": "Severity", "criteria": ["low", "mid", "high"]},
        "one": {"type": "score", "instructions": "x", "criteria": ["only"]}}
    r = c.systemone({"ticket": DOC}, questions)
    assert list(r["answers"]) == ["is_urgent", "dept", "sev", "one"]
    a = r["answers"]
    assert a["is_urgent"]["type"] == "noul" and 0 <= a["is_urgent"]["noul"] <= 1
    assert set(a["dept"]["probabilities"]) == {"billing", "tech"}
    assert a["sev"]["legend"] == {"0": "low", "1": "mid", "2": "high"}
    assert set(a["sev"]["probabilities"]) == {"0", "1", "2"}
    assert a["one"] == {"type": "score", "score": 0.0, "confidence": 1.0,
                        "legend": {"0": "only"}, "probabilities": {"0": 1.0}}
    assert set(r["usage"]) == {"input_tokens", "output_tokens"}
    assert r["model"] == server.names.id
    assert r == deg.api.systemone({"state": {"ticket": DOC}, "model": "jev-latest",
                                   "questions": questions}, inproc)


def test_systemone_errors(server):
    url = server.url + "/v1/systemone"
    q = {"a": {"type": "noul", "instructions": "?"}}
    r = httpx.post(url, json={"state": "x", "model": "jev-latest", "questions": q, "foo": 1})
    assert (r.status_code, r.json()) == (400, {"detail": {"error_type": "api_usage_error",
                                                          "message": "Invalid request."}})
    r = httpx.post(url, json={"state": "x", "model": "jev-latest",
                              "questions": {"a": {"type": "rank", "instructions": "?"}}})
    assert r.status_code == 400 and r.json()["detail"]["error_type"] == "api_usage_error"
    r = httpx.post(url, json={"state": "x", "model": "jev-0", "questions": q})
    assert (r.status_code, r.json()) == (400, {"detail": "Unknown model: jev-0"})
    many = {f"o{i}": None for i in range(256)}
    r = httpx.post(url, json={"state": "x", "model": "jev-latest", "questions": {
        "c": {"type": "choice", "instructions": "?", "criteria": many}}})
    assert (r.status_code, r.json()) == (400, {"detail": "Too many choices. Must have at "
                                                         "most 255 choices."})
    r = httpx.post(url, json={"model": "jev-latest", "questions": q})
    d = r.json()["detail"]
    assert r.status_code == 422 and d[0]["type"] == "missing" and d[0]["loc"] == ["body", "state"]
    assert set(d[0]) == {"type", "loc", "msg", "input"}
    r = httpx.post(url, json={"state": "x", "model": "jev-latest", "questions": {}})
    assert r.status_code == 422 and r.json()["detail"][0]["type"] == "too_short"
    r = httpx.post(url, json={"state": "x", "model": "jev-latest", "questions": {
        "a": {"type": "noul", "instructions": "?", "unknown_key": 1}}})
    assert r.status_code == 200, "unknown question keys are ignored, as live Jev does"


# ----------------------------------------------------------------- chat

@pytest.mark.parametrize("target", ["deg-latest", "zorblat"])
def test_chat_plain_and_behind_cartridge(oa, server, target):
    msgs = [{"role": "user", "content": "What is the Zorblat 9? Answer in one sentence."}]
    r = oa.chat.completions.create(model=target, messages=msgs, max_tokens=12, temperature=0)
    text = r.choices[0].message.content
    trunk = server._trunks[server.app.state.ctx.chat_targets[target]]
    assert text == reference_chat(server.model, msgs, 12, trunk if target == "zorblat" else None)
    assert r.model == target and r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.completion_tokens >= 1 and r.usage.prompt_tokens > 0
    parts, usage, finish = [], None, None
    for ch in oa.chat.completions.create(model=target, messages=msgs, max_tokens=12,
                                         temperature=0, stream=True,
                                         stream_options={"include_usage": True}):
        if ch.choices:
            parts.append(ch.choices[0].delta.content or "")
            finish = ch.choices[0].finish_reason or finish
        if ch.usage:
            usage = ch.usage
    assert "".join(parts) == text, "streamed deltas join to the non-streamed text"
    assert finish == r.choices[0].finish_reason
    assert usage.completion_tokens == r.usage.completion_tokens
    # follow-up turn: the previous turns' K/V are reused and reported as cached
    msgs2 = msgs + [{"role": "assistant", "content": text},
                    {"role": "user", "content": "And who makes it?"}]
    r2 = oa.chat.completions.create(model=target, messages=msgs2, max_tokens=6, temperature=0)
    assert r2.usage.prompt_tokens_details.cached_tokens > r.usage.prompt_tokens // 2
    assert r2.choices[0].message.content == reference_chat(
        server.model, msgs2, 6, trunk if target == "zorblat" else None)


def test_concurrent_chats_decode_in_lockstep_bitwise_as_alone(oa, server):
    prompts = ["Say hello.", "What is two plus two?", "Name a colour.", "What is the Zorblat 9?"]
    targets = ["deg-latest", "deg-latest", "zorblat", "zorblat"]
    eng = server.engine
    h0 = eng.health()
    out = [None] * len(prompts)

    def run(i):
        r = oa.chat.completions.create(model=targets[i], max_tokens=20, temperature=0,
                                       messages=[{"role": "user", "content": prompts[i]}])
        out[i] = r.choices[0].message.content
    ths = [threading.Thread(target=run, args=(i,)) for i in range(len(prompts))]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    h1 = eng.health()
    rows = h1["decode_rows"] - h0["decode_rows"]
    steps = h1["decode_steps"] - h0["decode_steps"]
    assert rows > steps, "some decode steps carried several streams"
    for i, p in enumerate(prompts):
        trunk = server._trunks[server.app.state.ctx.chat_targets[targets[i]]]
        want = reference_chat(server.model, [{"role": "user", "content": p}], 20,
                          trunk if targets[i] == "zorblat" else None)
        assert out[i] == want, f"stream {i} equals its solo greedy decode"


def test_chat_behind_cartridge_differs_from_plain(oa):
    msgs = [{"role": "user", "content": "Name the maker of the Zorblat 9."}]
    a = oa.chat.completions.create(model="zorblat", messages=msgs, max_tokens=16, temperature=0)
    b = oa.chat.completions.create(model="deg-latest", messages=msgs, max_tokens=16,
                                   temperature=0)
    assert a.choices[0].message.content != b.choices[0].message.content


def test_chat_sampling_stop_and_errors(oa, server):
    msgs = [{"role": "user", "content": "Count from one to ten in words."}]
    kw = dict(model="deg-latest", messages=msgs, max_tokens=10, temperature=0.9, seed=7)
    a = oa.chat.completions.create(**kw).choices[0].message.content
    assert a == oa.chat.completions.create(**kw).choices[0].message.content, "same seed"
    full = oa.chat.completions.create(model="deg-latest", messages=msgs, max_tokens=20,
                                      temperature=0).choices[0].message.content
    word = full.split()[1] if len(full.split()) > 1 else full[-3:]
    cut = oa.chat.completions.create(model="deg-latest", messages=msgs, max_tokens=20,
                                     temperature=0, stop=[word])
    assert cut.choices[0].message.content == full[:full.index(word)]
    assert cut.choices[0].finish_reason == "stop"
    with pytest.raises(openai.BadRequestError) as e:
        oa.chat.completions.create(model="nope", messages=msgs)
    assert e.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError):
        oa.chat.completions.create(model="deg-latest", messages=msgs, n=2)
    with pytest.raises(openai.BadRequestError) as e:
        oa.chat.completions.create(model="deg-latest", messages=msgs, max_tokens=10 ** 6)
    assert e.value.body["code"] == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError):
        oa.chat.completions.create(model="deg-latest", messages=[{"role": "tool",
                                                                  "content": "x"}])
    with pytest.raises(openai.BadRequestError, match="0x04"):
        oa.chat.completions.create(model="deg-latest", messages=[{"role": "user",
                                                                  "content": "a\x04b"}])


def test_stream_disconnect_cancels(server):
    eng = server.engine
    before = eng.health()["chat_cancelled"]
    body = {"model": "deg-latest", "stream": True, "max_tokens": 400, "temperature": 0,
            "messages": [{"role": "user", "content": "Write a long story about a robot."}]}
    with httpx.stream("POST", server.url + "/v1/chat/completions", json=body,
                      timeout=120) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data:") and '"content"' in line and '""' not in line:
                break                      # first text delta: hang up
    for _ in range(600):
        h = eng.health()
        if h["chat_cancelled"] > before and h["active_streams"] == 0:
            break
        time.sleep(0.05)
    assert h["chat_cancelled"] > before and h["active_streams"] == 0
    assert h["decode_steps"] > 0


def test_nonstreaming_disconnect_cancels(server):
    """A non-streaming chat whose client goes away once it runs is cancelled too."""
    eng = server.engine
    body = {"model": "deg-latest", "stream": False, "max_tokens": 400, "temperature": 0,
            "messages": [{"role": "user", "content": "Write a long story about a robot."}]}
    h = eng.health()
    before, steps0 = h["chat_cancelled"], h["decode_steps"]
    sock = raw_post(server.url, "/v1/chat/completions", body)
    for _ in range(1200):
        if eng.health()["active_streams"] >= 1:
            break
        time.sleep(0.05)
    sock.close()
    for _ in range(600):
        h = eng.health()
        if h["chat_cancelled"] > before and h["active_streams"] == 0:
            break
        time.sleep(0.05)
    assert h["chat_cancelled"] > before and h["active_streams"] == 0
    assert h["decode_steps"] < steps0 + 200, "cancelled long before its 400 tokens"


def test_nonstreaming_client_timeout_cancels(server):
    """The official client giving up (its timeout) hangs up: the decode stops too."""
    eng = server.engine
    h = eng.health()
    before, steps0 = h["chat_cancelled"], h["decode_steps"]
    quick = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0,
                          timeout=1.0)
    with pytest.raises(openai.APITimeoutError):
        quick.chat.completions.create(
            model="deg-latest", max_tokens=400, temperature=0,
            messages=[{"role": "user", "content": "Write a long story about a robot."}])
    for _ in range(600):
        h = eng.health()
        if h["chat_cancelled"] > before and h["active_streams"] == 0:
            break
        time.sleep(0.05)
    assert h["chat_cancelled"] == before + 1 and h["active_streams"] == 0
    assert h["decode_steps"] < steps0 + 200, "cancelled long before its 400 tokens"


def test_fill_over_its_own_limit_is_422(server):
    """A request stopped by its own options (here max_fields) is the client's error, not a 500."""
    r = httpx.post(server.url + "/v1/fill", timeout=120,
                   json={"context": DOC, "schema": SCHEMA, "options": {"max_fields": 1}})
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["deg_error"] == "LimitError" and "max_fields" in err["message"]
    assert (err["type"], err["code"]) == ("invalid_request_error", "limit_error")


def test_running_fill_is_cancelled_when_its_client_goes_away(server):
    eng = server.engine
    h = eng.health()
    before, batches = h["fill_cancelled"], h["fill_batches"]
    words = " ".join(f"line {i}: order {i} shipped to city {i % 17}." for i in range(900))
    sock = raw_post(server.url, "/v1/fill", {"context": words, "schema": SCHEMA})
    for _ in range(1200):
        if eng.health()["fills_running"] >= 1:
            break
        time.sleep(0.02)
    sock.close()
    for _ in range(1200):
        h = eng.health()
        if h["fill_batches"] > batches:
            break
        time.sleep(0.05)
    assert h["fill_cancelled"] == before + 1, "the running fill stopped at its cancel token"
    # the next request is served normally
    r = httpx.post(server.url + "/v1/fill", json={"context": DOC, "schema": SCHEMA}, timeout=300)
    assert r.status_code == 200


# ------------------------------------------------- auth, limits, overload

def test_api_key_body_limit_and_overload(server, oa):
    ctx = server.app.state.ctx
    url = server.url
    ctx.api_key = "s3cret"
    try:
        # one 401 body on every route but Jev's, the shape the openai client parses
        bodies = [httpx.post(url + "/v1/fill", json={"context": DOC, "schema": SCHEMA}),
                  httpx.get(url + "/v1/models"),
                  httpx.post(url + "/v1/decisions", json={}),
                  httpx.post(url + "/v1/chat/completions", json={})]
        assert {r.status_code for r in bodies} == {401}
        assert all(r.json() == bodies[0].json() for r in bodies)
        err = bodies[0].json()["error"]
        assert set(err) == {"message", "type", "param", "code"}
        assert (err["type"], err["code"]) == ("invalid_request_error", "invalid_api_key")
        with pytest.raises(openai.AuthenticationError) as ea:
            oa.post("/fill", body={"context": DOC, "schema": SCHEMA}, cast_to=object)
        assert ea.value.code == "invalid_api_key"
        r = httpx.post(url + "/v1/systemone", json={})
        assert (r.status_code, r.json()) == (403, {"detail": "Not authenticated"})
        with pytest.raises(openai.AuthenticationError):
            oa.models.list()
        assert httpx.get(url + "/health").status_code == 200
        ok = openai.OpenAI(base_url=url + "/v1", api_key="s3cret", max_retries=0)
        assert any(m.id == "gpt-6-luna" for m in ok.models.list().data)
        with pytest.raises(deg.client.AuthenticationError) as e:
            deg.Client(url, api_key="wrong").fill(DOC, SCHEMA)
        assert e.value.http_status == 401 and e.value.body == bodies[0].json()
        with pytest.raises(deg.client.AuthenticationError) as e:
            deg.Client(url).models()
        with pytest.raises(deg.client.AuthenticationError) as e:
            deg.Client(url).systemone("x", {"u": {"type": "noul", "instructions": "?"}})
        assert e.value.http_status == 403
        assert deg.Client(url, api_key="s3cret").health()["status"] == "ok"
    finally:
        ctx.api_key = None
    ctx.max_body = 2000
    try:
        r = httpx.post(url + "/v1/fill", json={"context": "x" * 3000, "schema": SCHEMA})
        assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
        with pytest.raises(deg.client.RequestTooLarge) as e:
            deg.Client(url).fill("x" * 3000, SCHEMA)
        assert e.value.http_status == 413
        with pytest.raises(openai.APIStatusError) as eo:
            oa.post("/fill", body={"context": "x" * 3000, "schema": SCHEMA}, cast_to=object)
        assert eo.value.status_code == 413 and eo.value.code == "request_too_large"
        r = httpx.post(url + "/v1/decisions", content=b"{" + b" " * 3000 + b"}",
                       headers={"content-type": "application/json"})
        assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
    finally:
        ctx.max_body = 4 << 20
    eng = server.engine
    eng.max_pending = 0
    try:
        r = httpx.post(url + "/v1/fill", json={"context": DOC, "schema": SCHEMA})
        assert r.status_code == 429 and r.headers["retry-after"] == "1"
        assert r.json()["error"]["type"] == "rate_limit_error"
        with pytest.raises(deg.client.RateLimitError) as e:
            deg.Client(url).fill(DOC, SCHEMA)
        assert e.value.retry_after == 1.0
        with pytest.raises(openai.RateLimitError):
            oa.chat.completions.create(model="deg-latest", max_tokens=2,
                                       messages=[{"role": "user", "content": "hi"}])
    finally:
        eng.max_pending = 256


def test_error_shape_of_unknown_routes_and_the_client(server, oa):
    for r in (httpx.get(server.url + "/v1/nope"), httpx.get(server.url + "/v1/fill")):
        err = r.json()["error"]
        assert set(err) == {"message", "type", "param", "code"}
        assert (r.status_code, err["code"]) in ((404, "not_found"), (405, "method_not_allowed"))
    with pytest.raises(openai.NotFoundError):
        oa.post("/nope", body={}, cast_to=object)
    with pytest.raises(deg.client.NotFoundError):
        deg.Client(server.url + "/v0").fill(DOC, SCHEMA)
    # fill's own errors in the same shape, read by the openai client as by deg.Client
    with pytest.raises(openai.UnprocessableEntityError) as e:
        oa.post("/fill", body={"context": DOC, "schema": {"type": "object", "properties": {
            "a": {"type": "strin"}}}}, cast_to=object)
    assert e.value.code == "schema_error" and e.value.param == "/schema/properties/a/type"
    assert e.value.body["deg_error"] == "SchemaError"
    assert e.value.body["errors"][0]["loc"] == "/schema/properties/a/type"
    with pytest.raises(deg.client.APIConnectionError) as e:
        deg.Client(f"http://127.0.0.1:{free_port()}", timeout=5).health()
    assert e.value.http_status is None


def test_models_and_health(server):
    c = deg.Client(server.url)
    ids = {m["id"]: m for m in c.models()}
    for n in ("deg-latest", server.names.id, "gpt-6-luna", "jev-latest", "jev-preview",
              "clef-flash", "zorblat"):
        assert n in ids
    assert ids["zorblat"]["routes"] == ["chat"]
    assert ids["jev-latest"]["served_as"] == "jev-latest"
    h = c.health()
    assert h["status"] == "ok" and h["model"] == server.names.id
    for k in ("queue_depth", "fill_batches", "mean_batch_size", "active_streams"):
        assert k in h["batcher"]


# -------------------------------------------------- deg serve + SIGTERM

def test_deg_serve_subprocess_sigterm_finishes_running_stream(model_path, tmp_path):
    port = free_port()
    env = dict(os.environ, DEG_API_KEY="k1")
    p = subprocess.Popen([sys.executable, "-m", "deg.cli", "serve", "--port", str(port),
                          "--model", str(model_path), "--log-level", "warning"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_up(url, 300, p)
        body = {"model": "deg-latest", "stream": True, "max_tokens": 24, "temperature": 0,
                "messages": [{"role": "user", "content": "Say hello."}]}
        lines = []
        with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=300,
                          headers={"Authorization": "Bearer k1"}) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                if not line:
                    continue
                lines.append(line)
                if len(lines) == 1:
                    p.send_signal(signal.SIGTERM)   # stop while the stream is running
        assert lines[-1] == "data: [DONE]", "the running request finished"
        # uvicorn re-raises the captured SIGTERM once it has shut down gracefully
        assert p.wait(120) in (0, -signal.SIGTERM)
        err = p.stderr.read().decode("utf-8", "replace")
        assert "Traceback" not in err, err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_startup_errors_free_what_was_loaded(model_path, tmp_path):
    from deg.server import Server
    with pytest.raises(deg.DegIOError, match="nope.cartridge.safetensors"):
        Server(model_path=model_path, cartridges=[str(tmp_path / "nope.cartridge.safetensors")])
    with pytest.raises(deg.ArgumentError, match="already served"):
        Server(model_path=model_path, cartridges=[f"deg-latest={tmp_path / 'x'}"])
    r = subprocess.run([sys.executable, "-m", "deg.server", "--model", str(model_path),
                        "--cartridge", str(tmp_path / "nope.safetensors")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "deg serve: error:" in r.stderr
    assert "Traceback" not in r.stderr
