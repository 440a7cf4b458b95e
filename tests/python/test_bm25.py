"""deg.bm25 (the fleet index's lexical half) against the bm25s package's
Lucene BM25 (tests/goldens/gen_bm25.py), the word rule, and bad input."""
import json
from pathlib import Path

import pytest

from deg.bm25 import BM25, words

GOLDEN = Path(__file__).resolve().parents[1] / "goldens" / "bm25" / "scores.json"


def test_scores_match_bm25s_lucene():
    g = json.loads(GOLDEN.read_text())
    index = BM25(g["texts"])
    for case in g["cases"]:
        got = index.scores(case["query"])
        assert len(got) == len(g["texts"])
        for a, b in zip(got, case["scores"]):   # bm25s computes in f32
            assert a == pytest.approx(b, rel=2e-6, abs=1e-6), case["query"]
    # the golden is not trivial: matches, misses and a partial match
    assert any(s > 0 for s in g["cases"][0]["scores"]) and all(
        s == 0 for s in g["cases"][-1]["scores"])


def test_words_and_repeats():
    assert words("Why use man-db instead of man? HTTP/1.1, Wget's") == \
        ["use", "man", "db", "instead", "man", "http", "1", "1", "wget", "s"]
    index = BM25(["alpha beta", "beta gamma gamma", "delta"])
    one, two = index.scores("gamma"), index.scores("gamma gamma")
    assert one[1] > 0 and two[1] == pytest.approx(2 * one[1])   # a repeated query word counts
    assert one[0] == one[2] == 0.0
    assert BM25([]).scores("x") == [] and BM25([""]).scores("x") == [0.0]


def test_bad_parameters():
    with pytest.raises(ValueError, match="k1"):
        BM25(["a"], k1=-1)
    with pytest.raises(ValueError, match="b"):
        BM25(["a"], b=1.5)
