"""Work limits, cancellation and closing handles in use (issue 19 items 1, 4),
on the tiny random models: a deg.CancelToken cancelled from another thread
stops deg.fill / fill_many / Model.generate / Fork.generate (CancelledError);
deadline_ms and the field / fork-token caps raise LimitError; close() while a
call on the handle (or a child) runs in another thread raises StateError and
frees nothing, and the running call finishes normally."""
import threading
import time

import pytest

import deg
from conftest import ROOT

GOLDENS = ROOT / "tests" / "goldens"
SMALL = {"type": "object", "properties": {"a": {"type": "boolean"},
                                          "n": {"type": ["number", "null"]}}}


def long_text(n):
    words = ["alpha ", "beta ", "42 ", "gamma, ", "on 5 March 2026 ", "x@y.org "]
    out, i = [], 0
    while sum(map(len, out)) + 20 < n:
        out.append(words[(i * 7) % 6])
        i += 1
    return "".join(out)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    d = tmp_path_factory.mktemp("ck-limits")
    deg.create_random_checkpoint(GOLDENS / "tiny-llama", d, seed=5)
    with deg.load(d) as ck:
        yield ck


@pytest.fixture(scope="module")
def tiny():
    with deg.load_model(GOLDENS / "tiny-llama") as m:
        yield m


def later(seconds, fn):
    t = threading.Timer(seconds, fn)
    t.start()
    return t


def test_cancel_token():
    t = deg.CancelToken()
    assert not t.cancelled
    t.cancel()
    assert t.cancelled
    t.reset()
    assert not t.cancelled
    assert deg.CancelledError.status == -15 and deg.LimitError.status == -16


def test_fill_cancel_from_thread(ckpt):
    tok = deg.CancelToken()
    ctx = long_text(60000)
    timer = later(0.2, tok.cancel)
    with pytest.raises(deg.CancelledError, match="cancelled during prefill"):
        deg.fill(ctx, SMALL, model=ckpt, cancel=tok)
    timer.join()
    # the checkpoint is fine afterwards; a reset token lets a fill through
    tok.reset()
    r = deg.fill("Order 4711, total $12.", SMALL, model=ckpt, cancel=tok)
    assert r == deg.fill("Order 4711, total $12.", SMALL, model=ckpt)


def test_fill_limits_options(ckpt):
    with pytest.raises(deg.LimitError, match="deadline of 30 ms passed") as e:
        deg.fill(long_text(60000), SMALL, model=ckpt, options={"deadline_ms": 30})
    assert "; set by the request's options.deadline_ms" in str(e.value)
    # the caller's deadline: the message says how to lift it, in C and in Python
    with pytest.raises(deg.LimitError, match="deadline of 30 ms passed") as e:
        deg.fill(long_text(60000), SMALL, model=ckpt, limits={"deadline_ms": 30})
    assert ('; to lift it: raise deg_run_limits.deadline_ms (C) or deadline_ms in Python '
            '(deg.fill(limits={"deadline_ms": N}), Model.generate(deadline_ms=N)), 0 = none'
            ) in str(e.value)
    with pytest.raises(deg.LimitError, match="max_fork_tokens 3: "):
        deg.fill("Order 4711.", SMALL, model=ckpt, options={"max_fork_tokens": 3})
    arr = {"type": "object", "properties": {"xs": {
        "type": "array", "minItems": 3, "maxItems": 3,
        "items": {"type": "object", "properties": {"a": {"type": "boolean"}}}}}}
    with pytest.raises(deg.LimitError, match="max_fields 3: the schema instantiates at least 4 "
                       "fields .*before the prefill; set by the request's options.max_fields"):
        deg.fill("three", arr, model=ckpt, options={"max_fields": 3})
    assert deg.fill("three", arr, model=ckpt, options={"max_fields": 4})["value"] == \
        deg.fill("three", arr, model=ckpt)["value"]
    with pytest.raises(deg.RequestError) as e:
        deg.fill("x", SMALL, model=ckpt, options={"deadline_ms": 0})
    assert e.value.errors[0]["loc"] == "/options/deadline_ms"
    with pytest.raises(deg.ArgumentError, match="CancelToken"):
        deg.fill("x", SMALL, model=ckpt, cancel=object())


def test_fill_many_cancels_one_job(ckpt):
    tok = deg.CancelToken()
    tok.cancel()
    jobs = [{"context": "Order 1, total $3.", "schema": SMALL},
            {"context": "Order 2, total $4.", "schema": SMALL, "cancel": tok},
            {"context": "Order 3.", "schema": SMALL, "options": {"max_fields": 1}}]
    out = deg.fill_many(jobs, model=ckpt)
    assert out[0] == deg.fill("Order 1, total $3.", SMALL, model=ckpt)
    assert isinstance(out[1], deg.CancelledError)
    assert isinstance(out[2], deg.LimitError)


def test_generate_cancel_and_deadline(tiny):
    tiny.generate([5, 6, 7], max_tokens=2)  # warm up
    tok = deg.CancelToken()
    timer = later(0.5, tok.cancel)
    t0 = time.monotonic()
    with pytest.raises(deg.CancelledError, match="cancelled during "):
        tiny.generate([5, 6, 7], max_tokens=200000, stop_ids=[], cancel=tok)
    assert time.monotonic() - t0 < 60
    timer.join()
    with pytest.raises(deg.LimitError, match="deadline of 50 ms"):
        tiny.generate([5, 6, 7], max_tokens=200000, stop_ids=[], deadline_ms=50)
    with tiny.trunk([5, 6, 7]) as t, t.fork() as f:
        tok.cancel()
        with pytest.raises(deg.CancelledError):
            f.generate(max_tokens=5, cancel=tok)


def run_in_thread(fn):
    box = {}

    def go():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - reported to the test
            box["error"] = e
    th = threading.Thread(target=go)
    th.start()
    return th, box


def wait_busy(handle, timeout=30):
    t0 = time.monotonic()
    while not handle._in_use():
        assert time.monotonic() - t0 < timeout, "the call never started"
        time.sleep(0.005)


def test_close_checkpoint_while_filling(tmp_path):
    """Issue 19 item 1: close() of a checkpoint another thread fills with
    raises StateError (it used to free the handle under the fill: SIGSEGV)."""
    deg.create_random_checkpoint(GOLDENS / "tiny-llama", tmp_path, seed=3)
    ck = deg.load(tmp_path)
    ctx = long_text(12000)
    th, box = run_in_thread(lambda: deg.fill(ctx, SMALL, model=ck))
    wait_busy(ck)
    with pytest.raises(deg.StateError, match="in use by 1 running call"):
        ck.close()
    assert not ck.closed
    th.join()
    assert "error" not in box, box.get("error")
    assert set(box["value"]) >= {"value", "meta", "usage"}
    ck.close()
    assert ck.closed
    with pytest.raises(deg.StateError, match="closed"):
        deg.fill("x", SMALL, model=ck)


def test_close_model_while_generating():
    m = deg.load_model(GOLDENS / "tiny-llama")
    m.generate([5, 6], max_tokens=2)
    tok = deg.CancelToken()
    th, box = run_in_thread(lambda: m.generate([5, 6, 7], max_tokens=200000, stop_ids=[],
                                               cancel=tok))
    wait_busy(m)
    with pytest.raises(deg.StateError, match="in use"):
        m.close()
    # a child fork generating holds the model too
    t = m.trunk([5, 6, 7])
    f = t.fork()
    tok2 = deg.CancelToken()
    th2, box2 = run_in_thread(lambda: f.generate(max_tokens=200000, stop_ids=[], cancel=tok2))
    wait_busy(f)
    with pytest.raises(deg.StateError, match="in use by 2 running call"):
        m.close()
    with pytest.raises(deg.StateError, match="in use by 1 running call"):
        t.close()
    assert not f.closed and not t.closed and not m.closed
    tok.cancel()
    tok2.cancel()
    th.join()
    th2.join()
    assert isinstance(box["error"], deg.CancelledError)
    assert isinstance(box2["error"], deg.CancelledError)
    m.close()
    assert f.closed and t.closed and m.closed


# ------------------------------------------------ default limits (issue 19 item 4)

def wide_item(n_fields, n_items=2):
    """An array of exactly n_items items of n_fields booleans each."""
    props = {f"f{i}": {"type": "boolean"} for i in range(n_fields)}
    return {"type": "object", "properties": {"rows": {
        "type": "array", "minItems": n_items, "maxItems": n_items,
        "items": {"type": "object", "properties": props}}}}


def test_python_limits_keep_the_library_defaults():
    """None = libdeg's default (not 0 = unlimited); 0 lifts a limit explicitly.
    The default deadline (10 minutes) bounds a caller who sets nothing."""
    from deg._native import lib
    from deg.limits import (DEFAULT_DEADLINE_MS, DEFAULT_MAX_FIELDS, DEFAULT_MAX_FORK_TOKENS,
                            run_limits)
    d = lib.deg_run_limits_default()
    assert (DEFAULT_DEADLINE_MS, DEFAULT_MAX_FIELDS, DEFAULT_MAX_FORK_TOKENS) == \
        (600000, 4096, 1 << 20)
    lim = run_limits()
    assert (lim.deadline_ms, lim.max_fields, lim.max_fork_tokens) == \
        (d.deadline_ms, d.max_fields, d.max_fork_tokens) == (600000, 4096, 1 << 20)
    lim = run_limits(deadline_ms=0, max_fields=0, max_fork_tokens=7)
    assert (lim.deadline_ms, lim.max_fields, lim.max_fork_tokens) == (0, 0, 7)
    for bad in (-1, 1.5, True, "3", 2**63):
        with pytest.raises(deg.ArgumentError, match="max_fields must be"):
            run_limits(max_fields=bad)
    with pytest.raises(deg.ArgumentError, match="unknown key.*max_field\\b"):
        deg.fill("x", SMALL, limits={"max_field": 3})
    with pytest.raises(deg.ArgumentError, match="limits must be a mapping"):
        deg.fill("x", SMALL, limits=5)


def test_fill_is_bounded_by_default(ckpt):
    """An item of 4,100 fields x 2 (the issue's 3,002 ran 116 s) stops at the
    default field cap before any fork runs, with a message naming the cap and how
    to lift it; limits= lifts it (0) and the fork-token cap is then checked
    before the round that would exceed it runs."""
    schema = wide_item(4100)
    t0 = time.monotonic()
    for call in (lambda: deg.fill("Two rows.", schema, model=ckpt),
                 lambda: deg.fill_many([{"context": "Two rows.", "schema": schema}],
                                       model=ckpt)[0]):
        try:
            r = call()
        except deg.LimitError as e:
            r = e
        assert isinstance(r, deg.LimitError), r
        assert "max_fields 4096: the schema instantiates at least 8201 fields" in str(r), r
        assert ("; to lift it: it is libdeg's default cap (DEG_DEFAULT_MAX_FIELDS); set "
                "deg_run_limits.max_fields (C) or deg.fill(limits={\"max_fields\": N}) "
                "(Python), 0 = none") in str(r), r
    assert time.monotonic() - t0 < 60, "stopped before the forks ran"
    with pytest.raises(deg.LimitError, match="max_fork_tokens 50: ") as e:
        deg.fill("Two rows.", schema, model=ckpt, limits={"max_fields": 0,
                                                           "max_fork_tokens": 50})
    assert "default" not in str(e.value)
    # a cap of the caller's own replaces the default; options only tighten it
    arr = wide_item(3, n_items=3)  # 1 instance + 9 leaves
    assert deg.fill("rows", arr, model=ckpt, limits={"max_fields": 10})["value"] == \
        deg.fill("rows", arr, model=ckpt)["value"]
    with pytest.raises(deg.LimitError, match="max_fields 9: "):
        deg.fill("rows", arr, model=ckpt, limits={"max_fields": 9})
    with pytest.raises(deg.LimitError, match="max_fields 5: "):
        deg.fill("rows", arr, model=ckpt, limits={"max_fields": 10},
                 options={"max_fields": 5})
    out = deg.fill_many([{"context": "rows", "schema": arr, "limits": {"max_fields": 9}},
                         {"context": "rows", "schema": arr}], model=ckpt)
    assert isinstance(out[0], deg.LimitError) and isinstance(out[1], dict)


def test_deg_serve_bounds_each_fill_by_default(ckpt, tmp_path, capsys):
    """deg serve's own defaults: a per-fill deadline (a 4 MiB body must not buy
    minutes of CPU) besides libdeg's caps; --deadline-ms / --max-fields /
    --max-fork-tokens change them (0 = none)."""
    pytest.importorskip("uvicorn")
    import argparse
    from deg.server import DEFAULT_DEADLINE_MS, Server, add_arguments, limits_from_args
    p = argparse.ArgumentParser()
    add_arguments(p)
    assert DEFAULT_DEADLINE_MS == 60000
    assert limits_from_args(p.parse_args([])) == {"deadline_ms": 60000}
    assert limits_from_args(p.parse_args(["--deadline-ms", "0", "--max-fields", "0",
                                          "--max-fork-tokens", "99"])) == \
        {"deadline_ms": 0, "max_fields": 0, "max_fork_tokens": 99}
    with pytest.raises(SystemExit) as e:  # argparse's usage error (exit 2) names the flag
        p.parse_args(["--max-fields", "-1"])
    assert e.value.code == 2
    assert "argument --max-fields: -1 must be >= 0 (0 = none)" in capsys.readouterr().err
    d = tmp_path / "ck"
    deg.create_random_checkpoint(GOLDENS / "tiny-llama", d, seed=5)
    srv = Server(ckpt=str(d))
    try:
        assert srv.engine.limits == {"deadline_ms": 60000}
        job = srv.engine.submit_fill({"context": "Order 4711.", "schema": SMALL})
        r = job.future.result(300)
        assert r["value"] == deg.fill("Order 4711.", SMALL, model=ckpt)["value"]
        fut = srv.engine.submit_fill({"context": "rows", "schema": wide_item(4100)}).future
        with pytest.raises(deg.LimitError, match="max_fields 4096") as e:
            fut.result(120)
        # the server set the limit: its message names the deg serve flag, not the library call
        assert str(e.value).endswith(
            "; to lift it: a limit of this server: the operator starts deg serve with "
            "--max-fields N (0 = none); a request's options can only tighten it"), e.value
        assert "deg_run_limits" not in str(e.value)
        fut = srv.engine.submit_fill({"context": "rows", "schema": wide_item(2000, 1)}).future
        with pytest.raises(deg.LimitError, match="^DEG_MAX_FORK_LEN 8192: one fork of") as e:
            fut.result(120)
        assert ("deg serve with --max-fork-tokens 0 (no fork-token caps); a request's options"
                in str(e.value)), e.value  # no second "(0 = none)" after the flag's own words
        # a limit of the request's own options is the request's to change
        fut = srv.engine.submit_fill({"context": "rows", "schema": wide_item(3, 3),
                                      "options": {"max_fields": 5}}).future
        with pytest.raises(deg.LimitError, match="set by the request's options.max_fields \\(a request's"):
            fut.result(120)
    finally:
        srv.close()
    srv = Server(ckpt=str(d), limits={"deadline_ms": 30})
    try:
        with pytest.raises(deg.LimitError, match="deadline of 30 ms passed") as e:
            job = srv.engine.submit_fill({"context": long_text(60000), "schema": SMALL})
            job.future.result(120)
        assert "deg serve with --deadline-ms N (0 = none)" in str(e.value)
    finally:
        srv.close()


def test_deg_serve_oversized_fill_does_not_block_another_client(tmp_path):
    """Head-of-line blocking (issue 19): client A's oversized fill (an item of
    3,002 fields x 5, limits lifted: minutes on the tiny model) runs on one fill
    worker; client B's normal request, sent once A's is running, is answered
    while A's still runs (ordering, not timings). A then goes away and its fill
    is cancelled. With one worker B would wait for all of A."""
    pytest.importorskip("uvicorn")
    httpx = pytest.importorskip("httpx")
    import argparse
    from serving import raw_post, running
    from deg.server import DEFAULT_FILL_WORKERS, Server, add_arguments
    p = argparse.ArgumentParser()
    add_arguments(p)
    assert p.parse_args([]).fill_workers == DEFAULT_FILL_WORKERS == 2
    d = tmp_path / "ck"
    deg.create_random_checkpoint(GOLDENS / "tiny-llama", d, seed=5)
    srv = Server(ckpt=str(d), limits={"deadline_ms": 0, "max_fields": 0, "max_fork_tokens": 0})
    with running(srv) as srv:
        eng = srv.engine
        assert eng.health()["fill_workers"] == 2
        a = raw_post(srv.url, "/v1/fill", {"context": "Five rows of flags.",
                                           "schema": wide_item(3002, 5)})
        for _ in range(6000):
            if eng.health()["fills_running"] >= 1:
                break
            time.sleep(0.02)
        assert eng.health()["fills_running"] == 1, "A's fill is running"
        batches = eng.health()["fill_batches"]
        r = httpx.post(srv.url + "/v1/fill", json={"context": "Order 4711.", "schema": SMALL},
                       timeout=600)
        h = eng.health()
        assert r.status_code == 200, r.text
        assert r.json()["value"] == deg.fill("Order 4711.", SMALL, model=d)["value"]
        # B's batch finished while A's is still running (A has not answered)
        assert h["fill_batches"] == batches + 1 and h["fills_running"] == 1, h
        a.setblocking(False)
        with pytest.raises(BlockingIOError):
            a.recv(1)
        cancelled = h["fill_cancelled"]
        a.close()  # A goes away: its fill stops at its cancel token
        for _ in range(6000):
            if eng.health()["fill_cancelled"] > cancelled:
                break
            time.sleep(0.05)
        assert eng.health()["fill_cancelled"] == cancelled + 1
        assert eng.health()["fills_running"] == 0
