"""deg.load(model=...) over an already loaded deg.Model (deg_ckpt_open): fills equal
the owning checkpoint's, the model is borrowed (closing the checkpoint leaves it
usable; closing the model first closes the checkpoint), a cartridge shares the
same model, null_margin default, ckpt_backbone_path, mismatch."""
import os

import pytest

import deg
from conftest import ROOT, needs

pytestmark = needs("deg_ckpt_open", "deg_ckpt_backbone_path")

GOLDENS = ROOT / "tests" / "goldens"
CONTEXT = "Order 4711 from ann@example.com, placed on 5 March 2026, total $12.50."
SCHEMA = {"type": "object", "properties": {
    "email": {"type": ["string", "null"], "format": "email"},
    "placed": {"type": ["string", "null"], "format": "date"},
    "total": {"type": ["number", "null"]},
    "urgent": {"type": "boolean"},
    "team": {"enum": ["billing", "tech"]}}}


@pytest.fixture(scope="module")
def ckdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("ck-shared")
    deg.create_random_checkpoint(GOLDENS / "tiny-llama", d, seed=5)
    return d


def test_shared_model_fill_equals_owning_checkpoint(ckdir):
    with deg.load(ckdir) as own:
        want = deg.fill(CONTEXT, SCHEMA, model=own)
    m = deg.load_model(GOLDENS / "tiny-llama")
    a = deg.load(ckdir, model=m)
    b = deg.load(ckdir, model=m)
    assert a.model is m and b.model is m
    assert deg.fill(CONTEXT, SCHEMA, model=a) == want
    cart = deg.Cartridge.random_vectors(m, 4, seed=1)
    a.close()
    assert deg.fill(CONTEXT, SCHEMA, model=b) == want   # the model outlived a
    with cart.trunk() as t:
        assert len(t) == 4
    m.close()                                            # closes b (and the cartridge) first
    assert b.closed and cart.closed
    with pytest.raises(deg.StateError):
        deg.fill(CONTEXT, SCHEMA, model=b)


def test_null_margin_default(ckdir):
    m = deg.load_model(GOLDENS / "tiny-llama")
    try:
        with deg.load(ckdir, model=m, null_margin=50.0) as k, deg.load(ckdir, model=m) as plain:
            dflt = deg.fill(CONTEXT, SCHEMA, model=k)
            assert dflt == deg.fill(CONTEXT, SCHEMA, model=plain, options={"null_margin": 50.0})
            assert dflt["value"]["email"] is None
            assert deg.fill(CONTEXT, SCHEMA, model=k, options={"null_margin": 0}) == \
                deg.fill(CONTEXT, SCHEMA, model=plain)
        with pytest.raises(deg.ArgumentError):
            deg.load(ckdir, model=m, null_margin=float("inf"))
    finally:
        m.close()


def test_backbone_path_mismatch_and_arguments(ckdir):
    assert deg.ckpt_backbone_path(ckdir) == os.path.realpath(GOLDENS / "tiny-llama")
    with pytest.raises(deg.DegIOError):
        deg.ckpt_backbone_path(ckdir / "missing")
    other = deg.load_model(GOLDENS / "tiny-qwen3")
    try:
        with pytest.raises(deg.MismatchError, match="SHA-256"):
            deg.load(ckdir, model=other)
        assert other.info.arch == "qwen3"                # untouched by the failed load
        with pytest.raises(deg.ArgumentError):
            deg.load(ckdir, model=other, model_path=GOLDENS / "tiny-qwen3")
    finally:
        other.close()
    with pytest.raises(deg.ArgumentError):
        deg.load(ckdir, model="not a model")
