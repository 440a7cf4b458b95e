"""deg.server's streamed text without a model: UTF-8 sequences split across tokens
are emitted whole, text that could still become a stop string is held back and
never emitted past a stop string (engine.Engine._emit_text / _flush)."""
import pytest

pytest.importorskip("starlette")
from deg.server.engine import ChatJob, Engine  # noqa: E402


def _job(stops):
    out = []
    j = ChatJob("", [], 10, 0.0, 1.0, 0, stops, lambda ev: out.append(ev))
    return j, out


def _feed(j, pieces):
    """Feed token byte pieces; returns True if a stop string completed."""
    for p in pieces:
        j.buf += p
        if Engine._emit_text(None, j):
            return True
    return False


def test_utf8_split_across_tokens():
    j, out = _job([])
    e = "é".encode()
    assert not _feed(j, [b"caf", e[:1]])
    assert "".join(v for k, v in out) == "caf"
    assert not _feed(j, [e[1:], b"!"])
    assert "".join(v for k, v in out) == "café!" and j.text == "café!"


def test_stop_string_held_back_and_cut():
    j, out = _job(["END"])
    assert not _feed(j, [b"one E", b"N"])
    assert "".join(v for k, v in out) == "one ", "a possible stop prefix is held back"
    assert _feed(j, [b"D two"])
    assert "".join(v for k, v in out) == "one " and j.text == "one "


def test_false_stop_prefix_is_released_by_flush():
    j, out = _job(["END"])
    assert not _feed(j, [b"the E"])
    Engine._flush(None, j)
    assert "".join(v for k, v in out) == "the E"


def test_stop_across_earlier_text_and_several_stops():
    j, out = _job(["xyz", "\n\n"])
    assert _feed(j, [b"a", b"b\n", b"\nc"])
    assert j.text == "ab" and "".join(v for k, v in out) == "ab"
