"""Self-study on the hybrid backbones and on Gemma 4 (issue 18), tiny random models:
training runs on lfm2 / qwen3_5 and moves the cartridge's recurrent states as well
as its K/V rows, evaluation runs, composition is refused naming why (a recurrent
state summarises one whole prefix); on Gemma 4 (per-layer row widths, KV-sharing
layers without rows of their own) training moves the rows and its cartridges
serve."""
import importlib
import math
from pathlib import Path

import pytest

import deg
from conftest import needs

ROOT = Path(__file__).resolve().parents[2]
GOLDENS = ROOT / "tests" / "goldens"
pytestmark = needs("deg_cartridge_init_tokens", "deg_cartridge_state_len")

# the self-study module (deg.selfstudy; deg.cartridges before its rename)
try:
    ss = importlib.import_module("deg.selfstudy")
except ImportError:
    ss = importlib.import_module("deg.cartridges")

DOC = ("The zlib library compresses data. It was written by Jean-loup Gailly and Mark "
       "Adler in 1995. The deflate format combines LZ77 and Huffman coding. ") * 6


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    p = tmp_path_factory.mktemp("ss") / "doc.txt"
    p.write_text(DOC)
    return p


@pytest.mark.parametrize("name", ["tiny-lfm2", "tiny-qwen3_5"])
def test_selfstudy_trains_a_hybrid(doc, name):
    m = deg.load_model(GOLDENS / name)
    corpus = ss.load_corpus(m, [doc])
    init = deg.Cartridge.from_corpus(m, corpus.text, 16)
    rec = [il for il in range(m.info.n_layer) if init.state_len(il)]
    att = [il for il in range(m.info.n_layer) if init.row_len(il)]
    assert rec and att
    r = ss.train(m, corpus, p=16, steps=2, accum=1, seed=1, chunk_min=32, chunk_max=64,
                 max_q=8, max_a=8)
    assert r.steps == 2 and all(math.isfinite(x) for x in r.losses)
    c = r.cartridge
    assert any(c.state(il).tobytes() != init.state(il).tobytes() for il in rec)
    assert any(c.rows(il)[0].tobytes() != init.rows(il)[0].tobytes() for il in att)
    ev = ss.evaluate(c, corpus, ss.heldout_set(m, corpus, 3, 2))
    assert math.isfinite(ev.nll_cartridge) and math.isfinite(ev.nll_bare)
    with pytest.raises(deg.UnsupportedError, match="recurrent state summarises one whole"):
        ss.ask(m, "Who wrote zlib?", cartridge=[c, c], max_tokens=4)


@pytest.mark.parametrize("name", ["tiny-gemma4", "tiny-gemma4-kvshare"])
def test_selfstudy_trains_gemma4(doc, name):
    m = deg.load_model(GOLDENS / name)
    corpus = ss.load_corpus(m, [doc])
    init = deg.Cartridge.from_corpus(m, corpus.text, 16)
    att = [il for il in range(m.info.n_layer) if init.row_len(il)]
    r = ss.train(m, corpus, p=16, steps=2, accum=1, seed=1, chunk_min=32, chunk_max=64,
                 max_q=8, max_a=8)
    assert r.steps == 2 and all(math.isfinite(x) for x in r.losses)
    c = r.cartridge
    assert all(c.rows(il)[0].tobytes() != init.rows(il)[0].tobytes() for il in att)
    ev = ss.evaluate(c, corpus, ss.heldout_set(m, corpus, 3, 2))
    assert math.isfinite(ev.nll_cartridge) and math.isfinite(ev.nll_bare)
    assert ss.ask(m, "Who wrote zlib?", cartridge=c, max_tokens=4) is not None
