#!/usr/bin/env python3
"""Goldens for deg.bm25 (the fleet index's lexical half): BM25 scores of a
few queries over a small collection as the `bm25s` package computes them
(method="lucene", k1=1.2, b=0.75), an implementation independent of deg's.

The words of a text are deg.bm25's rule, restated here: maximal runs of
ASCII letters and digits of the lower-cased text, minus STOP. Queries have
no repeated word (bm25s scores a query's distinct words).

Usage: python tests/goldens/gen_bm25.py (needs `pip install bm25s==0.3.11`).
Writes tests/goldens/bm25/scores.json.
"""
import json
import os
import re

import bm25s

HERE = os.path.dirname(os.path.abspath(__file__))
STOP = set(
    "a an and are as at be by can did do does for from how i in is it its me my no not of "
    "on or that the their them there they this to was were what when where which who whom "
    "why with you your".split())
TEXTS = [
    "The lighthouse keeper logs the weather every evening at six; the log is kept for years.",
    "Sourdough needs a starter fed with flour and water each day. Flour, water, salt.",
    "A binary search halves the interval at every comparison it makes.",
    "Glaciers carve valleys shaped like the letter U over millennia.",
    "man-db uses gettext; man uses the obsolete catgets system for translations.",
    "Wget supports HTTP, HTTPS and FTP, and retries until the whole file is retrieved.",
    "The keeper's weather log: 6 pm, wind NW 20 knots, visibility 3 miles.",
]
QUERIES = [
    "What does the keeper log every evening?",
    "how much flour and water does the starter need",
    "Which translation system does man-db use?",
    "Does Wget retry a failed FTP download?",
    "binary interval comparison",
    "nothing here matches zebra",
]


def words(text):
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP]


def main():
    model = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    model.index([words(t) for t in TEXTS], show_progress=False)
    cases = []
    for q in QUERIES:
        w = words(q)
        assert len(set(w)) == len(w), q
        known = [x for x in w if x in model.vocab_dict]
        scores = model.get_scores(known) if known else [0.0] * len(TEXTS)
        cases.append({"query": q, "scores": [float(s) for s in scores]})
    out = {"source": f"bm25s {bm25s.__version__}, method=lucene, k1=1.2, b=0.75",
           "texts": TEXTS, "cases": cases}
    with open(os.path.join(HERE, "bm25", "scores.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
