"""deg.Cartridge on the tiny random models of tests/goldens (no real model
needed): capture init, the equivalence gate through Python, training steps,
save/load round trip, serving trunk, errors."""
import math
from pathlib import Path

import pytest

import deg
from conftest import needs

ROOT = Path(__file__).resolve().parents[2]
pytestmark = needs("deg_cartridge_init_tokens", "deg_model_load")


@pytest.fixture(scope="module")
def tiny():
    m = deg.load_model(ROOT / "tests" / "goldens" / "tiny-qwen3")
    yield m
    m.close()


def test_capture_equals_prefill(tiny):
    prefix, suffix = [3, 14, 15, 92, 65, 35], [89, 79, 32, 38]
    c = deg.Cartridge.from_tokens(tiny, prefix)
    assert len(c) == 6 and c.frozen_prefix == 1 and c.steps == 0
    _, behind = c.eval(suffix, logits=True)
    t = tiny.trunk()
    ref = t.prefill(prefix + suffix, logits="all")
    nv = tiny.info.n_vocab
    assert behind.tobytes() == ref[len(prefix) * nv:].tobytes()
    # serving: a fork of the cartridge's trunk gives the same logits
    ct = c.trunk()
    assert len(ct) == 6
    f = ct.fork()
    out = f.feed(suffix, logits="all")
    assert out.tobytes() == behind.tobytes()


def test_train_save_load(tiny, tmp_path):
    c = deg.Cartridge.from_tokens(tiny, [1, 2, 3, 4, 5, 6, 7, 8])
    ids = [10, 20, 30, 40, 50, 60]
    teacher = tiny.trunk()
    rows = teacher.prefill([100, 101, 102] + ids, logits="all")
    nv = tiny.info.n_vocab
    targets = []
    for pos in range(1, len(ids)):
        r = 3 + pos - 1
        targets += deg.targets_from_logits(tiny, rows[r * nv:(r + 1) * nv], pos)
    assert all(isinstance(t, deg.DistillTarget) for t in targets)
    sink_before = c.rows(0)[0][:tiny.info.n_head_kv * tiny.info.head_dim]
    l0 = c.eval(ids, targets)
    for _ in range(20):
        loss = c.train_step(ids, targets, lr=1e-2)
        assert math.isfinite(loss)
    assert c.steps == 20
    assert c.eval(ids, targets) < l0
    assert c.rows(0)[0][:len(sink_before)] == sink_before
    p = tmp_path / "c.safetensors"
    c.save(p)
    d = deg.Cartridge.load(tiny, p)
    assert d.steps == 20 and len(d) == 8
    assert d.rows(1) == c.rows(1)
    # resumed training is identical (moments restored)
    c.train_step(ids, targets, lr=1e-2)
    d.train_step(ids, targets, lr=1e-2)
    assert d.rows(0) == c.rows(0)
    other = deg.load_model(ROOT / "tests" / "goldens" / "tiny-llama")
    with pytest.raises(deg.MismatchError):
        deg.Cartridge.load(other, p)
    other.close()


def test_errors(tiny, tmp_path):
    with pytest.raises(deg.ArgumentError):
        deg.Cartridge.from_tokens(tiny, [])
    with pytest.raises(deg.RangeError, match="larger than the corpus"):
        deg.Cartridge.from_corpus(tiny, "tiny", 400)
    c = deg.Cartridge.random_vectors(tiny, 4, seed=3)
    with pytest.raises(deg.RangeError):
        c.backward([1, 2, 3], [(3, 1, -0.5)])
    k, v = c.rows(1)
    k[5] = float("nan")
    c.set_rows(1, k)
    with pytest.raises(deg.NumericError):
        c.train_step([1, 2, 3], [(1, 1, -0.5)])
    with pytest.raises(deg.NumericError):
        c.save(tmp_path / "nan.safetensors")
    assert not (tmp_path / "nan.safetensors").exists()
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"garbage")
    with pytest.raises(deg.FormatError):
        deg.Cartridge.load(tiny, bad)


def test_hybrid_state():
    """A hybrid's cartridge (tiny lfm2): the equivalence gate, the recurrent
    layers' states through Python, training moves them, save/load keeps them;
    rows of a recurrent layer / state of an attention layer are refused."""
    m = deg.load_model(ROOT / "tests" / "goldens" / "tiny-lfm2")
    prefix, suffix = [3, 14, 15, 92, 65, 35], [89, 79, 32, 38]
    c = deg.Cartridge.from_tokens(m, prefix)
    _, behind = c.eval(suffix, logits=True)
    ref = m.trunk().prefill(prefix + suffix, logits="all")
    assert behind.tobytes() == ref[len(prefix) * m.info.n_vocab:].tobytes()
    kinds = [c.state_len(il) for il in range(m.info.n_layer)]
    rec = kinds.index(max(kinds))
    att = kinds.index(0)
    assert kinds[rec] > 0
    s0 = c.state(rec)
    assert len(s0) == kinds[rec] and any(x != 0 for x in s0)
    with pytest.raises(deg.ArgumentError):
        c.rows(rec)
    with pytest.raises(deg.ArgumentError):
        c.state(att)
    with pytest.raises(deg.ArgumentError):
        c.set_state(rec, [0.0])
    targets = [deg.DistillTarget(1, 40, -0.5), deg.DistillTarget(3, 7, -0.1)]
    c.train_step(suffix, targets, lr=1e-2)
    assert c.state(rec) != s0
    c.set_state(rec, s0)
    assert c.state(rec) == s0
    assert math.isfinite(c.eval(suffix, targets))
    del c
    m.close()


def test_gemma4_rows_per_layer():
    """Gemma 4 (tiny-gemma4-kvshare): each layer's rows have its own geometry
    (row_len: sliding 2 x 16, full 2 x 32, none on the KV-sharing layers),
    rows()/set_rows() size by it, and a served cartridge whose prefix runs past
    the sliding window (6) gives the real prefill's logits bitwise, through
    serving and through the training forward (eval)."""
    m = deg.load_model(ROOT / "tests" / "goldens" / "tiny-gemma4-kvshare")
    prefix, suffix = [(i * 37 + 11) % 512 for i in range(20)], [89, 79, 32, 38]
    c = deg.Cartridge.from_tokens(m, prefix)
    assert [c.row_len(il) for il in range(m.info.n_layer)] == [32, 64, 0, 0]
    k, v = c.rows(1)
    assert len(k) == len(v) == 20 * 64
    c.set_rows(1, k, v)
    with pytest.raises(deg.ArgumentError):
        c.set_rows(0, k)  # layer 0's rows are 20 x 32 floats
    ref = m.trunk().prefill(prefix + suffix, logits="all")
    f = c.trunk().fork()
    got = f.feed(suffix, logits="all")
    nv = m.info.n_vocab
    assert got.tobytes() == ref[len(prefix) * nv:].tobytes()
    _, ev = c.eval(suffix, logits=True)
    assert ev.tobytes() == ref[len(prefix) * nv:].tobytes()
